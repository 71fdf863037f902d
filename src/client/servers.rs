//! Which servers the client commands (`work`, `submit`, `admin`) talk to, read the way the
//! Gearman tools read them: the `-s` flags; else `$GEARMAN_SERVERS` (what libgearman's
//! clients and workers read); else `$GEARMAN_SERVER` (what the `gearman` tool reads); else
//! 127.0.0.1. Lists are `HOST[:PORT],HOST[:PORT]...`. A server given without a port gets
//! `$GEARMAND_PORT` (the port `serve` listens on by default), else 4730.

use std::net::{IpAddr, SocketAddr};

use super::DEFAULT_PORT;

/// The environment variables read, in order of precedence (after `-s`).
pub const LIST_VARS: [&str; 2] = ["GEARMAN_SERVERS", "GEARMAN_SERVER"];

/// The servers to use, each with its port. `env` reads a variable (`std::env::var` in the
/// commands, a table in tests). Errors are usage errors.
pub fn servers(
    flags: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<String>, String> {
    let port = match env("GEARMAND_PORT").filter(|p| !p.trim().is_empty()) {
        None => DEFAULT_PORT,
        Some(p) => port(p.trim()).map_err(|e| format!("GEARMAND_PORT={p:?}: {e}"))?,
    };
    let (listed, from): (Vec<String>, &str) = if !flags.is_empty() {
        (flags.to_vec(), "-s")
    } else if let Some((var, v)) = LIST_VARS
        .iter()
        .find_map(|&var| env(var).filter(|v| !v.trim().is_empty()).map(|v| (var, v)))
    {
        let items: Vec<String> = v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if items.is_empty() {
            return Err(format!("{var}={v:?} names no server"));
        }
        (items, var)
    } else {
        (vec!["127.0.0.1".to_string()], "")
    };
    listed
        .iter()
        .map(|a| {
            if a.is_empty() || a.contains(char::is_whitespace) {
                return Err(format!("{from} {a:?}: not a HOST[:PORT]"));
            }
            // A port that is not one is a bad flag, said as such, not a server that cannot be
            // reached.
            if let Some(p) = port_text(a) {
                self::port(p).map_err(|e| format!("{from} {a:?}: {e}"))?;
            }
            Ok(with_port(a, port))
        })
        .collect()
}

/// A port number a client connects to, or what is wrong with it, in words.
pub fn port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(format!("{text} is not a port (1-65535)")),
    }
}

/// The port part of `HOST:PORT`, `IPv4:PORT` or `[IPv6]:PORT`, as written (`None`: no port).
pub fn port_text(addr: &str) -> Option<&str> {
    if addr
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .is_ok()
    {
        return None;
    }
    match addr.strip_prefix('[') {
        Some(rest) => rest.split_once("]:").map(|(_, p)| p),
        None => match addr.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => Some(p),
            _ => None,
        },
    }
}

/// `servers` from the process environment.
pub fn from_env(flags: &[String]) -> Result<Vec<String>, String> {
    servers(flags, &|name| std::env::var(name).ok())
}

/// `addr` with `port` added when it has none.
fn with_port(addr: &str, port: u16) -> String {
    let bare = addr.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return SocketAddr::new(ip, port).to_string();
    }
    match port_text(addr) {
        Some(_) => addr.to_string(),
        None => format!("{addr}:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)], flags: &[&str]) -> Result<Vec<String>, String> {
        let flags: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        servers(&flags, &move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn flags_then_gearman_servers_then_gearman_server_then_loopback() {
        assert_eq!(with(&[], &[]).unwrap(), vec!["127.0.0.1:4730"]);
        assert_eq!(
            with(&[("GEARMAND_PORT", "4999")], &[]).unwrap(),
            vec!["127.0.0.1:4999"]
        );
        let env = [
            ("GEARMAN_SERVERS", "a, b:7003,,::1,[::2]:9"),
            ("GEARMAN_SERVER", "ignored"),
            ("GEARMAND_PORT", "4800"),
        ];
        assert_eq!(
            with(&env, &[]).unwrap(),
            vec!["a:4800", "b:7003", "[::1]:4800", "[::2]:9"]
        );
        assert_eq!(
            with(&[("GEARMAN_SERVER", "c,d:1")], &[]).unwrap(),
            vec!["c:4730", "d:1"]
        );
        assert_eq!(with(&env, &["x", "y:2"]).unwrap(), vec!["x:4800", "y:2"]);
        assert!(
            with(&[("GEARMAND_PORT", "x")], &[])
                .unwrap_err()
                .contains("GEARMAND_PORT")
        );
        assert!(
            with(&[("GEARMAN_SERVERS", ",")], &[])
                .unwrap_err()
                .contains("GEARMAN_SERVERS")
        );
        // A port that is not one is said in words, wherever it was written.
        assert_eq!(
            with(&[], &["127.0.0.1:abc"]).unwrap_err(),
            "-s \"127.0.0.1:abc\": abc is not a port (1-65535)"
        );
        assert!(
            with(&[("GEARMAN_SERVERS", "a,[::1]:70000")], &[])
                .unwrap_err()
                .contains("70000 is not a port (1-65535)")
        );
        assert!(
            with(&[("GEARMAND_PORT", "0")], &[])
                .unwrap_err()
                .contains("0 is not a port (1-65535)")
        );
        // An empty variable counts as unset, as in libgearman.
        assert_eq!(
            with(&[("GEARMAN_SERVERS", ""), ("GEARMAN_SERVER", "e")], &[]).unwrap(),
            vec!["e:4730"]
        );
    }
}
