//! The mio reactor: listeners, the slab of connections, read and write buffers, signals and
//! the loop. The only owner of sockets; it turns frames into requests for the engine and the
//! engine's outbox into bytes, and never decides anything about a job.

mod admin;
mod conn;
mod deadlines;
mod etcd_link;
mod gate;
mod http_conn;
mod http_console;
mod http_glue;
mod http_guard;
mod journal;
mod listen;
mod output;
mod output_bound;
mod signals;
mod tls_glue;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use log::{error, info, warn};
use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::engine::{ConnId, ConnInfo, Engine, Outbox, Shutdown};
use crate::proto::admin::AdminCommand;
use crate::proto::frame::{Incoming, decode};
use crate::proto::request::Request;
use crate::proto::response::Response;

use conn::{Connection, ReadStatus};
pub use signals::Signals;
pub use tls_glue::TlsSetup;

const SIGNAL_TOKEN: Token = Token(usize::MAX - 1);
/// Connection tokens start here; lower tokens are listeners.
const CONN_BASE: usize = 1 << 16;
/// Frames one connection may have served per loop turn before others get a go.
const FRAMES_PER_TURN: usize = 256;
/// How long a lazy reply may wait for company: 2 ticks of the loop's millisecond clock, so
/// 1 to 2 ms. Long enough for a worker on the same network to answer a short job, too short
/// for any client to notice a JOB_CREATED that comes late.
const LAZY_HOLD_MS: u64 = 2;

/// How the loop ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    /// SIGTERM, SIGINT or `shutdown`.
    Stopped,
    /// A graceful shutdown finished (or ran out of time).
    Graceful,
}

pub struct Server {
    poll: Poll,
    listeners: Vec<TcpListener>,
    local_addrs: Vec<SocketAddr>,
    conns: Slab<Connection>,
    /// The HTTP listeners, and what HTTP connections share (see http_glue.rs).
    http: http_glue::HttpGlue,
    engine: Engine,
    outbox: Outbox,
    config: Config,
    next_generation: u32,
    /// Connections with bytes to write this turn.
    pending_writes: Vec<usize>,
    /// The list being flushed, kept to reuse its allocation: no allocation per turn.
    flushing: Vec<usize>,
    /// Connections whose fairness budget ran out with frames still buffered.
    revisit: Vec<usize>,
    /// Connections to close at the end of this turn.
    to_close: Vec<usize>,
    /// Connections whose replies to their own requests wait for the turn's end (`hand_on`).
    deferred: Vec<usize>,
    /// Connections whose write waits for a lazy reply's company, with the time it came.
    corked: Vec<(usize, u64)>,
    /// Loop turns since start.
    turn: u64,
    /// When to give memory back (src/footprint.rs).
    idle_trim: crate::footprint::IdleTrim,
    signals: Option<Signals>,
    /// A graceful shutdown has begun.
    draining: bool,
    /// The schedules file, read at start, on SIGHUP and on `reload schedules`.
    schedules_path: Option<PathBuf>,
    /// The journal and its group commit (journal.rs).
    journal: journal::JournalDriver,
    /// `now` of the current loop turn.
    turn_now: u64,
    /// Unsent output of all connections against `--max-total-output` (output_bound.rs).
    output: output_bound::OutputBound,
    /// The reactor's own deadlines (deadlines.rs).
    deadlines: deadlines::Deadlines,
    /// The ACL, protected mode and the denials counted (gate.rs).
    access: gate::Gate,
    /// The connections to etcd and the cluster machine (`--etcd`), if clustered.
    cluster: Option<etcd_link::EtcdLink>,
    /// TLS listeners, sessions and handshakes (tls_glue.rs).
    tls: tls_glue::TlsGlue,
}

impl Server {
    /// Bind every listen address (`--listen`, then `--ssl-listen`); `tls` is what
    /// `TlsSetup::load` read. Fails if any cannot be bound.
    pub fn bind(config: Config, tls: TlsSetup) -> io::Result<Server> {
        let poll = Poll::new()?;
        let mut listeners = Vec::new();
        let mut local_addrs = Vec::new();
        for (i, addr) in config.listen.iter().enumerate() {
            let mut l = listen::bind(*addr, config.backlog)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
            poll.registry()
                .register(&mut l, Token(i), Interest::READABLE)?;
            local_addrs.push(l.local_addr()?);
            listeners.push(l);
        }
        let ssl_listen = config.tls.iter().flat_map(|t| t.listen.iter());
        for addr in ssl_listen {
            let i = listeners.len();
            let mut l = listen::bind(*addr, config.backlog).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot listen for TLS on {addr}: {e}"))
            })?;
            poll.registry()
                .register(&mut l, Token(i), Interest::READABLE)?;
            local_addrs.push(l.local_addr()?);
            listeners.push(l);
        }
        let tls = tls_glue::TlsGlue::new(&config, tls);
        let http = http_glue::HttpGlue::bind(&config, &poll)?;
        let mut engine = Engine::new(config.engine.clone());
        let cluster = config.cluster.as_ref().map(|c| {
            engine.set_clustered(true);
            etcd_link::EtcdLink::new(c, etcd_link::member_id(local_addrs[0]))
        });
        let idle_trim = crate::footprint::IdleTrim::new(config.idle_trim_ms);
        let output = output_bound::OutputBound::new(config.max_total_output);
        let access = gate::Gate::new(config.access.clone());
        conn::prepare_read_buffer();
        Ok(Server {
            poll,
            listeners,
            local_addrs,
            conns: Slab::new(),
            http,
            engine,
            outbox: Outbox::default(),
            config,
            next_generation: 0,
            pending_writes: Vec::new(),
            flushing: Vec::new(),
            revisit: Vec::new(),
            to_close: Vec::new(),
            deferred: Vec::new(),
            corked: Vec::new(),
            turn: 0,
            idle_trim,
            signals: None,
            draining: false,
            schedules_path: None,
            journal: journal::JournalDriver::default(),
            turn_now: 0,
            output,
            deadlines: deadlines::Deadlines::default(),
            access,
            cluster,
            tls,
        })
    }

    /// Open (creating) the journal in `dir` and put its jobs and schedule history back into
    /// the engine (reactor/journal.rs). Returns a line for the log.
    pub fn open_journal(
        &mut self,
        dir: &std::path::Path,
        fsync: crate::config::Fsync,
        repair: bool,
    ) -> Result<String, String> {
        let now = SystemClock.now_ms();
        self.journal.open(
            dir,
            fsync,
            repair,
            &self.config,
            &mut self.engine,
            &mut self.outbox,
            now,
        )
    }

    /// The `--listen` addresses actually bound (port 0 resolved).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs[..self.tls.first_tls_listener.min(self.local_addrs.len())]
    }

    /// The `--ssl-listen` addresses actually bound.
    pub fn ssl_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs[self.tls.first_tls_listener.min(self.local_addrs.len())..]
    }

    /// The listeners that speak plaintext (the ones protected mode guards), HTTP included.
    fn plaintext_addrs(&self) -> impl Iterator<Item = &SocketAddr> {
        let https = self.tls.https();
        let gearman = self.local_addrs.iter().enumerate();
        let gearman = gearman.filter(|(i, _)| !self.tls.listener_is_tls(*i, false));
        let http = self.http_addrs().iter().filter(move |_| !https);
        gearman.map(|(_, a)| a).chain(http)
    }

    /// `--ssl`: every listener speaks TLS.
    pub fn tls_everywhere(&self) -> bool {
        self.tls.https()
    }

    /// Load the schedules file for the first time (`@reboot` entries fire, missed runs of
    /// `catchup=last` entries are made up). Returns the entries' count and what the load did;
    /// errors name the file, line and column.
    pub fn load_schedules(
        &mut self,
        path: PathBuf,
    ) -> Result<(usize, crate::engine::LoadReport), Vec<String>> {
        let now = SystemClock.now_ms();
        let file = read_schedules(&path, &self.config.engine.zone)?;
        let n = file.entries.len();
        self.cluster_schedules(&file.entries);
        if !self.journal.enabled() {
            let last = crate::schedule::file::Catchup::Last;
            for e in file.entries.iter().filter(|e| e.catchup == last) {
                warn!(
                    "schedule {}: without --data-dir, catchup=last cannot make up runs missed while the server was down",
                    e.id
                );
            }
        }
        let report = self
            .engine
            .load_schedules(file, now, true, &mut self.outbox);
        self.schedules_path = Some(path);
        Ok((n, report))
    }

    /// Read the schedules file again. A file with any error leaves the running schedule as it
    /// is; every error is logged and the first is returned.
    fn reload_schedules(&mut self, now: u64) -> Result<usize, String> {
        let pushed = self.cluster.as_ref().and_then(|l| l.pushed.clone());
        // A file pushed through etcd stays the running one until the next push.
        let (name, read) = match (pushed, &self.schedules_path) {
            (Some(text), _) => (
                "the schedules file pushed to etcd".to_string(),
                crate::schedule::file::parse(&text, &self.config.engine.zone)
                    .map_err(|e| e.iter().map(|e| format!("pushed schedules:{e}")).collect()),
            ),
            (None, Some(path)) => (
                path.display().to_string(),
                read_schedules(path, &self.config.engine.zone),
            ),
            (None, None) => {
                return Err("no schedules file (start with --schedules FILE)".into());
            }
        };
        match read {
            Ok(file) => {
                let n = file.entries.len();
                self.cluster_schedules(&file.entries);
                let kept = self
                    .engine
                    .load_schedules(file, now, false, &mut self.outbox)
                    .kept;
                info!(
                    "reloaded {name}: {}, next run kept for {kept}",
                    crate::plural::count(n as u64, "entry", "entries")
                );
                Ok(n)
            }
            Err(errors) => {
                for e in &errors {
                    error!("{e}");
                }
                error!("reload of {name} refused; the running schedule is unchanged");
                Err(errors.into_iter().next().unwrap_or_default())
            }
        }
    }

    /// Let the loop react to SIGTERM, SIGINT, SIGUSR1 and SIGHUP.
    pub fn set_signals(&mut self, mut s: Signals) -> io::Result<()> {
        self.poll
            .registry()
            .register(s.receiver(), SIGNAL_TOKEN, Interest::READABLE)?;
        self.signals = Some(s);
        Ok(())
    }

    /// Run until stopped.
    pub fn run(&mut self) -> io::Result<Exit> {
        let clock = SystemClock;
        let mut events = Events::with_capacity(1024);
        loop {
            let now = clock.now_ms();
            if !self.busy() && self.idle_trim.due(now, self.turn == 1) {
                // About to sleep after start-up or a quiet spell: give back what the work
                // mapped and freed (src/footprint.rs).
                match crate::footprint::trim() {
                    Ok(n) => log::debug!("idle trim: {} kB of mappings dropped", n >> 10),
                    Err(e) => log::debug!("idle trim: mappings kept: {e}"),
                }
                continue;
            }
            let timeout = self.sleep_time(now);
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let now = clock.now_ms();
            self.turn_now = now;
            self.turn += 1;
            if !events.is_empty() {
                self.idle_trim.activity(now);
            }
            for ev in events.iter() {
                match ev.token() {
                    etcd_link::ETCD_UNARY | etcd_link::ETCD_WATCH => self.etcd_event(ev.token()),
                    SIGNAL_TOKEN => {
                        if let Some(exit) = self.on_signals(now) {
                            // Whatever this turn already made durable is written first.
                            self.journal.close(&mut self.engine, &mut self.outbox, now);
                            self.cluster_resign();
                            return Ok(exit);
                        }
                    }
                    Token(t) if t < CONN_BASE => self.accept(t),
                    Token(t) => {
                        let idx = t - CONN_BASE;
                        if ev.is_read_closed() || ev.is_error() {
                            if let Some(c) = self.conns.get_mut(idx) {
                                c.set_hung_up();
                            }
                        }
                        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                            self.read_conn(idx, now);
                            self.hand_on(idx, now);
                        }
                        if ev.is_writable() {
                            self.pending_writes.push(idx);
                        }
                    }
                }
            }
            for idx in std::mem::take(&mut self.revisit) {
                self.read_conn(idx, now);
            }
            self.engine.on_time(now, &mut self.outbox);
            self.on_deadlines(now);
            self.cluster_turn(now);
            self.resume_paused(now);
            // The replies `hand_on` kept for the turn's end.
            self.pending_writes.append(&mut self.deferred);
            self.dispatch();
            self.uncork();
            self.finish_turn(now);
            self.output_turn_end(now);
            self.http_sample_rates(now);
            self.journal.compact_step();
            if let Some(exit) = self.check_shutdown(now) {
                self.flush_all();
                self.journal.close(&mut self.engine, &mut self.outbox, now);
                self.cluster_resign();
                return Ok(exit);
            }
        }
    }

    /// Work is waiting that the next turn must do without sleeping.
    fn busy(&self) -> bool {
        // The first turn finishes start-up's own work (its journal commit, @reboot runs)
        // before the loop first sleeps.
        self.turn == 0
            || !self.revisit.is_empty()
            || self.journal.compacting()
            || !self.outbox.resumed.is_empty()
    }

    fn sleep_time(&self, now: u64) -> Option<Duration> {
        if self.busy() {
            return Some(Duration::ZERO);
        }
        if self.journal.failing() {
            return Some(Duration::from_millis(100));
        }
        // No deadline: sleep until a socket or a signal wakes us; an idle server never ticks.
        let deadline = [
            self.engine.next_deadline(),
            self.deadlines.next(),
            self.journal.deadline(),
            self.idle_trim.deadline(),
            self.output.deadline(),
            self.cluster_sleep(now),
            self.corked
                .iter()
                .map(|&(_, since)| since.min(now) + LAZY_HOLD_MS)
                .min(),
        ]
        .into_iter()
        .flatten()
        .min();
        deadline.map(|d| Duration::from_millis(d.saturating_sub(now)))
    }

    /// Act on the reactor's deadlines that passed (up to `DEADLINES_PER_TURN`; the rest are
    /// due at once on the next turn).
    fn on_deadlines(&mut self, now: u64) {
        for _ in 0..deadlines::DEADLINES_PER_TURN {
            let Some((key, what)) = self.deadlines.due(now) else {
                return;
            };
            match what {
                deadlines::Deadline::TlsHandshake(_) => self.tls_deadline(key, what),
                _ => self.http_deadline(key, what),
            }
        }
    }

    fn on_signals(&mut self, now: u64) -> Option<Exit> {
        let s = self.signals.as_mut()?;
        let got = s.take();
        if got.reopen_log {
            if crate::logger::to_file() {
                info!("SIGHUP: reopening the log file");
                crate::logger::reopen();
            }
            if self.schedules_path.is_some() {
                let _ = self.reload_schedules(now);
            }
            if self.access.has_acl() {
                let _ = self.reload_acl(now);
            }
            self.tls_reload();
        }
        if got.stop {
            info!("stop signal: shutting down");
            return Some(Exit::Stopped);
        }
        if got.graceful {
            self.begin_graceful(now);
        }
        None
    }

    fn begin_graceful(&mut self, now: u64) {
        if self.draining {
            return;
        }
        self.draining = true;
        info!(
            "graceful shutdown: no longer accepting Gearman connections (HTTP: health and metrics only); waiting up to {}s for {}",
            self.config.graceful_timeout.as_secs(),
            crate::plural::count(
                self.engine.running_jobs() as u64,
                "running job",
                "running jobs"
            )
        );
        for mut l in self.listeners.drain(..) {
            let _ = self.poll.registry().deregister(&mut l);
        }
        // The HTTP listener stays, for health and metrics only (http::route::while_draining),
        // so that a load balancer sees `503 draining` until the drain ends.
        self.engine
            .begin_drain(now, self.config.graceful_timeout.as_millis() as u64);
    }

    fn check_shutdown(&mut self, now: u64) -> Option<Exit> {
        match self.outbox.shutdown.take() {
            Some(Shutdown::Immediate) => return Some(Exit::Stopped),
            Some(Shutdown::Graceful) => self.begin_graceful(now),
            None => {}
        }
        if self.draining && self.engine.drain_done() {
            info!(
                "graceful shutdown: done ({} still running); exiting",
                crate::plural::count(self.engine.running_jobs() as u64, "job", "jobs")
            );
            return Some(Exit::Graceful);
        }
        None
    }

    fn accept(&mut self, li: usize) {
        let http = li >= http_glue::HTTP_LISTENER_BASE;
        loop {
            let listener = if http {
                self.http.listener(li)
            } else {
                self.listeners.get(li)
            };
            let Some(listener) = listener else {
                return;
            };
            let (stream, peer) = match listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE and friends: log and try again on the next readiness event.
                    error!("accept failed: {e}");
                    return;
                }
            };
            if self.conns.len() >= self.config.max_connections {
                warn!(
                    "refusing connection from {peer}: --max-connections {} reached",
                    self.config.max_connections
                );
                self.http.refused();
                drop(stream);
                continue;
            }
            let _ = stream.set_nodelay(true);
            if let Some(k) = &self.config.keepalive {
                listen::set_keepalive(&stream, k);
            }
            let session = match self.tls_session(li, http) {
                Ok(s) => s,
                Err(e) => {
                    error!("cannot start TLS with {peer}: {e}");
                    continue;
                }
            };
            let tls = session.is_some();
            let local = if http {
                self.http_addrs().get(li - http_glue::HTTP_LISTENER_BASE)
            } else {
                self.local_addrs.get(li)
            };
            // Protected mode is for plaintext listeners: a TLS one is not refused by it.
            let access = match local {
                Some(_) if tls => gate::Access::new(peer.ip(), false),
                Some(&local) => self.access_for(peer.ip(), local),
                None => gate::Access::new(peer.ip(), true),
            };
            let entry = self.conns.vacant_entry();
            let idx = entry.key();
            let id = ConnId {
                index: idx as u32,
                generation: self.next_generation.wrapping_add(1),
            };
            let registration = (self.poll.registry(), Token(CONN_BASE + idx));
            let c = match Connection::accept(stream, peer, id, registration, session, access) {
                Ok(c) => c,
                Err(e) => {
                    error!("cannot register connection from {peer}: {e}");
                    continue;
                }
            };
            self.next_generation = id.generation;
            let info = ConnInfo {
                fd: c.fd(),
                ip: peer.ip().to_canonical().to_string(),
            };
            entry.insert(c);
            self.engine.connect(id, info);
            if tls {
                self.tls_accepted(idx, self.turn_now);
            }
            self.http_accepted(idx, http);
        }
    }

    /// Read a connection and serve what came; for TLS, then see to its handshake and the
    /// records the session made.
    fn read_conn(&mut self, idx: usize, now: u64) {
        let tls = self.conns.get(idx).is_some_and(|c| c.is_tls());
        self.read_plaintext(idx, now);
        if tls {
            self.tls_after_read(idx);
        }
    }

    fn read_plaintext(&mut self, idx: usize, now: u64) {
        if self.output_held(idx) {
            return;
        }
        let Some(c) = self.conns.get_mut(idx) else {
            return;
        };
        if c.is_http() {
            return self.read_http(idx, now);
        }
        if !c.serving() {
            return;
        }
        if c.paused {
            c.read_deferred = true;
            return;
        }
        let status = if c.read_closed() {
            Ok(ReadStatus::Eof)
        } else {
            c.fill(&self.config.limits)
        };
        if c.starts_with_tls_handshake() {
            // 0x16 never starts a Gearman packet or admin line; as an admin line it would
            // wait for a newline the TLS client never sends.
            warn!(
                "connection {idx} from {}: a TLS handshake on a plaintext Gearman port; closed",
                c.peer()
            );
            self.mark_close(idx);
            return;
        }
        if c.handshake.is_some() {
            self.tls_handshake_check(idx);
        }
        self.process_frames(idx, now);
        let Some(c) = self.conns.get_mut(idx) else {
            return;
        };
        match status {
            Ok(ReadStatus::Drained) => {}
            Ok(ReadStatus::Capped) => {
                if c.serving() && !self.revisit.contains(&idx) {
                    self.revisit.push(idx);
                }
            }
            Ok(ReadStatus::Eof) => {
                // Answer everything asked before the peer shut its side, then close.
                c.set_read_closed();
                if c.paused {
                    // Frames after a held GRAB are still to be served: on resumption.
                    c.read_deferred = true;
                    return;
                }
                if self.revisit.contains(&idx) {
                    return;
                }
                c.close_after_flush();
                if !c.write_pending {
                    c.write_pending = true;
                    self.pending_writes.push(idx);
                }
            }
            Err(e) => {
                info!("connection {idx} read error: {e}");
                self.mark_close(idx);
            }
        }
    }

    /// Decode and serve up to FRAMES_PER_TURN frames of one connection.
    fn process_frames(&mut self, idx: usize, now: u64) {
        let mut served = 0;
        loop {
            let Some(c) = self.conns.get_mut(idx) else {
                return;
            };
            if !c.serving() || c.paused || c.output_held {
                return;
            }
            if served == FRAMES_PER_TURN {
                if !self.revisit.contains(&idx) {
                    self.revisit.push(idx);
                }
                return;
            }
            let id = c.id;
            match decode(&mut c.rbuf, &self.config.limits) {
                Ok(None) => {
                    c.release_idle_buffer();
                    return;
                }
                Ok(Some(Incoming::Packet(frame))) => match Request::parse(&frame) {
                    Ok(req) => {
                        self.enter_packet(idx, id, req, now);
                        if self.engine.input_paused(id) {
                            if let Some(c) = self.conns.get_mut(idx) {
                                c.paused = true;
                            }
                            return;
                        }
                    }
                    Err(e) => self.engine.reject(id, e, &mut self.outbox),
                },
                Ok(Some(Incoming::Admin(line))) => {
                    self.admin(idx, id, AdminCommand::parse(&line), now)
                }
                Err(e) => {
                    let reply = match e.error_packet() {
                        Some((code, text)) => Response::error(code, text),
                        None => Response::text("ERR LINE_TOO_LONG Admin+line+is+too+long\r\n"),
                    };
                    warn!("closing connection {idx}: {e:?}");
                    self.outbox.push(id, reply);
                    c.close_after_flush();
                    c.rbuf.clear();
                    return;
                }
            }
            served += 1;
        }
    }

    /// Serve the connections whose held GRAB the engine answered: what they sent after it is
    /// in their buffer (served now) or still in the socket (read on the next turn).
    fn resume_paused(&mut self, now: u64) {
        while let Some(id) = self.outbox.resumed.pop() {
            let idx = id.index as usize;
            let Some(c) = self.conns.get_mut(idx).filter(|c| c.id == id) else {
                continue;
            };
            c.paused = false;
            if std::mem::take(&mut c.read_deferred) {
                if !self.revisit.contains(&idx) {
                    self.revisit.push(idx);
                }
            } else if !c.rbuf.is_empty() {
                self.process_frames(idx, now);
            }
        }
    }
}

/// Read and parse a schedules file; errors as `FILE:LINE:COL: message`.
pub fn read_schedules(
    path: &std::path::Path,
    zone: &crate::schedule::Zone,
) -> Result<crate::schedule::file::ScheduleFile, Vec<String>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| vec![format!("{}: {e}", path.display())])?;
    match crate::schedule::file::parse(&text, zone) {
        Ok(f) => {
            for w in &f.warnings {
                warn!("{}:{w}", path.display());
            }
            Ok(f)
        }
        Err(errors) => Err(errors
            .iter()
            .map(|e| format!("{}:{e}", path.display()))
            .collect()),
    }
}
