//! `gearwheel ping ID -- COMMAND...`: run a command anywhere (a crontab line, CI, a script)
//! and report it to its heartbeat entry: a start ping, then its exit code with the tail of its
//! output. The command always runs, whether the server answers or not, and the exit code is
//! the command's.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argh::FromArgs;

use super::say;
use crate::client::ping::{PingServer, send};

/// The output kept for the end ping (stdout and stderr as they came); the server keeps the
/// last 200 characters of it.
const TAIL_BYTES: usize = 4096;
/// Each attempt's deadline (connect, write, answer).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// The waits before the end ping's attempts: briefly, then given up (a crontab line must not
/// hang on a server that is gone).
const END_RETRIES: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];
/// Exit code when the command cannot be started (the shell's "not found").
const EXIT_CANNOT_RUN: u8 = 127;

#[derive(FromArgs, Debug, Default, PartialEq)]
/// Run COMMAND and report it to the heartbeat entry ID (expect=ping): a start ping, then its
/// exit code and the tail of its output; exit with the command's code.
#[argh(
    subcommand,
    name = "ping",
    example = "0 3 * * * gearwheel ping backup.remote -- /usr/local/bin/backup",
    example = "gearwheel ping -s https://jobs.example.net:8080 --token-file /etc/gearwheel/ping.token nightly -- make release",
    note = "The command runs whether the server answers or not; its output goes to this \
            command's stdout and stderr as usual. A ping that cannot be delivered is retried \
            briefly, then given up with a line on stderr. Exit code: the command's (128+N \
            after signal N, 127 when it cannot be started); 2 for bad flags."
)]
pub struct PingArgs {
    /// the server's HTTP address, [http://|https://]HOST[:PORT][/PREFIX] (default
    /// $GEARWHEEL_PING_SERVER, else 127.0.0.1:8080)
    #[argh(option, short = 's')]
    pub server: Option<String>,
    /// a file whose first line is the bearer token the server's --acl knows (kept out of the
    /// command line, where any user of the machine could read it)
    #[argh(option)]
    pub token_file: Option<String>,
    /// PEM file of the CA that signed the server's certificate (for https; default the
    /// system's CA bundle)
    #[argh(option)]
    pub ssl_ca_file: Option<String>,
    /// the heartbeat entry's id, then `--` and the command and its arguments
    #[argh(positional)]
    pub args: Vec<String>,
}

/// Where the pings go and with what.
struct Target {
    server: PingServer,
    tls: Option<crate::client::ClientTls>,
    token: Option<String>,
}

impl Target {
    /// One ping, retried after each of `waits` while the server is unreachable or answers 5xx;
    /// given up with a line on stderr.
    fn ping(&self, id: &str, what: &str, body: &[u8], waits: &[Duration]) {
        let mut waits = waits.iter();
        loop {
            let r = send(
                &self.server,
                self.tls.as_ref(),
                self.token.as_deref(),
                (id, what),
                body,
                ATTEMPT_TIMEOUT,
            );
            let why = match r {
                Ok(200) => return,
                Ok(404) => {
                    return say("ping", format!("the server has no schedule entry {id:?}"));
                }
                Ok(code) if code < 500 => {
                    return say(
                        "ping",
                        format!("the server refused the ping (HTTP {code}); not retried"),
                    );
                }
                Ok(code) => format!("HTTP {code}"),
                Err(e) => e.to_string(),
            };
            match waits.next() {
                Some(w) => std::thread::sleep(*w),
                None => {
                    return say(
                        "ping",
                        format!("could not ping {} ({why}); given up", self.server.authority),
                    );
                }
            }
        }
    }
}

/// Copy `from` to `to` as it comes, keeping the last `TAIL_BYTES` in `tail`.
fn tee(mut from: impl Read, mut to: impl Write, tail: &Mutex<VecDeque<u8>>) {
    let mut buf = [0u8; 8192];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let _ = to.write_all(&buf[..n]);
        let _ = to.flush();
        if let Ok(mut t) = tail.lock() {
            t.extend(&buf[..n]);
            let extra = t.len().saturating_sub(TAIL_BYTES);
            t.drain(..extra);
        }
    }
}

/// Run `command`, its output passed through; its exit code (128+N after signal N) and the
/// tail of its output.
fn run_command(command: &[String]) -> (u8, Vec<u8>) {
    let Some((program, args)) = command.split_first() else {
        return (EXIT_CANNOT_RUN, b"no command".to_vec());
    };
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("cannot run {program}: {e}");
            say("ping", &msg);
            return (EXIT_CANNOT_RUN, msg.into_bytes());
        }
    };
    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_BYTES)));
    let mut threads = Vec::new();
    if let Some(out) = child.stdout.take() {
        let t = Arc::clone(&tail);
        threads.push(std::thread::spawn(move || tee(out, std::io::stdout(), &t)));
    }
    if let Some(err) = child.stderr.take() {
        let t = Arc::clone(&tail);
        threads.push(std::thread::spawn(move || tee(err, std::io::stderr(), &t)));
    }
    let status = child.wait();
    for t in threads {
        let _ = t.join();
    }
    let code = match status {
        Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (Some(c), _) => u8::try_from(c).unwrap_or(1),
            (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(255),
            (None, None) => 1,
        },
        Err(e) => {
            say("ping", format!("waiting for {program}: {e}"));
            1
        }
    };
    let tail = tail
        .lock()
        .map(|t| t.iter().copied().collect())
        .unwrap_or_default();
    (code, tail)
}

/// The target from the flags, or why not.
fn target(a: &PingArgs) -> Result<Target, String> {
    let server = a
        .server
        .clone()
        .or_else(|| std::env::var("GEARWHEEL_PING_SERVER").ok())
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let server = PingServer::parse(&server)?;
    let token = match &a.token_file {
        None => None,
        Some(f) => {
            let text = std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"))?;
            let line = text.lines().next().unwrap_or("").trim().to_string();
            if line.is_empty() {
                return Err(format!("{f}: no token on its first line"));
            }
            Some(line)
        }
    };
    let tls = if server.tls {
        crate::client::tls_from_flags(true, &a.ssl_ca_file, &None, &None)?
    } else if a.ssl_ca_file.is_some() {
        return Err("--ssl-ca-file is for an https:// server".into());
    } else {
        None
    };
    Ok(Target { server, tls, token })
}

/// Split `ID -- COMMAND...` (the `--` may be left out when the command's words start with
/// none of ours).
fn split(args: &[String]) -> Result<(&str, &[String]), String> {
    let Some((id, rest)) = args.split_first() else {
        return Err("usage: gearwheel ping ID -- COMMAND...".into());
    };
    if id == "--" || id.is_empty() {
        return Err("the entry's id comes first: gearwheel ping ID -- COMMAND...".into());
    }
    let command = rest.strip_prefix(&["--".to_string()][..]).unwrap_or(rest);
    if command.is_empty() {
        return Err("no command after the id: gearwheel ping ID -- COMMAND...".into());
    }
    Ok((id, command))
}

pub fn run(a: PingArgs) -> u8 {
    let (id, command) = match split(&a.args) {
        Ok(s) => s,
        Err(e) => {
            say("ping", e);
            return super::EXIT_USAGE;
        }
    };
    let target = match target(&a) {
        Ok(t) => t,
        Err(e) => {
            say("ping", e);
            return super::EXIT_USAGE;
        }
    };
    // The start is not retried: the command waits for nothing but one attempt.
    target.ping(id, "start", b"", &[]);
    let (code, tail) = run_command(command);
    target.ping(id, &code.to_string(), &tail, &END_RETRIES);
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_id_then_the_command() {
        let a = words(&["backup", "--", "rsync", "-a", "--", "x"]);
        let (id, cmd) = split(&a).unwrap();
        assert_eq!((id, cmd), ("backup", &a[2..]));
        let a = words(&["backup", "true"]);
        assert_eq!(split(&a).unwrap().1, &a[1..]);
        assert!(split(&words(&[])).is_err());
        assert!(split(&words(&["--", "true"])).is_err());
        assert!(split(&words(&["backup", "--"])).is_err());
    }

    #[test]
    fn a_command_runs_and_its_code_and_tail_come_back() {
        let (code, tail) = run_command(&words(&["sh", "-c", "echo out; echo err >&2; exit 3"]));
        assert_eq!(code, 3);
        let tail = String::from_utf8(tail).unwrap();
        assert!(tail.contains("out\n") && tail.contains("err\n"), "{tail:?}");
        let (code, tail) = run_command(&words(&["sh", "-c", "yes | head -c 100000"]));
        assert_eq!((code, tail.len()), (0, TAIL_BYTES));
        let (code, _) = run_command(&words(&["sh", "-c", "kill -TERM $$"]));
        assert_eq!(code, 128 + 15);
        let (code, msg) = run_command(&words(&["/nonexistent/command"]));
        assert_eq!(code, EXIT_CANNOT_RUN);
        assert!(String::from_utf8_lossy(&msg).contains("cannot run"));
    }
}
