//! Webhook targets of alerts: an `on_failure=`/`on_success=` value that is a URL (`https://`,
//! or `http://` to a loopback address only: an alert's body must not cross a network in
//! clear), its parts for the request, its redacted form for logs and views (a Slack hook's
//! path is its secret), and the alert body's format (`alert_format=`). Pure.

use std::net::IpAddr;

/// The longest URL taken (a Slack hook's is about 80 bytes).
pub const MAX_URL: usize = 2048;

/// `alert_format=`: the body POSTed to a webhook.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AlertFormat {
    /// The JSON a worker's alert job gets, with its `idempotency_key`.
    #[default]
    Generic,
    /// `{"text": "..."}`, which Slack's (and Mattermost's, Rocket.Chat's) incoming webhooks take.
    Slack,
}

impl AlertFormat {
    pub fn parse(value: &str) -> Result<AlertFormat, String> {
        match value {
            "generic" => Ok(AlertFormat::Generic),
            "slack" => Ok(AlertFormat::Slack),
            _ => Err("use generic or slack".into()),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AlertFormat::Generic => "generic",
            AlertFormat::Slack => "slack",
        }
    }
}

/// A webhook URL taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookUrl {
    pub tls: bool,
    /// The host as written (brackets of an IPv6 address removed): the TLS name and `Host:`.
    pub host: String,
    pub port: u16,
    /// The path and query (`/` when none): the secret part of a Slack hook.
    pub target: String,
}

/// An alert target that is a URL rather than a function name.
pub fn is_url(value: &str) -> bool {
    let lower = value.get(..8).unwrap_or(value).to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

impl HookUrl {
    /// Parse and check a webhook URL: `https://HOST[:PORT][/PATH]`, or `http://` when HOST is
    /// a loopback address or `localhost`. No user info, no fragment, no spaces.
    pub fn parse(url: &str) -> Result<HookUrl, String> {
        if url.len() > MAX_URL {
            return Err(format!("a webhook URL of at most {MAX_URL} bytes"));
        }
        if url.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err("a webhook URL without spaces or control characters".into());
        }
        let (tls, rest) = match url.split_once("://") {
            Some((s, r)) if s.eq_ignore_ascii_case("https") => (true, r),
            Some((s, r)) if s.eq_ignore_ascii_case("http") => (false, r),
            _ => return Err("a webhook URL starts with https:// (or http:// to loopback)".into()),
        };
        if rest.contains('#') {
            return Err("a webhook URL without a #fragment".into());
        }
        let (authority, target) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err("a webhook URL without user:password@ (put a secret in the path)".into());
        }
        let (host, port) = split_port(authority)?;
        if host.is_empty() {
            return Err("a webhook URL names a host".into());
        }
        let port = port.unwrap_or(if tls { 443 } else { 80 });
        if !tls && !is_loopback(host) {
            return Err(format!(
                "http:// only to a loopback address (127.0.0.1, ::1, localhost), not {host:?}: \
                 an alert must not cross a network in clear; use https://"
            ));
        }
        let target = match target {
            "" => "/".to_string(),
            t if t.starts_with('?') => format!("/{t}"),
            t => t.to_string(),
        };
        Ok(HookUrl {
            tls,
            host: host.to_string(),
            port,
            target,
        })
    }

    /// The URL with its path and query left out (`https://hooks.slack.com`): what logs, the
    /// console and `/metrics` show, since the path of many hooks is their secret.
    pub fn redacted(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let default = if self.tls { 443 } else { 80 };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == default {
            format!("{scheme}://{host}")
        } else {
            format!("{scheme}://{host}:{}", self.port)
        }
    }
}

/// A URL's redacted form (`HookUrl::redacted`), or `webhook` when it does not parse.
pub fn redact(url: &str) -> String {
    HookUrl::parse(url).map_or_else(|_| "webhook".into(), |u| u.redacted())
}

fn split_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    let bad = || "a webhook URL's port is a number from 1 to 65535".to_string();
    let parse = |p: &str| p.parse::<u16>().ok().filter(|&n| n > 0).ok_or_else(bad);
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or("a webhook URL's IPv6 address ends with ]")?;
        return match after {
            "" => Ok((host, None)),
            p => match p.strip_prefix(':') {
                Some(p) => Ok((host, Some(parse(p)?))),
                None => Err(bad()),
            },
        };
    }
    match authority.rsplit_once(':') {
        Some((host, p)) => Ok((host, Some(parse(p)?))),
        None => Ok((authority, None)),
    }
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_http_only_to_loopback() {
        let u = HookUrl::parse("https://hooks.slack.com/services/T0/B0/secret?x=1").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.target.as_str()),
            (true, "hooks.slack.com", 443, "/services/T0/B0/secret?x=1")
        );
        assert_eq!(u.redacted(), "https://hooks.slack.com");
        let u = HookUrl::parse("http://127.0.0.1:8089").unwrap();
        assert_eq!((u.port, u.target.as_str()), (8089, "/"));
        assert_eq!(u.redacted(), "http://127.0.0.1:8089");
        let u = HookUrl::parse("http://[::1]:9/hook").unwrap();
        assert_eq!(
            (u.host.as_str(), u.redacted()),
            ("::1", "http://[::1]:9".into())
        );
        assert!(HookUrl::parse("http://localhost/x").is_ok());
        let e = HookUrl::parse("http://alerts.example.com/x").unwrap_err();
        assert!(e.contains("only to a loopback address"), "{e}");
        assert!(HookUrl::parse("http://10.0.0.1/x").is_err());
        for bad in [
            "ftp://x",
            "https://",
            "https://u:p@host/x",
            "https://host:0/",
            "https://host:99999/",
            "https://host/a#b",
            "https://ho st/",
        ] {
            assert!(HookUrl::parse(bad).is_err(), "{bad}");
        }
        assert!(is_url("HTTPS://x") && is_url("http://x") && !is_url("alert"));
        assert_eq!(redact("nonsense"), "webhook");
    }

    #[test]
    fn formats() {
        assert_eq!(AlertFormat::parse("slack"), Ok(AlertFormat::Slack));
        assert_eq!(AlertFormat::parse("generic"), Ok(AlertFormat::Generic));
        assert!(AlertFormat::parse("teams").is_err());
    }
}
