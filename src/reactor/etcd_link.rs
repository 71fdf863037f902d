//! The reactor's side of a cluster (`--etcd`): the two outgoing connections to etcd (unary:
//! one request in flight; watch: one streaming reply), connecting without blocking, trying
//! the next URL on failure and reconnecting with backoff, and the glue between the cluster
//! machine (src/cluster/), the engine's claims and the schedules it loads. Decides nothing:
//! the machine decides about etcd, the engine about runs.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

use log::{info, warn};
use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

use super::Server;
use crate::cluster::etcd::{self, ResponseReader};
use crate::cluster::{ClaimAsk, Link, Machine, Output, Refusal, Settings};
use crate::config::ClusterConfig;

/// The two etcd connections' tokens: reserved at the top, next to the signal pipe's.
pub(super) const ETCD_UNARY: Token = Token(usize::MAX - 2);
pub(super) const ETCD_WATCH: Token = Token(usize::MAX - 3);
/// Reconnect backoff: first wait, and the most (well inside a lease's TTL).
const BACKOFF_MIN_MS: u64 = 100;
const BACKOFF_MAX_MS: u64 = 1000;

struct Chan {
    token: Token,
    stream: Option<TcpStream>,
    /// The connect finished (reported up to the machine).
    up: bool,
    /// Which endpoint it talks to (index into the endpoints).
    endpoint: usize,
    wbuf: Vec<u8>,
    reader: ResponseReader,
    /// When to connect again (monotonic ms), if closed.
    retry_at: Option<u64>,
    backoff: u64,
}

impl Chan {
    fn new(token: Token, max: usize) -> Chan {
        Chan {
            token,
            stream: None,
            up: false,
            endpoint: 0,
            wbuf: Vec::new(),
            reader: ResponseReader::new(max),
            retry_at: Some(0),
            backoff: BACKOFF_MIN_MS,
        }
    }
}

pub(super) struct EtcdLink {
    endpoints: Vec<(String, SocketAddr)>,
    max_message: usize,
    unary: Chan,
    watch: Chan,
    pub(super) machine: Machine,
    start: Instant,
    out: Output,
    /// The schedules text pushed through etcd (`gearwheel schedules push`), which replaces
    /// the local file's until the next push; `reload schedules` loads it again.
    pub(super) pushed: Option<String>,
}

impl EtcdLink {
    pub(super) fn new(c: &ClusterConfig, id: String) -> EtcdLink {
        let machine = Machine::new(Settings {
            cluster: c.name.clone(),
            id,
            ttl_secs: c.lease_ttl_secs as i64,
            request_timeout_ms: c.request_timeout_ms,
            max_pending_claims: 4096,
            boot: boot_id(),
        });
        EtcdLink {
            endpoints: c.endpoints.clone(),
            max_message: c.max_message,
            unary: Chan::new(ETCD_UNARY, c.max_message),
            watch: Chan::new(ETCD_WATCH, c.max_message),
            machine,
            start: Instant::now(),
            out: Output::default(),
            pushed: None,
        }
    }

    /// Monotonic milliseconds since start (the machine's time; never steps).
    pub(super) fn mono(&self) -> u64 {
        self.start.elapsed().as_millis() as u64 + 1
    }

    fn chan(&mut self, link: Link) -> &mut Chan {
        match link {
            Link::Unary => &mut self.unary,
            Link::Watch => &mut self.watch,
        }
    }

    /// The next time the link wants the loop back (monotonic ms).
    pub(super) fn deadline(&self) -> Option<u64> {
        [
            self.machine.next_deadline(),
            self.unary.retry_at,
            self.watch.retry_at,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn connect(&mut self, link: Link, registry: &Registry, now: u64) {
        let endpoints = self.endpoints.clone();
        let c = self.chan(link);
        c.retry_at = None;
        let (name, addr) = &endpoints[c.endpoint % endpoints.len()];
        match TcpStream::connect(*addr) {
            Ok(mut s) => {
                let _ = s.set_nodelay(true);
                if let Err(e) =
                    registry.register(&mut s, c.token, Interest::READABLE | Interest::WRITABLE)
                {
                    warn!("cluster: cannot register the connection to etcd {name}: {e}");
                    self.closed(link, registry, now, false);
                    return;
                }
                c.stream = Some(s);
            }
            Err(e) => {
                warn!("cluster: cannot connect to etcd {name}: {e}");
                self.closed(link, registry, now, false);
            }
        }
    }

    /// Close a connection; `report`: tell the machine (it did not close it itself).
    fn closed(&mut self, link: Link, registry: &Registry, now: u64, report: bool) {
        let n = self.endpoints.len();
        let max = self.max_message;
        let c = self.chan(link);
        if let Some(mut s) = c.stream.take() {
            let _ = registry.deregister(&mut s);
        }
        let was_up = std::mem::take(&mut c.up);
        c.wbuf.clear();
        c.reader = ResponseReader::new(max);
        if !was_up {
            // Never got through: the next endpoint, after a growing wait.
            c.endpoint = (c.endpoint + 1) % n;
            c.retry_at = Some(now + c.backoff);
            c.backoff = (c.backoff * 2).min(BACKOFF_MAX_MS);
        } else {
            c.retry_at = Some(now + BACKOFF_MIN_MS);
        }
        if was_up && report {
            let mut out = std::mem::take(&mut self.out);
            self.machine.link(link, false, now, &mut out);
            self.out = out;
        }
    }

    /// A readiness event on one of the two connections.
    fn event(&mut self, link: Link, registry: &Registry, now: u64) {
        let name = {
            let c = self.chan(link);
            c.endpoint
        };
        let name = self.endpoints[name % self.endpoints.len()].0.clone();
        let c = self.chan(link);
        let Some(s) = c.stream.as_mut() else { return };
        if !c.up {
            match s.take_error() {
                Ok(None) => {}
                Ok(Some(e)) | Err(e) => {
                    warn!("cluster: cannot connect to etcd {name}: {e}");
                    return self.closed(link, registry, now, false);
                }
            }
            match s.peer_addr() {
                Ok(_) => {
                    c.up = true;
                    c.backoff = BACKOFF_MIN_MS;
                    info!("cluster: connected to etcd {name} ({link:?})");
                    let mut out = std::mem::take(&mut self.out);
                    self.machine.link(link, true, now, &mut out);
                    self.out = out;
                }
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                Err(e) => {
                    warn!("cluster: cannot connect to etcd {name}: {e}");
                    return self.closed(link, registry, now, false);
                }
            }
        }
        if self.flush(link).is_err() {
            return self.closed(link, registry, now, true);
        }
        self.read(link, registry, now);
    }

    fn read(&mut self, link: Link, registry: &Registry, now: u64) {
        let mut buf = [0u8; 16 * 1024];
        let mut eof = false;
        loop {
            let c = self.chan(link);
            let Some(s) = c.stream.as_mut() else { return };
            match s.read(&mut buf) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => c.reader.feed(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    eof = true;
                    break;
                }
            }
        }
        let mut out = std::mem::take(&mut self.out);
        let mut broken = false;
        while let Some(r) = self.chan(link).reader.next() {
            // A reply that cannot be read leaves the stream's framing unknown: start over.
            if matches!(
                r,
                Err(etcd::EtcdError::Malformed(_) | etcd::EtcdError::TooLarge)
            ) {
                broken = true;
            }
            self.machine.reply(link, r, now, &mut out);
            if broken {
                break;
            }
        }
        self.out = out;
        if eof || broken {
            self.closed(link, registry, now, true);
        }
    }

    fn flush(&mut self, link: Link) -> io::Result<()> {
        let c = self.chan(link);
        let Some(s) = c.stream.as_mut() else {
            return Ok(());
        };
        if !c.up {
            return Ok(());
        }
        while !c.wbuf.is_empty() {
            match s.write(&c.wbuf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    c.wbuf.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Send what the machine asked, drop what it reset, reconnect what is due.
    fn drive(&mut self, registry: &Registry, now: u64) {
        for _ in 0..8 {
            for link in std::mem::take(&mut self.out.reset) {
                self.closed(link, registry, now, false);
            }
            for (link, req) in std::mem::take(&mut self.out.send) {
                let host = {
                    let c = self.chan(link);
                    c.endpoint % self.endpoints.len()
                };
                let host = self.endpoints[host].0.clone();
                let c = self.chan(link);
                if c.stream.is_none() || !c.up {
                    continue;
                }
                c.reader.expect(req.kind());
                etcd::encode(&req, &host, &mut c.wbuf);
                if self.flush(link).is_err() {
                    self.closed(link, registry, now, true);
                }
            }
            for link in [Link::Unary, Link::Watch] {
                if self.chan(link).retry_at.is_some_and(|t| t <= now) {
                    self.connect(link, registry, now);
                }
            }
            if self.out.send.is_empty() && self.out.reset.is_empty() {
                return;
            }
        }
    }
}

impl Server {
    /// A readiness event on an etcd connection.
    pub(super) fn etcd_event(&mut self, token: Token) {
        let Some(l) = self.cluster.as_mut() else {
            return;
        };
        let now = l.mono();
        let link = if token == ETCD_UNARY {
            Link::Unary
        } else {
            Link::Watch
        };
        l.event(link, self.poll.registry(), now);
    }

    /// Once a turn: hand the engine's claims to the machine, tick it, send what it asks, and
    /// hand its decisions to the engine.
    pub(super) fn cluster_turn(&mut self, wall: u64) {
        let Some(l) = self.cluster.as_mut() else {
            return;
        };
        let now = l.mono();
        let mut out = std::mem::take(&mut l.out);
        l.machine.tick(now, &mut out);
        for c in self.outbox.claims.drain(..) {
            let ask = ClaimAsk {
                entry: c.entry.to_string(),
                nominal_ms: c.nominal_ms,
                overlap_skip: c.overlap_skip,
                unique: c.unique,
                until_ms: c.until_ms,
                wall_ms: wall,
            };
            l.machine.claim(ask, now, &mut out);
        }
        for (entry, nominal) in self.outbox.runs_ended.drain(..) {
            l.machine.run_ended(&entry, nominal, now, &mut out);
        }
        l.out = out;
        l.drive(self.poll.registry(), now);
        let decisions = std::mem::take(&mut l.out.decisions);
        let takeover = l.out.takeover.take();
        let pushed = l.out.schedules_text.take();
        let leader = l.machine.leader_id().map(str::to_string);
        self.engine.set_cluster_leader(leader);
        if let Some(records) = takeover {
            self.engine
                .cluster_takeover(&records, wall, &mut self.outbox);
        }
        for d in decisions {
            match d.result {
                Ok(()) => self.engine.claim_granted(
                    &d.ask.entry,
                    d.ask.nominal_ms,
                    wall,
                    &mut self.outbox,
                ),
                Err(r) => self.engine.claim_refused(
                    &d.ask.entry,
                    d.ask.nominal_ms,
                    &r.to_string(),
                    r == Refusal::NotLeader,
                ),
            }
        }
        if let Some(text) = pushed {
            self.load_pushed_schedules(text, wall);
        }
        // Claims made by a takeover's catch-up go out this turn.
        if !self.outbox.claims.is_empty() {
            self.cluster_turn(wall);
        }
    }

    /// At exit: give the leadership up at once (see `EtcdLink::resign`).
    pub(super) fn cluster_resign(&mut self) {
        if let Some(l) = self.cluster.as_mut() {
            l.resign();
        }
    }

    /// Milliseconds from now until the link wants the loop back.
    pub(super) fn cluster_sleep(&self, wall: u64) -> Option<u64> {
        let l = self.cluster.as_ref()?;
        let now = l.mono();
        l.deadline().map(|d| wall + d.saturating_sub(now))
    }

    /// The schedules file was loaded (from disk or etcd): publish its digests.
    pub(super) fn cluster_schedules(&mut self, entries: &[crate::schedule::file::Entry]) {
        let Some(l) = self.cluster.as_mut() else {
            return;
        };
        let (digest, per_entry) = crate::cluster::digest::file(entries);
        let ids = entries.iter().map(|e| e.id.clone()).collect();
        l.machine.set_schedules(digest, per_entry, ids);
    }

    /// `gearwheel schedules push` stored a file in etcd: load it as a reload would (the same
    /// validation; a refused file leaves the running schedule and the last pushed text).
    fn load_pushed_schedules(&mut self, text: String, wall: u64) {
        let Some(l) = self.cluster.as_mut() else {
            return;
        };
        let before = l.pushed.replace(text);
        if self.reload_schedules(wall).is_err() {
            if let Some(l) = self.cluster.as_mut() {
                l.pushed = before;
            }
        }
    }
}

/// This server's id in the cluster: its first Gearman listen address, with the host name in
/// place of an unspecified address (0.0.0.0 would name every server alike).
pub(super) fn member_id(addr: SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        format!("{}:{}", crate::config::hostname(), addr.port())
    } else {
        addr.to_string()
    }
}

impl EtcdLink {
    /// At exit: revoke the lease, so that the others take over at once instead of after the
    /// TTL (a planned restart is not a failover). Blocking, bounded to half a second, and
    /// only at exit; a failure changes nothing (the lease then ends by itself).
    pub(super) fn resign(&mut self) {
        let Some(lease) = self.machine.lease() else {
            return;
        };
        let (host, addr) = &self.endpoints[self.unary.endpoint % self.endpoints.len()];
        let limit = std::time::Duration::from_millis(500);
        let Ok(mut s) = std::net::TcpStream::connect_timeout(addr, limit) else {
            return;
        };
        let _ = s.set_read_timeout(Some(limit));
        let _ = s.set_write_timeout(Some(limit));
        let req = etcd::Request::LeaseRevoke { lease };
        let mut buf = Vec::new();
        etcd::encode(&req, host, &mut buf);
        if s.write_all(&buf).is_err() {
            return;
        }
        let mut reader = ResponseReader::new(self.max_message);
        reader.expect(req.kind());
        let mut chunk = [0u8; 4096];
        let end = Instant::now() + limit;
        while Instant::now() < end {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => reader.feed(&chunk[..n]),
            }
            if let Some(r) = reader.next() {
                if r.is_ok() {
                    info!("cluster: lease revoked; the other servers take over now");
                }
                break;
            }
        }
    }
}

/// Names this start of the process for the cluster's run records: the pid and the start time
/// (a restarted server under the same address gets another).
fn boot_id() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("{}-{ms}", std::process::id())
}
