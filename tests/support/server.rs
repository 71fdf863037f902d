//! The server under test: the real `gearwheel serve` on port 0 (a `Proc`), its address learnt
//! from its "Listening on" line.

use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::process::Command;
use std::time::Duration;

use super::gearman::Conn;
use super::process::{BIN, Proc};
use super::wait::{poll, wait_workers};

/// A running server; killed when dropped. Derefs to its `Proc` (child, signal, wait_exit).
pub struct Server {
    proc: Proc,
    pub addr: SocketAddr,
}

impl Server {
    /// Start with default flags plus `extra`.
    pub fn start(extra: &[&str]) -> Server {
        let mut args = vec!["serve", "-p", "0", "--verbose", "INFO"];
        args.extend_from_slice(extra);
        Server::start_args(&args)
    }

    /// Start `gearwheel` with exactly these arguments; waits for the "Listening on" line.
    pub fn start_args(args: &[&str]) -> Server {
        let mut proc = Proc::spawn("gearwheel serve", Command::new(BIN).args(args), None);
        let prefix = "gearwheel: Listening on ";
        let addr = poll(10, "the server to start", || {
            let log = proc.stderr();
            // The whole line has arrived once a newline follows it.
            let line = log
                .find(prefix)
                .and_then(|i| log[i + prefix.len()..].split_once('\n'));
            match line {
                Some((addr, _)) => Ok(addr.trim().to_string()),
                None if !proc.running() => panic!("server exited; log:\n{log}"),
                None => Err(log),
            }
        });
        Server {
            proc,
            addr: addr.parse().expect("address"),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn connect(&self) -> Conn {
        Conn::connect(self.addr)
    }

    /// Everything the server has logged so far.
    pub fn log(&self) -> String {
        self.proc.stderr()
    }
}

impl Deref for Server {
    type Target = Proc;
    fn deref(&self) -> &Proc {
        &self.proc
    }
}

impl DerefMut for Server {
    fn deref_mut(&mut self) -> &mut Proc {
        &mut self.proc
    }
}

/// A connection through gearwheel's own client library.
pub fn client(s: &Server) -> gearwheel::client::Conn {
    let c = gearwheel::client::Conn::connect(&s.addr.to_string(), Duration::from_secs(5))
        .expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c
}

/// An admin command's reply lines (through `.` for lists), joined with `\n`, read through the
/// client library.
pub fn admin_text(s: &Server, line: &str, list: bool) -> String {
    let lines = client(s).admin(line, list).expect("admin reply");
    lines.join("\n") + "\n"
}

/// Start `gearwheel work -s SERVER extra... -- cmd...` and wait until it has registered.
pub fn work_process(s: &Server, func: &str, extra: &[&str], cmd: &[&str]) -> Proc {
    work_process_env(s, func, extra, cmd, &[])
}

/// `work_process` with these environment variables added.
pub fn work_process_env(
    s: &Server,
    func: &str,
    extra: &[&str],
    cmd: &[&str],
    env: &[(&str, &str)],
) -> Proc {
    let addr = s.addr.to_string();
    let mut args = vec!["work", "-s", &addr, "-f", func];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(cmd);
    let w = Proc::gearwheel(&args, env);
    wait_workers(s, func, 1);
    w
}
