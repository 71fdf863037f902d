//! TLS in the reactor: which listeners speak it (`--ssl`: all; `--ssl-listen`: the extra ones),
//! a session for each connection they accept, the handshake's deadline and outcome (counted
//! for /metrics, the peer certificate's name made the connection's identity), and the
//! certificate files re-read on SIGHUP. The transport (conn/transport.rs) runs the session; the
//! codec and the engine never see TLS.

use std::collections::BTreeMap;

use log::info;

use super::conn::Conns;
use super::conn::transport::TlsSession;
use super::deadlines::{Deadline, Deadlines};
use crate::config::Config;
use crate::engine::ConnId;
use crate::http::metrics::TlsStats;
use crate::log_budget::Cause;
use crate::peer_log;
use crate::peer_text::shown;
use crate::timer::TimerKey;

/// The server's TLS configuration as loaded at start: `load` reads the files, so that a
/// missing or bad one stops the start with a clear error.
pub struct TlsSetup {
    #[cfg(feature = "tls")]
    server: Option<crate::tls::ServerTls>,
}

impl TlsSetup {
    /// Read the certificate, key and CA files that `config` names (nothing without TLS).
    pub fn load(config: &Config) -> Result<TlsSetup, String> {
        #[cfg(feature = "tls")]
        {
            let server = match &config.tls {
                Some(t) => Some(crate::tls::ServerTls::load(crate::tls::TlsFiles {
                    certificate: t.certificate.clone(),
                    key: t.key.clone(),
                    ca_file: t.ca_file.clone(),
                })?),
                None => None,
            };
            Ok(TlsSetup { server })
        }
        #[cfg(not(feature = "tls"))]
        match &config.tls {
            // Config refuses the flags in such a build; this is the same answer.
            Some(_) => Err("this gearwheel was built without TLS (cargo feature tls)".into()),
            None => Ok(TlsSetup {}),
        }
    }
}

/// TLS state shared by the loop: the configuration and what the handshakes did.
pub(super) struct TlsGlue {
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    setup: TlsSetup,
    /// `--ssl`: every listener, Gearman and HTTP.
    everywhere: bool,
    /// Gearman listeners from this index on are `--ssl-listen` ones.
    pub(super) first_tls_listener: usize,
    /// `--ssl-ca-file` was given.
    client_certificates: bool,
    handshake_timeout_ms: u64,
    completed: u64,
    failed: BTreeMap<&'static str, u64>,
    timeouts: u64,
}

impl TlsGlue {
    pub(super) fn new(config: &Config, setup: TlsSetup) -> TlsGlue {
        let tls = config.tls.as_ref();
        TlsGlue {
            setup,
            everywhere: tls.is_some_and(|t| t.everywhere),
            first_tls_listener: config.listen.len(),
            client_certificates: tls.is_some_and(|t| t.ca_file.is_some()),
            handshake_timeout_ms: tls.map_or(0, |t| t.handshake_timeout.as_millis() as u64),
            completed: 0,
            failed: BTreeMap::new(),
            timeouts: 0,
        }
    }

    /// Does Gearman listener `li` (or an HTTP one) speak TLS?
    pub(super) fn listener_is_tls(&self, li: usize, http: bool) -> bool {
        self.everywhere || (!http && li >= self.first_tls_listener)
    }

    /// `--ssl`: the HTTP listeners speak TLS too.
    pub(super) fn https(&self) -> bool {
        self.everywhere
    }

    /// `--ssl-ca-file`: the TLS listeners authenticate their peers by a client certificate.
    pub(super) fn asks_client_certificate(&self) -> bool {
        self.client_certificates
    }
}

impl TlsGlue {
    /// The TLS session for a connection accepted on listener `li` (`Ok(None)`: plaintext).
    pub(super) fn session(&self, li: usize, http: bool) -> Result<Option<TlsSession>, String> {
        if !self.listener_is_tls(li, http) {
            return Ok(None);
        }
        #[cfg(feature = "tls")]
        {
            let server = self.setup.server.as_ref().ok_or("TLS is not configured")?;
            Ok(Some(crate::tls::TlsStream::new(server.accept()?)))
        }
        #[cfg(not(feature = "tls"))]
        Err("this gearwheel was built without TLS".into())
    }

    /// A TLS connection was accepted at slot `idx`: its handshake must end in time.
    pub(super) fn accepted(
        &self,
        conns: &mut Conns,
        deadlines: &mut Deadlines,
        idx: usize,
        now: u64,
    ) {
        let at = now.saturating_add(self.handshake_timeout_ms);
        if let Some(c) = conns.slab.get_mut(idx) {
            let key = deadlines.arm(at, Deadline::TlsHandshake(c.id));
            c.set_handshake_deadline(Some(key));
        }
    }

    /// After a read of TLS connection `idx` and `handshake_check`: the handshake ended
    /// badly (counted and logged), or records the session made (handshake messages, session
    /// tickets) go out.
    pub(super) fn after_read(
        &mut self,
        conns: &mut Conns,
        deadlines: &mut Deadlines,
        idx: usize,
        now: u64,
    ) {
        let Some(c) = conns.slab.get_mut(idx) else {
            return;
        };
        if let Some(key) = c.handshake_deadline().filter(|_| !c.serving()) {
            c.set_handshake_deadline(None);
            deadlines.cancel(key);
            let reason = c.tls_failure().unwrap_or("closed");
            *self.failed.entry(reason).or_default() += 1;
            let why = c.tls_refusal().map_or(String::new(), |w| format!(": {w}"));
            peer_log!(
                now,
                Cause::Tls,
                Warn,
                "connection {idx} from {}: TLS handshake failed ({reason}){why}; closed",
                c.peer()
            );
            return;
        }
        if c.serving() && c.has_unsent() && !c.write_pending {
            c.write_pending = true;
            conns.pending_writes.push(idx);
        }
    }

    /// Right after a read, before what came is served: if the handshake just ended, the
    /// client certificate's name becomes the connection's identity (the gate sees it for the
    /// first request already, which a TLS 1.3 client sends with its Finished). `true` when
    /// it just ended: the gate's protected mode judges the peer next.
    pub(super) fn handshake_check(
        &mut self,
        conns: &mut Conns,
        deadlines: &mut Deadlines,
        idx: usize,
    ) -> bool {
        let Some(c) = conns.slab.get_mut(idx) else {
            return false;
        };
        let Some(key) = c.handshake_deadline().filter(|_| !c.handshaking()) else {
            return false;
        };
        c.set_handshake_deadline(None);
        deadlines.cancel(key);
        self.completed += 1;
        let name = c.peer_name().map(str::to_string);
        info!(
            "connection {idx} from {}: TLS handshake done{}",
            c.peer(),
            name.as_deref().map_or(String::new(), |n| format!(
                ", client certificate \"{}\"",
                shown(n)
            ))
        );
        if let Some(n) = name {
            c.name_peer(crate::access::Identity::Cn(n));
        }
        true
    }

    /// A TLS handshake's deadline passed: close the connection if it is still at it.
    pub(super) fn deadline(&mut self, conns: &mut Conns, key: TimerKey, id: ConnId, now: u64) {
        let idx = id.index as usize;
        let Some(c) = conns.slab.get_mut(idx).filter(|c| c.id == id) else {
            return;
        };
        if c.handshake_deadline() != Some(key) {
            return;
        }
        c.set_handshake_deadline(None);
        self.timeouts += 1;
        peer_log!(
            now,
            Cause::Tls,
            Warn,
            "connection {idx} from {}: no TLS handshake within {} ms (--ssl-handshake-timeout); closed",
            c.peer(),
            self.handshake_timeout_ms
        );
        conns.mark_close(idx);
    }

    /// SIGHUP: read the certificate, key and CA files again. New connections get the new
    /// certificate; a bad file keeps the old one, and the log says why.
    pub(super) fn reload(&mut self) {
        #[cfg(feature = "tls")]
        if let Some(server) = self.setup.server.as_mut() {
            match server.reload() {
                Ok(()) => crate::notice!("SIGHUP: TLS certificate, key and CA files read again"),
                Err(e) => log::error!(
                    "SIGHUP: TLS files not reloaded, the current certificate stays: {e}"
                ),
            }
        }
    }

    /// The TLS numbers for /metrics (`None` without TLS: `configured` is `--ssl`'s).
    pub(super) fn stats(&self, conns: &Conns, configured: bool) -> Option<TlsStats> {
        if !configured {
            return None;
        }
        Some(TlsStats {
            connections: conns.slab.iter().filter(|(_, c)| c.is_tls()).count() as u64,
            handshakes: self.completed,
            failures: self.failed.iter().map(|(r, n)| (*r, *n)).collect(),
            timeouts: self.timeouts,
        })
    }
}
