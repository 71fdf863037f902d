//! Who may ask the HTTP listener: a request must name a host the server answers to (so that DNS
//! rebinding cannot turn a web page's own origin into this server) and must not come from a
//! browser on another site (so that a page cannot make its visitor's browser submit jobs or read
//! `/status`). curl and scripts send neither `Origin` nor `Sec-Fetch-Site` and name the address
//! they connect to, so they pass unchanged. Pure: the reactor passes the headers and addresses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::parse::SiteHeaders;

/// The hosts the HTTP listener answers to.
#[derive(Clone, Debug, Default)]
pub struct Allowed {
    /// The listeners' addresses.
    ips: Vec<IpAddr>,
    /// A listener on `0.0.0.0` or `::` answers on every local address, and only a name can be
    /// rebound: any address literal is accepted then.
    any_ip: bool,
    /// Lowercase, without a trailing dot.
    names: Vec<String>,
}

impl Allowed {
    /// The listeners' addresses and the configured names (`--http-allowed-host`, the machine's
    /// name); `localhost` too when a listener is on loopback or on every address.
    pub fn new(listen: &[SocketAddr], names: &[String]) -> Allowed {
        let ips: Vec<IpAddr> = listen.iter().map(|a| a.ip().to_canonical()).collect();
        let any_ip = ips.iter().any(IpAddr::is_unspecified);
        let mut names: Vec<String> = names.iter().filter_map(|n| normal_name(n)).collect();
        if any_ip || ips.iter().any(IpAddr::is_loopback) {
            names.push("localhost".into());
        }
        names.sort();
        names.dedup();
        Allowed { ips, any_ip, names }
    }

    fn answers_to(&self, host: &Host) -> bool {
        match host {
            Host::Ip(ip) => self.any_ip || self.ips.contains(ip),
            Host::Name(n) => self.names.iter().any(|m| m == n),
        }
    }
}

/// Why a request was refused (403).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `Host` names neither a listen address nor an allowed name.
    Host,
    /// `Sec-Fetch-Site` says another site (or another origin of this one) sent it.
    CrossSite,
    /// `Origin` is not the server's own.
    Origin,
}

impl Refusal {
    pub const ALL: [Refusal; 3] = [Refusal::Host, Refusal::CrossSite, Refusal::Origin];

    /// The `reason` label of `gearman_http_refused_total`.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Host => "host",
            Refusal::CrossSite => "cross_site",
            Refusal::Origin => "origin",
        }
    }

    /// The 403 body.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Host => {
                "forbidden: the Host header names no address or name this server answers to (see --http-allowed-host)"
            }
            Refusal::CrossSite => "forbidden: a browser request from another site",
            Refusal::Origin => "forbidden: a browser request from another origin",
        }
    }
}

/// Check one request's headers.
pub fn check(allowed: &Allowed, site: &SiteHeaders) -> Result<(), Refusal> {
    // No Host at all: an HTTP/1.0 script; a browser always sends one.
    let host = match &site.host {
        None => None,
        Some(h) => Some(
            authority(h)
                .filter(|a| allowed.answers_to(&a.host))
                .ok_or(Refusal::Host)?,
        ),
    };
    if let Some(s) = &site.sec_fetch_site {
        // `none` is a URL typed in or a bookmark; `same-site` is still another origin (another
        // port of the same host, say) and as able to forge a request as any other page.
        if !(s.eq_ignore_ascii_case(b"same-origin") || s.eq_ignore_ascii_case(b"none")) {
            return Err(Refusal::CrossSite);
        }
    }
    if let Some(o) = &site.origin {
        let own = match (host, origin(o)) {
            (Some(h), Some((oh, oport))) => h.host == oh && h.port.unwrap_or(80) == oport,
            _ => false,
        };
        if !own {
            return Err(Refusal::Origin);
        }
    }
    Ok(())
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Host {
    Ip(IpAddr),
    Name(String),
}

#[derive(Debug)]
struct Authority {
    host: Host,
    port: Option<u16>,
}

/// `host[:port]`, `[v6][:port]`; `None` for anything else.
fn authority(b: &[u8]) -> Option<Authority> {
    let s = std::str::from_utf8(b).ok()?;
    if let Some(rest) = s.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        let ip: Ipv6Addr = ip.parse().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse().ok()?),
        };
        return Some(Authority {
            host: Host::Ip(IpAddr::V6(ip).to_canonical()),
            port,
        });
    }
    let (name, port) = match s.rsplit_once(':') {
        Some((n, p)) => (n, Some(p.parse().ok()?)),
        None => (s, None),
    };
    let host = match name.parse::<Ipv4Addr>() {
        Ok(ip) => Host::Ip(IpAddr::V4(ip)),
        Err(_) => Host::Name(normal_name(name)?),
    };
    Some(Authority { host, port })
}

/// An `Origin` value: its host and port (the scheme's default when none is given).
fn origin(b: &[u8]) -> Option<(Host, u16)> {
    let s = std::str::from_utf8(b).ok()?;
    let (scheme, rest) = s.split_once("://")?;
    let default = if scheme.eq_ignore_ascii_case("http") {
        80
    } else if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        return None;
    };
    let a = authority(rest.as_bytes())?;
    Some((a.host, a.port.unwrap_or(default)))
}

/// A host name in lowercase without its trailing dot; `None` if it is not one.
pub fn normal_name(n: &str) -> Option<String> {
    let n = n.strip_suffix('.').unwrap_or(n);
    let ok = !n.is_empty()
        && n.len() <= 253
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    ok.then(|| n.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(host: Option<&str>, origin: Option<&str>, fetch: Option<&str>) -> SiteHeaders {
        SiteHeaders {
            host: host.map(|s| s.as_bytes().to_vec()),
            origin: origin.map(|s| s.as_bytes().to_vec()),
            sec_fetch_site: fetch.map(|s| s.as_bytes().to_vec()),
            console: false,
        }
    }

    fn loopback() -> Allowed {
        Allowed::new(
            &[
                "127.0.0.1:8080".parse().unwrap(),
                "[::1]:8080".parse().unwrap(),
            ],
            &["Gear.Example.".to_string()],
        )
    }

    #[test]
    fn scripts_and_curl_pass() {
        let a = loopback();
        for host in [
            None,
            Some("127.0.0.1:8080"),
            Some("127.0.0.1"),
            Some("[::1]:8080"),
            Some("localhost:8080"),
            Some("LOCALHOST"),
            Some("gear.example:8080"),
            Some("gear.example."),
        ] {
            assert_eq!(check(&a, &site(host, None, None)), Ok(()), "{host:?}");
        }
    }

    #[test]
    fn a_rebound_or_foreign_host_is_refused() {
        let a = loopback();
        for host in [
            "evil.example:8080",
            "10.0.0.1:8080",
            "",
            "127.0.0.1:notaport",
            "::1",
            "[::1",
            "a b",
            "127.0.0.1:8080:1",
        ] {
            assert_eq!(
                check(&a, &site(Some(host), None, None)),
                Err(Refusal::Host),
                "{host:?}"
            );
        }
        // Not UTF-8.
        let bad = SiteHeaders {
            host: Some(vec![0xff, b'a']),
            ..SiteHeaders::default()
        };
        assert_eq!(check(&a, &bad), Err(Refusal::Host));
    }

    #[test]
    fn a_listener_on_every_address_takes_any_address_literal_but_not_any_name() {
        let a = Allowed::new(&["0.0.0.0:8080".parse().unwrap()], &[]);
        assert_eq!(check(&a, &site(Some("192.0.2.7:8080"), None, None)), Ok(()));
        assert_eq!(check(&a, &site(Some("localhost"), None, None)), Ok(()));
        assert_eq!(
            check(&a, &site(Some("rebound.example"), None, None)),
            Err(Refusal::Host)
        );
        // A listener on one other address does not take localhost.
        let a = Allowed::new(&["192.0.2.7:8080".parse().unwrap()], &[]);
        assert_eq!(check(&a, &site(Some("192.0.2.7"), None, None)), Ok(()));
        assert_eq!(
            check(&a, &site(Some("localhost"), None, None)),
            Err(Refusal::Host)
        );
    }

    #[test]
    fn browsers_pass_from_the_servers_own_origin_only() {
        let a = loopback();
        let h = Some("127.0.0.1:8080");
        for fetch in ["same-origin", "none", "Same-Origin"] {
            assert_eq!(check(&a, &site(h, None, Some(fetch))), Ok(()), "{fetch}");
        }
        for fetch in ["cross-site", "same-site", "bogus"] {
            assert_eq!(
                check(&a, &site(h, None, Some(fetch))),
                Err(Refusal::CrossSite),
                "{fetch}"
            );
        }
        assert_eq!(
            check(
                &a,
                &site(h, Some("http://127.0.0.1:8080"), Some("same-origin"))
            ),
            Ok(())
        );
        assert_eq!(
            check(
                &a,
                &site(Some("localhost"), Some("http://LOCALHOST:80"), None)
            ),
            Ok(())
        );
        // The scheme is not compared: the same host and port cannot serve another one, and a
        // TLS proxy in front that passes the port on keeps working.
        assert_eq!(
            check(
                &a,
                &site(Some("gear.example:443"), Some("https://gear.example"), None)
            ),
            Ok(())
        );
        for o in [
            "http://evil.example",
            "http://127.0.0.1:3000",
            "http://127.0.0.1",
            "https://127.0.0.1",
            "null",
            "http://localhost:8080",
            "",
        ] {
            assert_eq!(
                check(&a, &site(h, Some(o), None)),
                Err(Refusal::Origin),
                "{o}"
            );
        }
        // An Origin without a Host to compare it with.
        assert_eq!(
            check(&a, &site(None, Some("http://127.0.0.1:8080"), None)),
            Err(Refusal::Origin)
        );
    }
}
