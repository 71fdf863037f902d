//! Clients and workers as state machines over non-blocking sockets, and the counters they
//! share with the thread that watches and measures.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::opts::Opts;
use crate::packet::{
    CAN_DO, ECHO_REQ, ECHO_RES, ERROR, GRAB_JOB_UNIQ, JOB_ASSIGN, JOB_ASSIGN_UNIQ, JOB_CREATED,
    NO_JOB, NOOP, PRE_SLEEP, SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_EPOCH, WORK_COMPLETE,
    WORK_EXCEPTION, WORK_FAIL, arg, error_text, put, put_with,
};
use crate::procfs::unix_ms;
use crate::tls::{self, Tls};

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counters shared by the event-loop threads and the main thread, which watches and measures.
pub(crate) struct Shared {
    /// Clients may start submitting.
    pub(crate) go: AtomicBool,
    pub(crate) stop: AtomicBool,
    /// When the first loop saw `go`.
    pub(crate) started: Mutex<Option<Instant>>,
    /// Jobs the workers are to complete before the run is over.
    pub(crate) job_target: u64,
    pub(crate) jobs_done: AtomicU64,
    pub(crate) jobs_end: Mutex<Option<Instant>>,
    pub(crate) workers_ready: AtomicUsize,
    /// Client requests answered (JOB_CREATED, ECHO_RES, ERROR).
    pub(crate) acked: AtomicU64,
    pub(crate) clients_done: AtomicUsize,
    pub(crate) clients_end: Mutex<Option<Instant>>,
    sent: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) latencies_us: Mutex<Vec<u32>>,
    pub(crate) lateness_us: Mutex<Vec<i64>>,
}

impl Shared {
    pub(crate) fn new(job_target: u64) -> Arc<Shared> {
        Arc::new(Shared {
            go: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            started: Mutex::new(None),
            job_target,
            jobs_done: AtomicU64::new(0),
            jobs_end: Mutex::new(None),
            workers_ready: AtomicUsize::new(0),
            acked: AtomicU64::new(0),
            clients_done: AtomicUsize::new(0),
            clients_end: Mutex::new(None),
            sent: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            latencies_us: Mutex::new(Vec::new()),
            lateness_us: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn error(&self, what: &str) {
        if self.errors.fetch_add(1, SeqCst) < 3 {
            eprintln!("load: {what}");
        }
    }

    fn job_done(&self) {
        if self.jobs_done.fetch_add(1, SeqCst) + 1 == self.job_target {
            *lock(&self.jobs_end) = Some(Instant::now());
        }
    }

    pub(crate) fn client_done(&self) {
        let now = Instant::now();
        let mut end = lock(&self.clients_end);
        *end = Some(end.map_or(now, |e| e.max(now)));
        drop(end);
        self.clients_done.fetch_add(1, SeqCst);
    }
}

/// What one client connection sends.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Submit {
    Background,
    Foreground,
    Echo,
    /// SUBMIT_JOB_EPOCH due at base + i * spread / total (whole seconds).
    Epoch {
        base: u64,
        spread: u64,
        total: u64,
    },
}

/// A client's share of the run: requests `first`, `first + stride`, ..., `n` of them, at most
/// `window` unanswered (for foreground jobs: not yet completed).
pub(crate) struct Client {
    what: Submit,
    first: u64,
    stride: u64,
    n: u64,
    window: u64,
    sent: u64,
    done: u64,
    in_flight: VecDeque<Instant>,
    by_handle: HashMap<Vec<u8>, Instant>,
    pub(crate) latencies_us: Vec<u32>,
    pub(crate) finished: bool,
}

impl Client {
    pub(crate) fn new(what: Submit, first: u64, stride: u64, n: u64, window: usize) -> Client {
        Client {
            what,
            first,
            stride,
            n,
            window: window as u64,
            sent: 0,
            done: 0,
            in_flight: VecDeque::new(),
            by_handle: HashMap::new(),
            latencies_us: Vec::new(),
            finished: n == 0,
        }
    }

    pub(crate) fn top_up(&mut self, out: &mut Vec<u8>, o: &Opts, payload: &[u8], sh: &Shared) {
        let stamp = matches!(self.what, Submit::Foreground | Submit::Echo);
        let before = self.sent;
        while self.sent < self.n && self.sent - self.done < self.window {
            let i = self.first + self.sent * self.stride;
            let func = o.func(i);
            match self.what {
                Submit::Echo => put(out, ECHO_REQ, &[payload]),
                Submit::Background | Submit::Foreground => {
                    let t = if self.what == Submit::Foreground {
                        SUBMIT_JOB
                    } else {
                        SUBMIT_JOB_BG
                    };
                    put_with(out, t, |b| {
                        b.extend_from_slice(func.as_bytes());
                        b.push(0);
                        if o.unique {
                            let _ = write!(b, "{}-{i}", o.run_id);
                        }
                        b.push(0);
                        b.extend_from_slice(payload);
                    });
                }
                Submit::Epoch {
                    base,
                    spread,
                    total,
                } => {
                    let due = base + i * spread / total.max(1);
                    put_with(out, SUBMIT_JOB_EPOCH, |b| {
                        b.extend_from_slice(func.as_bytes());
                        b.push(0);
                        if o.unique {
                            let _ = write!(b, "{}-{i}", o.run_id);
                        }
                        b.push(0);
                        let _ = write!(b, "{due}");
                        b.push(0);
                        // The data starts with the due time, for the worker to measure by.
                        let at = b.len();
                        let _ = write!(b, "{due}:");
                        let used = b.len() - at;
                        b.extend_from_slice(&payload[..payload.len().saturating_sub(used)]);
                    });
                }
            }
            if stamp {
                self.in_flight.push_back(Instant::now());
            }
            self.sent += 1;
        }
        sh.sent.fetch_add(self.sent - before, SeqCst);
    }

    fn on_packet(&mut self, ptype: u32, body: &[u8], sh: &Shared) {
        let us = |t: Instant| t.elapsed().as_micros().min(u32::MAX as u128) as u32;
        match ptype {
            JOB_CREATED => {
                sh.acked.fetch_add(1, SeqCst);
                if self.what == Submit::Foreground {
                    let t = self.in_flight.pop_front().unwrap_or_else(Instant::now);
                    self.by_handle.insert(body.to_vec(), t);
                } else {
                    self.done += 1;
                }
            }
            ECHO_RES => {
                sh.acked.fetch_add(1, SeqCst);
                let t = self.in_flight.pop_front().unwrap_or_else(Instant::now);
                self.latencies_us.push(us(t));
                self.done += 1;
            }
            WORK_COMPLETE | WORK_FAIL | WORK_EXCEPTION => {
                if let Some(t) = self.by_handle.remove(arg(body, 0, 2)) {
                    self.latencies_us.push(us(t));
                    self.done += 1;
                }
                if ptype != WORK_COMPLETE {
                    sh.error("client: a job failed");
                }
            }
            ERROR => {
                sh.acked.fetch_add(1, SeqCst);
                sh.error(&format!("client: ERROR {}", error_text(body)));
                // The request was refused; count it answered so that the run ends.
                self.in_flight.pop_front();
                self.done += 1;
            }
            _ => {}
        }
        if self.done >= self.n && !self.finished {
            self.finished = true;
            sh.client_done();
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum WorkerKind {
    /// WORK_COMPLETE with empty data (background jobs).
    Plain,
    /// WORK_COMPLETE with the job's data (foreground: the client gets it back).
    Echo,
    /// Record lateness against the due time at the front of the data.
    Future,
}

/// A worker: CAN_DO each function, then GRAB_JOB_UNIQ / WORK_COMPLETE, and PRE_SLEEP when
/// there is nothing; without a NOOP it grabs again after `--regrab-ms`, as libgearman does.
pub(crate) struct Worker {
    pub(crate) kind: WorkerKind,
    pub(crate) sleeping_since: Option<Instant>,
    pub(crate) ready: bool,
    pub(crate) lateness_us: Vec<i64>,
}

impl Worker {
    pub(crate) fn start(&mut self, out: &mut Vec<u8>, o: &Opts) {
        for f in o.funcs() {
            put(out, CAN_DO, &[f.as_bytes()]);
        }
        put(out, GRAB_JOB_UNIQ, &[]);
    }

    fn on_packet(&mut self, ptype: u32, body: &[u8], out: &mut Vec<u8>, sh: &Shared) {
        match ptype {
            JOB_ASSIGN_UNIQ | JOB_ASSIGN => {
                let (handle, data) = if ptype == JOB_ASSIGN_UNIQ {
                    (arg(body, 0, 4), arg(body, 3, 4))
                } else {
                    (arg(body, 0, 3), arg(body, 2, 3))
                };
                if self.kind == WorkerKind::Future {
                    let got = unix_ms();
                    let due: f64 = std::str::from_utf8(data)
                        .ok()
                        .and_then(|s| s.split(':').next()?.parse::<f64>().ok())
                        .unwrap_or(0.0);
                    self.lateness_us.push(((got - due * 1e3) * 1e3) as i64);
                }
                let reply: &[u8] = if self.kind == WorkerKind::Echo {
                    data
                } else {
                    b""
                };
                put(out, WORK_COMPLETE, &[handle, reply]);
                put(out, GRAB_JOB_UNIQ, &[]);
                self.sleeping_since = None;
                sh.job_done();
            }
            NO_JOB => {
                put(out, PRE_SLEEP, &[]);
                self.sleeping_since = Some(Instant::now());
                if !self.ready {
                    self.ready = true;
                    sh.workers_ready.fetch_add(1, SeqCst);
                }
            }
            NOOP => {
                put(out, GRAB_JOB_UNIQ, &[]);
                self.sleeping_since = None;
            }
            ERROR => sh.error(&format!("worker: ERROR {}", error_text(body))),
            _ => {}
        }
    }

    pub(crate) fn tick(&mut self, out: &mut Vec<u8>, regrab: Duration) {
        if self.sleeping_since.is_some_and(|t| t.elapsed() >= regrab) {
            put(out, GRAB_JOB_UNIQ, &[]);
            self.sleeping_since = None;
        }
    }
}

pub(crate) enum Role {
    Client(Client),
    Worker(Worker),
}

/// One non-blocking connection driven by an event loop.
pub(crate) struct Peer {
    pub(crate) s: mio::net::TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    pub(crate) out: Vec<u8>,
    pub(crate) opos: usize,
    pub(crate) role: Role,
    pub(crate) dead: bool,
    /// The TLS session over `s` (`--tls-ca`), or none for plaintext.
    tls: Option<Box<tls::Session>>,
}

impl Peer {
    pub(crate) fn connect(addr: SocketAddr, role: Role, tls: Option<&Tls>) -> io::Result<Peer> {
        let mut s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        let tls = match tls {
            Some(t) => Some(Box::new(t.handshake(&mut s)?)),
            None => None,
        };
        s.set_nonblocking(true)?;
        Ok(Peer {
            s: mio::net::TcpStream::from_std(s),
            buf: vec![0; 64 * 1024],
            start: 0,
            end: 0,
            out: Vec::with_capacity(16 * 1024),
            opos: 0,
            role,
            dead: false,
            tls,
        })
    }

    /// Is there output the socket has not taken yet (request bytes, or TLS records)?
    pub(crate) fn wants_flush(&self) -> bool {
        self.opos < self.out.len() || self.tls.as_deref().is_some_and(tls::wants_write)
    }

    fn write(&mut self, from: usize) -> io::Result<usize> {
        match &mut self.tls {
            Some(c) => tls::write(c, &mut self.s, &self.out[from..]),
            None => self.s.write(&self.out[from..]),
        }
    }

    fn read(&mut self, at: usize) -> io::Result<usize> {
        match &mut self.tls {
            Some(c) => tls::read(c, &mut self.s, &mut self.buf[at..]),
            None => self.s.read(&mut self.buf[at..]),
        }
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if let Some(c) = &mut self.tls {
            tls::flush(c, &mut self.s)?;
        }
        while self.opos < self.out.len() {
            match self.write(self.opos) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.opos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        self.opos = 0;
        Ok(())
    }

    /// Read until the socket is dry, serving every complete packet as it comes.
    pub(crate) fn serve(&mut self, sh: &Shared) -> io::Result<()> {
        loop {
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
            } else if self.end == self.buf.len() {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
                if self.end == self.buf.len() {
                    let n = self.buf.len() * 2;
                    self.buf.resize(n, 0);
                }
            }
            let room = self.buf.len() - self.end;
            let short = match self.read(self.end) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    self.end += n;
                    // A short read of plaintext says nothing of the socket under TLS.
                    n < room && self.tls.is_none()
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            while self.end - self.start >= 12 {
                let h = &self.buf[self.start..self.start + 12];
                let ptype = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
                let len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
                if self.end - self.start < 12 + len {
                    if 12 + len > self.buf.len() {
                        self.buf.resize(12 + len, 0);
                    }
                    break;
                }
                let body = &self.buf[self.start + 12..self.start + 12 + len];
                match &mut self.role {
                    Role::Client(c) => c.on_packet(ptype, body, sh),
                    Role::Worker(w) => w.on_packet(ptype, body, &mut self.out, sh),
                }
                self.start += 12 + len;
            }
            // A short read emptied the socket: bytes that come later raise a new
            // (edge-triggered) event, so the read that would only say EAGAIN is saved, as
            // libgearman and the servers do; the generator's own cost is not the servers'.
            if short {
                return Ok(());
            }
        }
    }
}
