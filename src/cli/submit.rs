//! `gearwheel submit`: submit one job; print its result as it streams, or its handle for
//! background and future jobs.

use std::io::{Read, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{EXIT_FAILED, EXIT_UNREACHABLE, EXIT_USAGE, SubmitArgs, say};
use crate::client::{self, Conn, Error, SubmitKind, parse_at, parse_duration, split_args};
use crate::proto::packet::PacketType;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The ERROR code of a server that does not know an OPTION_REQ (gearmand's and ours).
const UNKNOWN_OPTION: &str = "UNKNOWN_OPTION";

/// Turn the flags into the submit packet's kind. `now` is unix seconds.
pub(crate) fn kind(a: &SubmitArgs, now: u64) -> Result<SubmitKind, String> {
    if a.function.is_empty() || a.function.contains('\0') {
        return Err("-f needs a function name without NUL".into());
    }
    let priority = match a
        .priority
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("normal") => None,
        Some("high") => Some(SubmitKind::High),
        Some("low") => Some(SubmitKind::Low),
        Some(p) => return Err(format!("--priority {p:?}: use high, normal or low")),
    };
    let at = match (&a.at, &a.in_) {
        (Some(_), Some(_)) => return Err("give --at or --in, not both".into()),
        (Some(t), None) => Some(parse_at(t).map_err(|e| format!("--at {e}"))?),
        (None, Some(d)) => {
            let d = parse_duration(d).map_err(|e| format!("--in {e}"))?;
            // Round up: a future job must not run early.
            let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
            Some(now.saturating_add(secs))
        }
        (None, None) => None,
    };
    if let Some(t) = at {
        if priority.is_some() {
            return Err(
                "--priority does not go with --at or --in: future jobs run at normal priority"
                    .into(),
            );
        }
        return Ok(SubmitKind::Epoch(t));
    }
    Ok(match (priority, a.background) {
        (None, false) => SubmitKind::Normal,
        (None, true) => SubmitKind::NormalBg,
        (Some(SubmitKind::High), false) => SubmitKind::High,
        (Some(SubmitKind::High), true) => SubmitKind::HighBg,
        (Some(_), false) => SubmitKind::Low,
        (Some(_), true) => SubmitKind::LowBg,
    })
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Connect to the first server that answers.
pub(crate) fn connect_any(
    cmd: &str,
    servers: &[String],
    tls: Option<&client::ClientTls>,
) -> Option<Conn> {
    for s in servers {
        match Conn::connect_secure(s, CONNECT_TIMEOUT, tls) {
            Ok(c) => return Some(c),
            Err(e) => say(cmd, format_args!("cannot connect to {s}: {e}")),
        }
    }
    None
}

pub fn run(a: SubmitArgs) -> u8 {
    let kind = match kind(&a, now_secs()) {
        Ok(k) => k,
        Err(e) => {
            say("submit", e);
            return EXIT_USAGE;
        }
    };
    let data = match a.data.as_deref() {
        Some(d) if d != "-" => d.as_bytes().to_vec(),
        _ => {
            let mut v = Vec::new();
            if let Err(e) = std::io::stdin().read_to_end(&mut v) {
                say("submit", format_args!("cannot read standard input: {e}"));
                return EXIT_USAGE;
            }
            v
        }
    };
    let servers = match client::servers::from_env(&a.server) {
        Ok(s) => s,
        Err(e) => {
            say("submit", e);
            return EXIT_USAGE;
        }
    };
    let tls = match client::tls_from_flags(a.ssl, &a.ssl_ca_file, &a.ssl_certificate, &a.ssl_key) {
        Ok(t) => t,
        Err(e) => {
            say("submit", e);
            return EXIT_USAGE;
        }
    };
    let Some(mut conn) = connect_any("submit", &servers, tls.as_ref()) else {
        return EXIT_UNREACHABLE;
    };
    let unique = a.unique.as_deref().unwrap_or("");
    match submit(
        &mut conn,
        kind,
        a.function.as_bytes(),
        unique.as_bytes(),
        &data,
    ) {
        Ok(code) => code,
        Err(Error::Server { code, text }) => {
            say("submit", format_args!("{}: {code}: {text}", conn.peer()));
            EXIT_FAILED
        }
        Err(e) => {
            say("submit", format_args!("{}: {e}", conn.peer()));
            EXIT_UNREACHABLE
        }
    }
}

fn submit(
    conn: &mut Conn,
    kind: SubmitKind,
    function: &[u8],
    unique: &[u8],
    data: &[u8],
) -> Result<u8, Error> {
    if kind.background() {
        let handle = conn.submit(kind, function, unique, data)?;
        println!("{}", String::from_utf8_lossy(&handle));
        return Ok(0);
    }
    // Ask for WORK_EXCEPTION so that the worker's reason reaches us; a server that does not
    // know the option (UNKNOWN_OPTION) still sends WORK_FAIL. Any other ERROR is a refusal
    // (PROTECTED_MODE, PERMISSION_DENIED): the server may close the connection after it, so
    // its text is what the user must see, not the close that follows.
    match conn.option_exceptions() {
        Err(Error::Server { code, .. }) if code == UNKNOWN_OPTION => {}
        other => other?,
    }
    let handle = conn.submit(kind, function, unique, data)?;
    let shown = String::from_utf8_lossy(&handle).into_owned();
    let mut out = std::io::stdout().lock();
    loop {
        let f = conn.recv()?;
        let [h, body] = <[bytes::Bytes; 2]>::try_from(split_args(&f.body, 2))
            .unwrap_or_else(|_| [bytes::Bytes::new(), bytes::Bytes::new()]);
        if h != handle {
            continue;
        }
        match f.ptype {
            PacketType::WorkData => {
                // Streamed as it comes, so a long job's progress shows at once.
                let _ = out.write_all(&body).and_then(|_| out.flush());
            }
            PacketType::WorkWarning => {
                let _ = std::io::stderr().write_all(&body);
            }
            PacketType::WorkComplete => {
                let _ = out.write_all(&body).and_then(|_| out.flush());
                return Ok(0);
            }
            PacketType::WorkFail => {
                say("submit", format_args!("job {shown} failed"));
                return Ok(EXIT_FAILED);
            }
            PacketType::WorkException => {
                say(
                    "submit",
                    format_args!("job {shown} failed: {}", String::from_utf8_lossy(&body)),
                );
                return Ok(EXIT_FAILED);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(f: impl FnOnce(&mut SubmitArgs)) -> SubmitArgs {
        let mut a = SubmitArgs {
            function: "f".into(),
            ..Default::default()
        };
        f(&mut a);
        a
    }

    #[test]
    fn priorities_and_background() {
        assert_eq!(kind(&args(|_| {}), 0), Ok(SubmitKind::Normal));
        assert_eq!(
            kind(&args(|a| a.background = true), 0),
            Ok(SubmitKind::NormalBg)
        );
        assert_eq!(
            kind(&args(|a| a.priority = Some("HIGH".into())), 0),
            Ok(SubmitKind::High)
        );
        assert_eq!(
            kind(
                &args(|a| {
                    a.priority = Some("low".into());
                    a.background = true
                }),
                0
            ),
            Ok(SubmitKind::LowBg)
        );
        assert!(kind(&args(|a| a.priority = Some("urgent".into())), 0).is_err());
        assert!(kind(&args(|a| a.function.clear()), 0).is_err());
    }

    #[test]
    fn future_jobs_become_epoch_submits() {
        assert_eq!(
            kind(&args(|a| a.in_ = Some("2m".into())), 1000),
            Ok(SubmitKind::Epoch(1120))
        );
        assert_eq!(
            kind(&args(|a| a.in_ = Some("1500ms".into())), 1000),
            Ok(SubmitKind::Epoch(1002))
        );
        assert_eq!(
            kind(&args(|a| a.at = Some("2030-01-02T03:04:05Z".into())), 0),
            Ok(SubmitKind::Epoch(1_893_553_445))
        );
        assert_eq!(
            kind(
                &args(|a| {
                    a.at = Some("5".into());
                    a.background = true
                }),
                0
            ),
            Ok(SubmitKind::Epoch(5))
        );
        let both = args(|a| {
            a.at = Some("5".into());
            a.in_ = Some("5s".into())
        });
        assert!(kind(&both, 0).unwrap_err().contains("not both"));
        let prio = args(|a| {
            a.in_ = Some("5s".into());
            a.priority = Some("high".into())
        });
        assert!(kind(&prio, 0).unwrap_err().contains("normal priority"));
        assert!(
            kind(&args(|a| a.in_ = Some("soon".into())), 0)
                .unwrap_err()
                .starts_with("--in")
        );
    }
}
