//! Test harness shared by the black-box tests: start the real `gearwheel serve` on port 0,
//! speak raw Gearman bytes to it, and read its log.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running server; killed when dropped.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
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
        let mut child = Command::new(env!("CARGO_BIN_EXE_gearwheel"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start gearwheel");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let log2 = Arc::clone(&log);
        // Drain stderr for the server's whole life so that it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if !sent {
                    if let Some(rest) = line.strip_prefix("gearwheel: Listening on ") {
                        let _ = tx.send(rest.trim().to_string());
                        sent = true;
                    }
                }
                let mut l = log2.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("server did not start; log:\n{}", log.lock().unwrap()));
        Server {
            child,
            addr: addr.parse().expect("address"),
            log,
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
        self.log.lock().unwrap().clone()
    }

    /// Wait until the log contains `needle` (or panic after `secs`).
    pub fn wait_log(&self, needle: &str, secs: u64) {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if self.log().contains(needle) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("log never said {needle:?}; log:\n{}", self.log());
    }

    /// Wait for the process to exit, up to `secs`.
    pub fn wait_exit(&mut self, secs: u64) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A packet as read from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub magic: [u8; 4],
    pub ptype: u32,
    pub body: Vec<u8>,
}

impl Packet {
    /// The body split on NUL.
    pub fn args(&self) -> Vec<&[u8]> {
        self.body.split(|&b| b == 0).collect()
    }
}

/// Build a request packet's bytes: `args` joined with NUL.
pub fn req(ptype: u32, args: &[&[u8]]) -> Vec<u8> {
    let body = args.join(&0u8);
    let mut v = b"\0REQ".to_vec();
    v.extend_from_slice(&ptype.to_be_bytes());
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(&body);
    v
}

/// Packet type numbers used by the tests.
pub mod t {
    pub const CAN_DO: u32 = 1;
    pub const CANT_DO: u32 = 2;
    pub const RESET_ABILITIES: u32 = 3;
    pub const PRE_SLEEP: u32 = 4;
    pub const NOOP: u32 = 6;
    pub const SUBMIT_JOB: u32 = 7;
    pub const JOB_CREATED: u32 = 8;
    pub const GRAB_JOB: u32 = 9;
    pub const NO_JOB: u32 = 10;
    pub const JOB_ASSIGN: u32 = 11;
    pub const WORK_STATUS: u32 = 12;
    pub const WORK_COMPLETE: u32 = 13;
    pub const WORK_FAIL: u32 = 14;
    pub const GET_STATUS: u32 = 15;
    pub const ECHO_REQ: u32 = 16;
    pub const ECHO_RES: u32 = 17;
    pub const SUBMIT_JOB_BG: u32 = 18;
    pub const ERROR: u32 = 19;
    pub const STATUS_RES: u32 = 20;
    pub const SUBMIT_JOB_HIGH: u32 = 21;
    pub const SET_CLIENT_ID: u32 = 22;
    pub const CAN_DO_TIMEOUT: u32 = 23;
    pub const ALL_YOURS: u32 = 24;
    pub const WORK_EXCEPTION: u32 = 25;
    pub const OPTION_REQ: u32 = 26;
    pub const OPTION_RES: u32 = 27;
    pub const WORK_DATA: u32 = 28;
    pub const WORK_WARNING: u32 = 29;
    pub const GRAB_JOB_UNIQ: u32 = 30;
    pub const JOB_ASSIGN_UNIQ: u32 = 31;
    pub const SUBMIT_JOB_HIGH_BG: u32 = 32;
    pub const SUBMIT_JOB_LOW: u32 = 33;
    pub const SUBMIT_JOB_LOW_BG: u32 = 34;
    pub const SUBMIT_JOB_SCHED: u32 = 35;
    pub const SUBMIT_JOB_EPOCH: u32 = 36;
    pub const SUBMIT_REDUCE_JOB: u32 = 37;
    pub const SUBMIT_REDUCE_JOB_BACKGROUND: u32 = 38;
    pub const GRAB_JOB_ALL: u32 = 39;
    pub const JOB_ASSIGN_ALL: u32 = 40;
    pub const GET_STATUS_UNIQUE: u32 = 41;
    pub const STATUS_RES_UNIQUE: u32 = 42;
}

/// A raw connection with a read timeout (5 s by default).
pub struct Conn {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn connect(addr: SocketAddr) -> Conn {
        Conn::from_stream(TcpStream::connect(addr).expect("connect"))
    }

    /// A connection made elsewhere (from a chosen source address, say).
    pub fn from_stream(stream: TcpStream) -> Conn {
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Send one request packet.
    pub fn send_req(&mut self, ptype: u32, args: &[&[u8]]) {
        self.send(&req(ptype, args));
    }

    fn fill(&mut self) -> std::io::Result<usize> {
        let mut chunk = [0u8; 65536];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Read one binary packet; panics on timeout or EOF.
    pub fn read_packet(&mut self) -> Packet {
        self.try_read_packet().expect("a packet")
    }

    /// Read one binary packet, or an error on timeout or EOF.
    pub fn try_read_packet(&mut self) -> Result<Packet, String> {
        loop {
            if self.buf.len() >= 12 {
                let len = u32::from_be_bytes(self.buf[8..12].try_into().unwrap()) as usize;
                if self.buf.len() >= 12 + len {
                    let p = Packet {
                        magic: self.buf[..4].try_into().unwrap(),
                        ptype: u32::from_be_bytes(self.buf[4..8].try_into().unwrap()),
                        body: self.buf[12..12 + len].to_vec(),
                    };
                    self.buf.drain(..12 + len);
                    return Ok(p);
                }
            }
            match self.fill() {
                Ok(0) => return Err("EOF".into()),
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Read a packet and check its type; returns the body.
    pub fn expect(&mut self, ptype: u32) -> Vec<u8> {
        let p = self.read_packet();
        assert_eq!(
            p.ptype,
            ptype,
            "expected type {ptype}, got {p:?} ({})",
            String::from_utf8_lossy(&p.body)
        );
        p.body
    }

    /// Nothing arrives within `ms` milliseconds.
    pub fn expect_silence(&mut self, ms: u64) {
        self.stream
            .set_read_timeout(Some(Duration::from_millis(ms)))
            .unwrap();
        let r = self.try_read_packet();
        self.stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        if let Ok(p) = r {
            panic!("expected nothing, got {p:?}");
        }
    }

    /// The server closed the connection (after anything already buffered).
    pub fn expect_eof(&mut self) {
        loop {
            match self.fill() {
                Ok(0) => return,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
                Err(e) => panic!("expected EOF, got {e}"),
            }
        }
    }

    /// Send an admin line (with `\n`) and read the reply: one line, or through `.\n` for lists.
    pub fn admin(&mut self, line: &str, list: bool) -> String {
        self.send(format!("{line}\n").as_bytes());
        self.read_text(list)
    }

    /// The `show schedules` line of entry `id`, split at its tabs.
    pub fn schedule_row(&mut self, id: &str) -> Vec<String> {
        let listing = self.admin("show schedules", true);
        listing
            .lines()
            .find(|l| l.starts_with(&format!("{id}\t")))
            .unwrap_or_else(|| panic!("{id} not in {listing:?}"))
            .split('\t')
            .map(String::from)
            .collect()
    }

    /// `admin` for names that are not UTF-8: the line and the reply as bytes.
    pub fn admin_bytes(&mut self, line: &[u8], list: bool) -> Vec<u8> {
        let mut l = line.to_vec();
        l.push(b'\n');
        self.send(&l);
        self.read_reply(list)
    }

    /// Read one text reply: a line, or lines up to and including `.\n`. The end is found in
    /// the bytes, which need not be UTF-8 (a binary unique is shown as it is); the reply is
    /// returned lossily decoded.
    pub fn read_text(&mut self, list: bool) -> String {
        String::from_utf8_lossy(&self.read_reply(list)).into_owned()
    }

    /// One text reply's bytes: a line, or lines up to and including `.\n`.
    fn read_reply(&mut self, list: bool) -> Vec<u8> {
        loop {
            let end = if list {
                if self.buf.starts_with(b".\n") {
                    Some(2)
                } else {
                    self.buf
                        .windows(3)
                        .position(|w| w == b"\n.\n")
                        .map(|i| i + 3)
                }
            } else {
                self.buf.iter().position(|&b| b == b'\n').map(|i| i + 1)
            };
            if let Some(end) = end {
                return self.buf.drain(..end).collect();
            }
            let text = String::from_utf8_lossy(&self.buf).into_owned();
            match self.fill() {
                Ok(0) => panic!("EOF while reading admin reply; got {text:?}"),
                Ok(_) => {}
                Err(e) => panic!("reading admin reply: {e}; got {text:?}"),
            }
        }
    }

    /// Submit a job and return its handle.
    pub fn submit(&mut self, ptype: u32, func: &str, unique: &str, data: &[u8]) -> String {
        self.send_req(ptype, &[func.as_bytes(), unique.as_bytes(), data]);
        String::from_utf8(self.expect(t::JOB_CREATED)).unwrap()
    }

    /// Register as a worker for `funcs`.
    pub fn can_do(&mut self, funcs: &[&str]) {
        for f in funcs {
            self.send_req(t::CAN_DO, &[f.as_bytes()]);
        }
    }

    /// GRAB_JOB_UNIQ; returns (handle, func, unique, data) or None on NO_JOB.
    pub fn grab_uniq(&mut self) -> Option<(String, String, String, Vec<u8>)> {
        self.send_req(t::GRAB_JOB_UNIQ, &[]);
        let p = self.read_packet();
        match p.ptype {
            t::NO_JOB => None,
            t::JOB_ASSIGN_UNIQ => {
                let mut it = p.body.splitn(4, |&b| b == 0);
                let s =
                    |x: Option<&[u8]>| String::from_utf8_lossy(x.unwrap_or_default()).to_string();
                let (h, f, u) = (s(it.next()), s(it.next()), s(it.next()));
                Some((h, f, u, it.next().unwrap_or_default().to_vec()))
            }
            other => panic!("unexpected reply to GRAB_JOB_UNIQ: {other} {:?}", p),
        }
    }
}

/// Is a command on PATH?
pub fn have(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
        .unwrap_or(false)
}

/// For interop tests: skip (with a printed reason) when a client is missing, unless
/// GEARWHEEL_REQUIRE_INTEROP=1, where a missing client is a failure.
pub fn require(ok: bool, what: &str) -> bool {
    if ok {
        return true;
    }
    if std::env::var("GEARWHEEL_REQUIRE_INTEROP").as_deref() == Ok("1") {
        panic!("{what} is not installed, and GEARWHEEL_REQUIRE_INTEROP=1");
    }
    eprintln!(
        "SKIP: {what} is not installed (set GEARWHEEL_REQUIRE_INTEROP=1 to make this a failure)"
    );
    false
}

/// Set a SOL_SOCKET option of a test's own socket (SO_LINGER, SO_RCVBUF, ...).
pub fn set_socket_option<T>(s: &TcpStream, name: libc::c_int, value: &T) {
    // SAFETY: setsockopt on a socket this process owns, with a value of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(s),
            libc::SOL_SOCKET,
            name,
            (value as *const T).cast::<libc::c_void>(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt {name}");
}
