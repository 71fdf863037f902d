//! etcd endpoints and cluster names as the flags give them: `--etcd http://HOST:PORT[,...]`
//! (each flag may list several) and `--cluster NAME`, checked in one place for `serve` and
//! `schedules push`.

/// The `host:port` of each URL in the `--etcd` values, in order (the Host header and the
/// address to dial). Only plain `http://HOST:PORT` (a missing port is etcd's 2379).
pub fn endpoints(values: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for u in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if u.is_empty() {
            continue;
        }
        let Some(rest) = u.strip_prefix("http://") else {
            return Err(format!(
                "--etcd {u:?}: use http://HOST:PORT (etcd over TLS is not supported yet)"
            ));
        };
        let hostport = rest.trim_end_matches('/');
        if hostport.is_empty() || hostport.contains(['/', '?', '#', '@']) {
            return Err(format!(
                "--etcd {u:?}: use http://HOST:PORT, without a path"
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
    Ok(out)
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
        assert_eq!(
            endpoints(&v(&[
                "http://a:1,http://b:2/",
                "http://c",
                "http://[::1]:5"
            ]))
            .unwrap(),
            ["a:1", "b:2", "c:2379", "[::1]:5"]
        );
        assert_eq!(endpoints(&v(&["http://[::1]"])).unwrap(), ["[::1]:2379"]);
    }

    #[test]
    fn other_urls_are_refused_with_the_flag_named() {
        for bad in [
            "https://a:1",
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
