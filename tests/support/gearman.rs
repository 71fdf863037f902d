//! Raw Gearman bytes: the packet type numbers, building requests, and `Conn`, a client
//! connection that reads packets and admin text replies exactly as the server sends them.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

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

/// A client socket as the tests use it: connected, no Nagle delay, reads time out after 5 s.
pub fn connect(addr: SocketAddr) -> TcpStream {
    client_socket(TcpStream::connect(addr).expect("connect"))
}

/// A socket connected elsewhere (from a chosen source address, say) set up like `connect`'s.
pub fn client_socket(stream: TcpStream) -> TcpStream {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

/// Append what one read gives to `buf` (retrying a read a signal interrupted); 0 at EOF.
pub fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut chunk = [0u8; 65536];
    loop {
        match stream.read(&mut chunk) {
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                return Ok(n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
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
        Conn {
            stream: client_socket(stream),
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
        read_more(&mut self.stream, &mut self.buf)
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
        if let Some(p) = self.read_within(ms) {
            panic!("expected nothing, got {p:?}");
        }
    }

    /// Read one packet with a short timeout: `None` if nothing came.
    pub fn read_within(&mut self, ms: u64) -> Option<Packet> {
        self.stream
            .set_read_timeout(Some(Duration::from_millis(ms)))
            .unwrap();
        let r = self.try_read_packet();
        self.stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        r.ok()
    }

    /// The server closed the connection (after anything already buffered).
    pub fn expect_eof(&mut self) {
        read_to_eof(|| self.fill());
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

    /// Jobs queued for `func`, from `status` (0 when it is not listed).
    pub fn queued(&mut self, func: &str) -> u64 {
        self.admin("status", true)
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{func}\t")))
            .and_then(|rest| rest.split('\t').next()?.parse().ok())
            .unwrap_or(0)
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

    /// One job of the functions this worker can do within `within`, sleeping on PRE_SLEEP
    /// until one comes: its (handle, data). Panics after `within`.
    pub fn grab_within(&mut self, within: Duration) -> (String, Vec<u8>) {
        let end = std::time::Instant::now() + within;
        loop {
            if let Some((h, _, _, data)) = self.grab_uniq() {
                return (h, data);
            }
            assert!(std::time::Instant::now() < end, "no job within {within:?}");
            self.send_req(t::PRE_SLEEP, &[]);
            assert_eq!(self.read_packet().ptype, t::NOOP);
        }
    }
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

/// Reads with `fill` until the peer has closed (EOF, or a reset); any other error fails the
/// test.
pub fn read_to_eof(mut fill: impl FnMut() -> std::io::Result<usize>) {
    loop {
        match fill() {
            Ok(0) => return,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("expected EOF, got {e}"),
        }
    }
}
