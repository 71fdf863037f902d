//! The reactor's side of a cluster (`--etcd`): the two outgoing connections to etcd (unary:
//! one request in flight; watch: one streaming reply), plain or over TLS (`https://`: a
//! rustls client session in the reactor's own `Transport`, never blocking the loop),
//! connecting without blocking, trying the next URL on failure and reconnecting with backoff,
//! and the glue between the cluster machine (src/cluster/), the engine's claims and the
//! schedules it loads. Decides nothing: the machine decides about etcd, the engine about runs.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use log::warn;
use mio::net::TcpStream;
use mio::{Registry, Token};

use super::conn::transport::Transport;
use super::token::Source;
use crate::client::ClientTls;
use crate::cluster::etcd::{self, ResponseReader};
use crate::cluster::records::BackfillSpan;
use crate::cluster::{ClaimAsk, EntryOp, Link, Machine, Output, Refusal, Settings, Status};
use crate::config::{ClusterConfig, EtcdTls};
use crate::engine::{Engine, Outbox};
use crate::proto::admin::ScheduleOp;
use crate::store::PendingSpan;

/// Reconnect backoff: first wait, and the most (well inside a lease's TTL).
const BACKOFF_MIN_MS: u64 = 100;
const BACKOFF_MAX_MS: u64 = 1000;

struct Chan {
    token: Token,
    wire: Option<Transport>,
    /// The TCP connect finished.
    connected: bool,
    /// Connected and, over TLS, our side of the handshake done (reported up to the machine).
    up: bool,
    /// A reply came over this connection: etcd took it (and its TLS session). Until then a
    /// close counts as a failed connect (the next URL, a growing wait).
    proven: bool,
    /// Connecting (TCP, then the TLS handshake) must end by then (monotonic ms).
    connect_by: Option<u64>,
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
            wire: None,
            connected: false,
            up: false,
            proven: false,
            connect_by: None,
            endpoint: 0,
            wbuf: Vec::new(),
            reader: ResponseReader::new(max),
            retry_at: Some(0),
            backoff: BACKOFF_MIN_MS,
        }
    }
}

/// Why a connection to etcd ends: the bytes are done, or TLS failed (its reason label and
/// rustls's words).
enum Ending {
    Closed,
    Tls(&'static str, String),
}

pub(super) struct EtcdLink {
    endpoints: Vec<(String, SocketAddr)>,
    max_message: usize,
    request_timeout_ms: u64,
    unary: Chan,
    watch: Chan,
    pub(super) machine: Machine,
    out: Output,
    /// The schedules text pushed through etcd (`gearwheel schedules push`), which replaces
    /// the local file's until the next push; `reload schedules` loads it again.
    pub(super) pushed: Option<String>,
    /// `https://` URLs: the files (re-read on SIGHUP) and the client settings made of them.
    tls_files: Option<EtcdTls>,
    tls: Option<ClientTls>,
    /// Failed TLS sessions by reason, for /metrics.
    tls_failures: BTreeMap<&'static str, u64>,
    /// The reason last logged at WARNING: the same failure again (every backoff, for as long
    /// as a certificate is wrong) is logged at DEBUG and only counted, until a connection works.
    tls_warned: Option<&'static str>,
}

impl EtcdLink {
    /// Its sockets open now (connected or connecting).
    pub(super) fn open_sockets(&self) -> u64 {
        u64::from(self.unary.wire.is_some()) + u64::from(self.watch.wire.is_some())
    }

    /// The link `c` describes; the error says which TLS file could not be read (they were
    /// checked with the flags, so only a file changed since then).
    pub(super) fn new(c: &ClusterConfig, id: String) -> Result<EtcdLink, String> {
        let machine = Machine::new(Settings {
            cluster: c.name.clone(),
            id,
            ttl_secs: c.lease_ttl_secs as i64,
            request_timeout_ms: c.request_timeout_ms,
            max_pending_claims: 4096,
            boot: boot_id(),
            compaction_interval_ms: c.compaction_interval_ms,
        });
        let tls = match &c.tls {
            Some(files) => Some(crate::client::etcd::client_tls(files)?),
            None => None,
        };
        Ok(EtcdLink {
            endpoints: c.endpoints.clone(),
            max_message: c.max_message,
            request_timeout_ms: c.request_timeout_ms,
            unary: Chan::new(Source::Etcd(Link::Unary).token(), c.max_message),
            watch: Chan::new(Source::Etcd(Link::Watch).token(), c.max_message),
            machine,
            out: Output::default(),
            pushed: None,
            tls_files: c.tls.clone(),
            tls,
            tls_failures: BTreeMap::new(),
            tls_warned: None,
        })
    }

    /// The machine's status at `mono` (the turn's monotonic time: the machine's time, which
    /// never steps) with what only the link knows (TLS failures).
    pub(super) fn status(&self, mono: u64) -> Status {
        let mut s = self.machine.status(mono);
        s.stats.tls_failures = self.tls_failures.iter().map(|(r, n)| (*r, *n)).collect();
        s
    }

    /// SIGHUP: read the `--etcd-*` TLS files again; connections made from now on use them.
    /// A bad file keeps the current settings, and the log says why.
    pub(super) fn reload_tls(&mut self) {
        let Some(files) = &self.tls_files else {
            return;
        };
        match crate::client::etcd::client_tls(files) {
            Ok(tls) => {
                self.tls = Some(tls);
                crate::notice!(
                    "SIGHUP: etcd TLS files (--etcd-ca-file, --etcd-certificate, --etcd-key) read again"
                );
            }
            Err(e) => {
                log::error!("SIGHUP: etcd TLS files not reloaded, the current ones stay: {e}")
            }
        }
    }

    fn chan(&mut self, link: Link) -> &mut Chan {
        match link {
            Link::Unary => &mut self.unary,
            Link::Watch => &mut self.watch,
        }
    }

    fn name(&self, link: Link) -> String {
        let i = match link {
            Link::Unary => self.unary.endpoint,
            Link::Watch => self.watch.endpoint,
        };
        self.endpoints[i % self.endpoints.len()].0.clone()
    }

    /// The next time the link wants the loop back (monotonic ms).
    pub(super) fn deadline(&self) -> Option<u64> {
        [
            self.machine.next_deadline(),
            self.unary.retry_at,
            self.watch.retry_at,
            self.unary.connect_by,
            self.watch.connect_by,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The wire for a new socket: plain, or a TLS client session checked against the URL's
    /// host.
    fn wire(&self, s: TcpStream, name: &str) -> Result<Transport, String> {
        match &self.tls {
            None => Ok(Transport::plain(s)),
            #[cfg(feature = "tls")]
            Some(tls) => {
                let session = tls.session(etcd::host_name(name))?;
                Ok(Transport::tls(s, crate::tls::TlsStream::client(session)))
            }
            #[cfg(not(feature = "tls"))]
            Some(never) => {
                let _ = name;
                match *never {}
            }
        }
    }

    fn connect(&mut self, link: Link, registry: &Registry, now: u64) {
        let i = self.chan(link).endpoint % self.endpoints.len();
        let (name, addr) = self.endpoints[i].clone();
        self.chan(link).retry_at = None;
        let s = match TcpStream::connect(addr) {
            Ok(s) => s,
            Err(e) => {
                self.connect_failed(link, now, format!("cannot connect to etcd {name}: {e}"));
                return self.closed(link, registry, now, Ending::Closed);
            }
        };
        let _ = s.set_nodelay(true);
        let mut w = match self.wire(s, &name) {
            Ok(w) => w,
            Err(e) => {
                let why = Ending::Tls("other", e);
                return self.closed(link, registry, now, why);
            }
        };
        let token = self.chan(link).token;
        // Writable too, for the connect's end and whenever a write would have blocked.
        if let Err(e) = w
            .register(registry, token)
            .and_then(|()| w.want_writable(registry, token, true))
        {
            warn!("cluster: cannot register the connection to etcd {name}: {e}");
            w.deregister(registry);
            return self.closed(link, registry, now, Ending::Closed);
        }
        let by = now + self.request_timeout_ms;
        let c = self.chan(link);
        c.wire = Some(w);
        c.connect_by = Some(by);
    }

    /// A connect failed: on the unary link, one more attempt of an outage (the machine says
    /// it once, then once a minute); on the watch, which fails along with it, said only when
    /// etcd otherwise answers.
    fn connect_failed(&mut self, link: Link, now: u64, why: String) {
        match link {
            Link::Unary => self.machine.unreachable(now, &why),
            Link::Watch if self.machine.etcd_unreachable() => log::debug!("cluster: {why}"),
            Link::Watch => warn!("cluster: {why}"),
        }
    }

    /// Close a connection and say why (a TLS failure is logged and counted here); the machine
    /// is told if it knew the connection was up.
    fn closed(&mut self, link: Link, registry: &Registry, now: u64, why: Ending) {
        let name = self.name(link);
        if let Ending::Tls(reason, e) = &why {
            *self.tls_failures.entry(reason).or_default() += 1;
            let line = format!("cluster: TLS with etcd {name} ({link:?}) failed ({reason}): {e}");
            match self.tls_warned.replace(reason) {
                Some(r) if r == *reason => log::debug!("{line}"),
                _ => warn!("{line}; counted in gearwheel_etcd_tls_failures_total"),
            }
        }
        let n = self.endpoints.len();
        let max = self.max_message;
        let c = self.chan(link);
        if let Some(mut w) = c.wire.take() {
            w.deregister(registry);
        }
        let was_up = std::mem::take(&mut c.up);
        let proven = std::mem::take(&mut c.proven);
        c.connected = false;
        c.connect_by = None;
        c.wbuf.clear();
        c.reader = ResponseReader::new(max);
        if !proven {
            // Never got through: the next endpoint, after a growing wait.
            c.endpoint = (c.endpoint + 1) % n;
            c.retry_at = Some(now + c.backoff);
            c.backoff = (c.backoff * 2).min(BACKOFF_MAX_MS);
        } else {
            c.retry_at = Some(now + BACKOFF_MIN_MS);
        }
        if was_up {
            let mut out = std::mem::take(&mut self.out);
            self.machine.link(link, false, now, &mut out);
            self.out = out;
        }
    }

    /// Connecting (TCP and TLS handshake) took longer than `--etcd-request-timeout`.
    fn connect_overdue(&mut self, link: Link, registry: &Registry, now: u64) {
        let c = self.chan(link);
        if c.up || c.connect_by.is_none_or(|t| t > now) {
            return;
        }
        let ms = self.request_timeout_ms;
        let name = self.name(link);
        let c = self.chan(link);
        let why = if c.connected {
            Ending::Tls(
                "timeout",
                format!("no TLS handshake within {ms} ms (--etcd-request-timeout)"),
            )
        } else {
            let why = format!(
                "cannot connect to etcd {name}: no connection within {ms} ms (--etcd-request-timeout)"
            );
            self.connect_failed(link, now, why);
            Ending::Closed
        };
        self.closed(link, registry, now, why);
    }

    /// A readiness event on one of the two connections.
    pub(super) fn event(&mut self, link: Link, registry: &Registry, now: u64) {
        let name = self.name(link);
        let c = self.chan(link);
        let Some(w) = c.wire.as_mut() else { return };
        if !c.connected {
            match w.connected() {
                Ok(true) => c.connected = true,
                Ok(false) => return,
                Err(e) => {
                    self.connect_failed(link, now, format!("cannot connect to etcd {name}: {e}"));
                    return self.closed(link, registry, now, Ending::Closed);
                }
            }
        }
        // TLS records the session holds (the ClientHello first).
        if let Err(e) = w.flush() {
            let why = ending(w, e);
            return self.closed(link, registry, now, why);
        }
        self.read(link, registry, now);
    }

    /// Once connected and (over TLS) our side of the handshake is done: tell the machine.
    fn check_up(&mut self, link: Link, now: u64) {
        let c = self.chan(link);
        let ready = c
            .wire
            .as_ref()
            .is_some_and(|w| c.connected && !w.handshaking());
        if c.up || !ready {
            return;
        }
        c.up = true;
        c.connect_by = None;
        let mut out = std::mem::take(&mut self.out);
        self.machine.link(link, true, now, &mut out);
        self.out = out;
    }

    fn read(&mut self, link: Link, registry: &Registry, now: u64) {
        let mut buf = [0u8; 16 * 1024];
        let mut ending = None;
        let mut got = false;
        loop {
            let c = self.chan(link);
            let Some(w) = c.wire.as_mut() else { return };
            match w.read(&mut buf) {
                Ok(0) => {
                    ending = Some(match w.is_tls() && !c.proven {
                        true => Ending::Tls(
                            "closed",
                            "etcd closed the connection before answering".into(),
                        ),
                        false => Ending::Closed,
                    });
                    break;
                }
                Ok(n) => {
                    got = true;
                    c.reader.feed(&buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    ending = Some(self::ending(w, e));
                    break;
                }
            }
        }
        if got && !self.chan(link).proven {
            // Said once etcd answered: over TLS, a session it refuses ends after our side
            // of the handshake, so "connected" before that would be said at every retry.
            let tls = if self.tls.is_some() { " over TLS" } else { "" };
            crate::notice!(
                "cluster: connected to etcd {}{tls} ({link:?})",
                self.name(link)
            );
            let c = self.chan(link);
            c.proven = true;
            c.backoff = BACKOFF_MIN_MS;
            self.tls_warned = None;
        }
        self.check_up(link, now);
        if self.flush(link).is_err() && ending.is_none() {
            ending = Some(Ending::Closed);
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
        if let Some(why) = ending {
            self.closed(link, registry, now, why);
        } else if broken {
            self.closed(link, registry, now, Ending::Closed);
        }
    }

    /// Write what waits for etcd, as far as the socket takes it (nothing before the link is up).
    fn flush(&mut self, link: Link) -> io::Result<()> {
        let c = self.chan(link);
        let Some(w) = c.wire.as_mut() else {
            return Ok(());
        };
        if !c.up {
            return Ok(());
        }
        while !c.wbuf.is_empty() {
            match w.write(&c.wbuf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    c.wbuf.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        w.flush()
    }

    /// Send what the machine asked, drop what it reset, reconnect what is due.
    fn drive(&mut self, registry: &Registry, now: u64) {
        for _ in 0..8 {
            for link in std::mem::take(&mut self.out.reset) {
                self.closed(link, registry, now, Ending::Closed);
            }
            for (link, req) in std::mem::take(&mut self.out.send) {
                let host = self.name(link);
                let c = self.chan(link);
                if c.wire.is_none() || !c.up {
                    continue;
                }
                c.reader.expect(req.kind());
                etcd::encode(&req, &host, &mut c.wbuf);
                if self.flush(link).is_err() {
                    self.closed(link, registry, now, Ending::Closed);
                }
            }
            for link in [Link::Unary, Link::Watch] {
                self.connect_overdue(link, registry, now);
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

/// The reactor's side of the link, once a turn and on the loop's events: each takes what it
/// uses (the engine and outbox lent for the turn, the poller's registry, the clocks).
impl EtcdLink {
    /// Before the engine's timers, each turn: whether this server may lead now, by the
    /// monotonic clock. A leader frozen past its lease (SIGSTOP, a VM stall) wakes with
    /// timers overdue; judged on the last turn's standing it would count the times it slept
    /// through as its own misses, which were the next leader's to make.
    pub(super) fn standing(&self, engine: &mut Engine, mono: u64) {
        let status = self.machine.status(mono);
        engine.set_cluster_standing(status.is_leader, status.reachable);
    }

    /// Once a turn: hand the engine's claims to the machine, tick it, send what it asks, and
    /// hand its decisions to the engine. Returns a schedules file etcd pushed, for the loop
    /// to load as a reload would.
    pub(super) fn turn(
        &mut self,
        engine: &mut Engine,
        outbox: &mut Outbox,
        registry: &Registry,
        mono: u64,
        wall: u64,
    ) -> Option<String> {
        let now = mono;
        let mut out = std::mem::take(&mut self.out);
        self.machine.tick(now, &mut out);
        for c in outbox.claims.drain(..) {
            let ask = ClaimAsk {
                entry: c.entry.to_string(),
                nominal_ms: c.nominal_ms,
                overlap_skip: c.overlap_skip,
                unique: c.unique,
                until_ms: c.until_ms,
                wall_ms: wall,
            };
            self.machine.claim(ask, now, &mut out);
        }
        for (entry, nominal) in outbox.runs_ended.drain(..) {
            self.machine.run_ended(&entry, nominal, now, &mut out);
        }
        for (ticket, entry, op, asked) in engine.take_cluster_ops() {
            let op = match op {
                ScheduleOp::Pause => EntryOp::Pause,
                ScheduleOp::Resume => EntryOp::Resume,
                ScheduleOp::Skip => EntryOp::Skip { after_ms: asked },
                ScheduleOp::Run => EntryOp::Run,
            };
            // The engine asked only while etcd could be reached; the link may have gone since.
            if let Err(why) = self
                .machine
                .operate(ticket, entry.to_string(), op, now, &mut out)
            {
                // Logged with its answer (`cluster_op_done`).
                let why =
                    format!("{why}: the cluster did not take it (nothing changed); try again");
                out.ops_done.push((ticket, Err(why)));
            }
        }
        for (entry, account) in engine.take_cluster_accounts() {
            self.machine.history(entry, account, now, &mut out);
        }
        for (child, set) in engine.take_cluster_after_sets() {
            self.machine.after_set(child, set, now, &mut out);
        }
        for (ticket, entry, span) in engine.take_cluster_backfills() {
            // The engine asked only while etcd could be reached; the link may have gone since.
            let span = to_cluster(span);
            if let Err(why) = self
                .machine
                .backfill(ticket, entry.to_string(), span, now, &mut out)
            {
                // Logged with its answer (`cluster_op_done`).
                let why =
                    format!("{why}: the cluster did not take it (nothing changed); try again");
                out.ops_done.push((ticket, Err(why)));
            }
        }
        for (entry, front, nominal) in engine.take_cluster_backfill_runs() {
            self.machine
                .backfill_run(entry.to_string(), to_cluster(front), nominal, now, &mut out);
        }
        self.out = out;
        self.drive(registry, now);
        let decisions = std::mem::take(&mut self.out.decisions);
        let takeover = self.out.takeover.take();
        let pushed = self.out.schedules_text.take();
        let leader = self.machine.leader_id().map(str::to_string);
        engine.set_cluster_leader(leader);
        let status = self.machine.status(now);
        engine.set_cluster_standing(status.is_leader, status.reachable);
        // The cluster's operators' records first: a claim granted below may spend a skip.
        for (entry, ops, skip_pending) in std::mem::take(&mut self.out.ops) {
            engine.cluster_ops_seen(&entry, ops.paused, skip_pending, wall);
        }
        for (entry, account) in std::mem::take(&mut self.out.history) {
            engine.cluster_account_seen(&entry, &account);
        }
        for (child, set) in std::mem::take(&mut self.out.after_sets) {
            engine.cluster_after_seen(&child, &set, wall, outbox);
        }
        for (child, set) in std::mem::take(&mut self.out.after_conflicts) {
            engine.cluster_after_conflict(&child, &set, wall, outbox);
        }
        for (entry, spans) in std::mem::take(&mut self.out.backfills) {
            engine.cluster_backfill_seen(&entry, spans.into_iter().map(from_cluster).collect());
        }
        for (entry, why) in std::mem::take(&mut self.out.ops_failed) {
            warn!("schedule {entry}: an operation asked of the cluster was lost: {why}");
        }
        // After the records above: an answer shows the entry as the cluster now has it.
        for (ticket, result) in std::mem::take(&mut self.out.ops_done) {
            engine.cluster_op_done(ticket, result, outbox);
        }
        let run_now = std::mem::take(&mut self.out.run_now);
        if let Some(records) = takeover {
            engine.cluster_takeover(&records, wall, outbox);
        }
        for d in decisions {
            match d.result {
                Ok(()) => {
                    engine.claim_granted(&d.ask.entry, d.ask.nominal_ms, d.skip, wall, outbox)
                }
                Err(r) => engine.claim_refused(
                    &d.ask.entry,
                    d.ask.nominal_ms,
                    &r.to_string(),
                    r == Refusal::NotLeader,
                    matches!(r, Refusal::AlreadyClaimed { .. }),
                ),
            }
        }
        for entry in run_now {
            engine.cluster_run_now(&entry, wall, outbox);
        }
        for (entry, result) in std::mem::take(&mut self.out.backfill_runs) {
            engine.cluster_backfill_ran(&entry, result, wall, outbox);
        }
        engine.cluster_release(wall, outbox);
        pushed
    }

    /// When the link wants the loop back, on the wall clock (`wall`: the time the loop is
    /// about to sleep at; `mono`: the monotonic clock read with it).
    pub(super) fn wake_at(&self, wall: u64, mono: u64) -> Option<u64> {
        self.deadline().map(|d| wall + d.saturating_sub(mono))
    }

    /// The schedules file was loaded (from disk or etcd): publish its digests.
    pub(super) fn publish_schedules(&mut self, entries: &[crate::schedule::file::Entry]) {
        let (digest, per_entry) = crate::cluster::digest::file(entries);
        let ids = entries.iter().map(|e| e.id.clone()).collect();
        self.machine.set_schedules(digest, per_entry, ids);
    }
}

/// A backfill's span as the cluster keeps it, and back.
fn to_cluster(s: PendingSpan) -> BackfillSpan {
    BackfillSpan {
        after_ms: s.after_ms,
        to_ms: s.to_ms,
        left: s.left,
    }
}

fn from_cluster(s: BackfillSpan) -> PendingSpan {
    PendingSpan {
        after_ms: s.after_ms,
        to_ms: s.to_ms,
        left: s.left,
        backfill: true,
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
        let req = etcd::Request::LeaseRevoke { lease };
        let limit = Duration::from_millis(500);
        let once =
            crate::client::etcd::Client::call_once(host, *addr, self.tls.as_ref(), &req, limit);
        if once.is_ok() {
            crate::notice!("cluster: lease revoked; the other servers take over now");
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

/// Why a read or write on an etcd connection failed: a TLS failure (the session says why),
/// else a plain close.
fn ending(w: &Transport, e: io::Error) -> Ending {
    match w.failure() {
        Some(reason) => Ending::Tls(reason, e.to_string()),
        None => Ending::Closed,
    }
}
