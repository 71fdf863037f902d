//! The server under test: the real `gearwheel serve` on port 0 (a `Proc`), its addresses learnt
//! from its "Listening on" lines; and this machine's own address, to reach it from beyond
//! loopback.

use std::net::{SocketAddr, TcpListener};
use std::ops::{Deref, DerefMut};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

use super::gearman::Conn;
use super::process::{BIN, Proc};
use super::wait::{poll, wait_workers};

/// setrlimit's resource argument (its type differs between C libraries).
#[cfg(target_env = "gnu")]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type Resource = libc::c_int;

/// A server a test speaks Gearman to: a process (`Server`) or in-process (`InProcess`).
pub trait Serves {
    fn connect(&self) -> Conn;
}

impl Serves for Server {
    fn connect(&self) -> Conn {
        Server::connect(self)
    }
}

impl Serves for super::in_process::InProcess {
    fn connect(&self) -> Conn {
        super::in_process::InProcess::connect(self)
    }
}

/// A running server; killed when dropped. Derefs to its `Proc` (child, signal, wait_exit).
pub struct Server {
    proc: Proc,
    pub addr: SocketAddr,
}

impl Server {
    /// Start with default flags plus `extra`.
    pub fn start(extra: &[&str]) -> Server {
        Server::start_args(&default_args(extra))
    }

    /// `start`, with every file the server writes limited to `bytes` (RLIMIT_FSIZE: a write
    /// past it fails with EFBIG, as on a full disk).
    pub fn start_with_file_limit(extra: &[&str], bytes: u64) -> Server {
        Server::start_limited(extra, libc::RLIMIT_FSIZE, bytes)
    }

    /// `start`, with at most `fds` descriptors open (RLIMIT_NOFILE, soft and hard: past it,
    /// `accept` fails with EMFILE).
    pub fn start_with_fd_limit(extra: &[&str], fds: u64) -> Server {
        Server::start_limited(extra, libc::RLIMIT_NOFILE, fds)
    }

    fn start_limited(extra: &[&str], resource: Resource, value: u64) -> Server {
        let mut cmd = Command::new(BIN);
        cmd.args(default_args(extra));
        // SAFETY: setrlimit is async-signal-safe and touches only the child.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Server::spawn(&mut cmd)
    }

    /// Start `gearwheel` with exactly these arguments; waits for the "Listening on" line.
    pub fn start_args(args: &[&str]) -> Server {
        Server::spawn(Command::new(BIN).args(args))
    }

    fn spawn(cmd: &mut Command) -> Server {
        let mut proc = Proc::spawn("gearwheel serve", cmd, None);
        let addr = poll(10, "the server to start", || {
            let log = proc.stderr();
            if let Some(addr) = listening_on(&log, "Listening on ") {
                return Ok(addr);
            }
            match proc.has_exited() {
                // The log read again once its reader has read it all.
                Some(st) => panic!("server exited ({st}); log:\n{}", proc.stderr()),
                None => Err(log),
            }
        });
        Server { proc, addr }
    }

    /// The address of another listener, from its line `gearwheel: WHAT ADDR` (`WHAT` is
    /// "TLS listening on" or "HTTP listening on"); waits for the line.
    pub fn listener(&self, what: &str) -> SocketAddr {
        poll(10, &format!("the server to log {what:?}"), || {
            let log = self.proc.stderr();
            listening_on(&log, what).ok_or(log)
        })
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

/// `serve` on port 0, logging at INFO (the "Listening on" lines), then `extra`.
fn default_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["serve", "-p", "0", "--verbose", "INFO"];
    args.extend_from_slice(extra);
    args
}

/// The address on the server's log line `gearwheel: WHAT ADDR`, once the line has arrived whole.
fn listening_on(log: &str, what: &str) -> Option<SocketAddr> {
    let prefix = format!("gearwheel: {what}");
    let at = log.find(&prefix)? + prefix.len();
    let (addr, _) = log[at..].split_once('\n')?;
    Some(addr.trim().parse().expect("a listener's address"))
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

/// A loopback port nothing listens on now (bound and released), for a peer that is away or
/// a component started on a port of its own.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
