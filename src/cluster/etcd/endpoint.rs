//! etcd endpoints and cluster names as the flags give them: `--etcd URL[,...]` (each flag may
//! list several; `http://` or `https://`) and `--cluster NAME`, checked in one place for
//! `serve` and `schedules push/show`.

/// The `--etcd` URLs: each one's `host:port` and whether they speak TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// `host:port` of each URL, in order (the Host header and the address to dial).
    pub hosts: Vec<String>,
    /// `https://`: TLS to every one of them.
    pub tls: bool,
}

/// The `--etcd` values as `Endpoints`: `http://HOST:PORT` or `https://HOST:PORT` (a missing
/// port is etcd's 2379), all with the same scheme. A mixed list is refused: the members of
/// one etcd cluster serve clients one way, so a mix is a typing slip that would send the
/// cluster's traffic in clear to some of them.
pub fn endpoints(values: &[String]) -> Result<Endpoints, String> {
    let mut out = Vec::new();
    let mut scheme: Option<bool> = None;
    for u in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if u.is_empty() {
            continue;
        }
        let (tls, rest) = match (u.strip_prefix("http://"), u.strip_prefix("https://")) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => {
                return Err(format!(
                    "--etcd {u:?}: use http://HOST:PORT or https://HOST:PORT"
                ));
            }
        };
        if scheme.is_some_and(|s| s != tls) {
            return Err(format!(
                "--etcd {u:?}: every etcd URL must use the same scheme (all http:// or all https://)"
            ));
        }
        scheme = Some(tls);
        let hostport = rest.trim_end_matches('/');
        if hostport.is_empty() || hostport.contains(['/', '?', '#', '@']) {
            return Err(format!(
                "--etcd {u:?}: use HOST:PORT after the scheme, without a path"
            ));
        }
        let has_port = match hostport.rsplit_once(':') {
            Some((host, port)) => {
                if port.parse::<u16>().is_err() && !host.starts_with('[') {
                    return Err(format!("--etcd {u:?}: the port is not a number"));
                }
                !hostport.starts_with('[') || host.ends_with(']')
            }
            None => false,
        };
        out.push(if has_port {
            hostport.to_string()
        } else {
            format!("{hostport}:2379")
        });
    }
    if out.is_empty() {
        return Err("--etcd: no URL given".into());
    }
    Ok(Endpoints {
        hosts: out,
        tls: scheme == Some(true),
    })
}

/// The host of a `host:port` endpoint, without IPv6 brackets: the name etcd's certificate
/// must carry (a DNS name or an IP address).
pub fn host_name(hostport: &str) -> &str {
    let host = hostport.rsplit_once(':').map_or(hostport, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// A cluster name: 1 to 64 letters, digits, '-', '_' or '.', so that it is one key segment.
pub fn check_cluster_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return Err(format!(
            "--cluster {name:?}: 1 to 64 letters, digits, '-', '_' or '.'"
        ));
    }
    Ok(())
}

/// The prefix of every key of cluster `name`: `gearwheel/{name}/`.
pub fn prefix(name: &str) -> String {
    format!("gearwheel/{name}/")
}

/// Where `gearwheel schedules push` stores the schedules file of cluster `name`.
pub fn schedules_key(name: &str) -> Vec<u8> {
    format!("{}schedules", prefix(name)).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn urls_become_host_ports() {
        let e = endpoints(&v(&[
            "http://a:1,http://b:2/",
            "http://c",
            "http://[::1]:5",
        ]))
        .unwrap();
        assert_eq!(e.hosts, ["a:1", "b:2", "c:2379", "[::1]:5"]);
        assert!(!e.tls);
        assert_eq!(
            endpoints(&v(&["http://[::1]"])).unwrap().hosts,
            ["[::1]:2379"]
        );
        let e = endpoints(&v(&["https://a:1", "https://[::1]"])).unwrap();
        assert_eq!(e.hosts, ["a:1", "[::1]:2379"]);
        assert!(e.tls);
        assert_eq!(host_name("a.example:1"), "a.example");
        assert_eq!(host_name("[::1]:2379"), "::1");
        assert_eq!(host_name("127.0.0.1:2379"), "127.0.0.1");
    }

    #[test]
    fn a_mixed_list_is_refused() {
        let e = endpoints(&v(&["http://a:1,https://b:2"])).unwrap_err();
        assert!(e.contains("same scheme"), "{e}");
        let e = endpoints(&v(&["https://a:1", "http://b:2"])).unwrap_err();
        assert!(e.contains("same scheme"), "{e}");
    }

    #[test]
    fn other_urls_are_refused_with_the_flag_named() {
        for bad in [
            "ftp://a:1",
            "https://",
            "a:1",
            "http://a:1/v3",
            "http://",
            "http://a:x",
        ] {
            let e = endpoints(&v(&[bad])).unwrap_err();
            assert!(e.starts_with("--etcd"), "{bad}: {e}");
        }
        assert!(endpoints(&v(&[" , "])).is_err());
    }

    #[test]
    fn cluster_names_are_one_key_segment() {
        assert!(check_cluster_name("prod-1.eu_west").is_ok());
        for bad in ["", "a/b", "a b", &"x".repeat(65)] {
            assert!(check_cluster_name(bad).is_err(), "{bad}");
        }
        assert_eq!(schedules_key("gearwheel"), b"gearwheel/gearwheel/schedules");
    }
}
