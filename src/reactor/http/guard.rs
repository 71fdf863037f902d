//! The HTTP listener's refusals of requests from the wrong host or a browser on another site
//! (`crate::http::guard` decides): each one is answered 403, logged and counted.

use crate::http::guard;
use crate::http::parse::SiteHeaders;
use crate::http::response::Reply;
use crate::log_budget::Cause;
use crate::peer_log;
use crate::peer_text;
use std::net::SocketAddr;

use super::HttpGlue;

impl HttpGlue {
    /// The 403 for a request the guard refuses, logged and counted; `None` to serve it.
    /// `peer` is the connection's address, for the log.
    pub(in crate::reactor) fn guard(
        &mut self,
        idx: usize,
        peer: Option<SocketAddr>,
        site: &SiteHeaders,
        now: u64,
    ) -> Option<Reply> {
        let why = guard::check(&self.allowed, site).err()?;
        self.refusals.count(why);
        let peer = peer.map_or_else(|| "?".to_string(), |a| a.ip().to_string());
        peer_log!(
            now,
            Cause::Host,
            Warn,
            "HTTP connection {idx} from {peer}: 403 ({}): Host {}, Origin {}, Sec-Fetch-Site {}",
            why.reason(),
            shown(&site.host),
            shown(&site.origin),
            shown(&site.sec_fetch_site)
        );
        Some(Reply::text(403, why.message()))
    }
}

/// A header value for the log: quoted and escaped (it is the peer's), cut short.
fn shown(v: &Option<Vec<u8>>) -> String {
    match v {
        None => "-".into(),
        Some(b) => format!("\"{}\"", peer_text::shown(b)),
    }
}
