//! The mio reactor: listeners, the slab of connections, read and write buffers, signals and
//! the loop. The only owner of sockets; it turns frames into requests for the engine and the
//! engine's outbox into bytes, and never decides anything about a job.
//!
//! This file: `Server`, the loop and one turn, the sleep until the next deadline, and the
//! glue that lends several parts at once: the signals' effects, accept, the gate's calls,
//! the ACL and schedules reloads, the turn's write side (dispatch, hand on, finish).
//!
//! - `token`: the one token space: what each mio `Token` names.
//! - `accept`: `Listeners`, bound, accept, `--max-connections`; `listen`: socket options.
//! - `door`: who is let in at accept (room for loopback and served peers).
//! - `conn/`: the connections, their transport and the turn's write side.
//! - `gearman`: the Gearman read path, and the admin lines the loop answers itself.
//! - `gate`: `Gate`, the one gate into the engine (ACL, protected mode, denials counted).
//! - `audit`: operators' actions that passed the gate, handed to the audit trail.
//! - `http/`: the HTTP listener, its connections, the console and the guard.
//! - `tls_glue`: TLS listeners, sessions, handshakes and certificate reloads.
//! - `etcd_link`: the connections to etcd and the cluster machine.
//! - `hooks`: the webhook client, POSTing the alerts the engine queues for URLs.
//! - `journal`: the journal driver and its group commit.
//! - `schedules`: `Schedules`, the schedules file read and reloaded.
//! - `deadlines`: the reactor's own timer wheel; `time`: the loop's clock and its reading.
//! - `stats`: `Stats`, the reactor-wide counters for /metrics.
//! - `signals`: signals as loop events; `shutdown`: `Drain`, the graceful drain.
//! - `embedded`: a server on a thread with a manual clock, for tests.

mod accept;
mod audit;
mod conn;
mod deadlines;
mod door;
mod embedded;
mod etcd_link;
mod gate;
mod gearman;
mod hooks;
mod http;
mod journal;
mod listen;
mod schedules;
mod shutdown;
mod signals;
mod stats;
mod time;
mod tls_glue;
mod token;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mio::{Events, Interest, Poll};

use crate::access::classify::{self, Need};
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::engine::{ConnId, Engine, Outbox};
use crate::http::parse::Bearer;
use crate::proto::request::Request;
use crate::proto::response::Response;

use conn::Conns;
use deadlines::Deadline;
pub use embedded::Embedded;
use gate::Denial;
pub use schedules::read_schedules;
pub use signals::Signals;
use time::Time;
pub use tls_glue::TlsSetup;
use token::{Listener, Source};

/// Frames one connection may have served per loop turn before others get a go.
const FRAMES_PER_TURN: usize = 256;

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
    /// The Gearman listeners and their accept retries (accept.rs).
    listeners: accept::Listeners,
    /// The connections and the turn's lists about them (conn/conns.rs).
    conns: Conns,
    /// The HTTP listeners, and what HTTP connections share (http/).
    http: http::HttpGlue,
    /// Boxed: the server is moved on the stack at start-up (footprint.rs keeps it small),
    /// and the engine grows with every capability; one pointer costs nothing per request.
    engine: Box<Engine>,
    outbox: Outbox,
    config: Config,
    /// The clock and the turn's reading of it.
    time: Time,
    /// When to give memory back (src/footprint.rs).
    idle_trim: crate::footprint::IdleTrim,
    signals: Option<Signals>,
    /// Whether a graceful shutdown has begun (shutdown.rs).
    drain: shutdown::Drain,
    /// The schedules file, read at start, on SIGHUP and on `reload schedules` (schedules.rs).
    schedules: schedules::Schedules,
    /// The journal and its group commit (journal.rs).
    journal: journal::JournalDriver,
    /// The reactor's own deadlines (deadlines.rs).
    deadlines: deadlines::Deadlines,
    /// The ACL, protected mode and the denials counted (gate.rs).
    access: gate::Gate,
    /// The connections to etcd and the cluster machine (`--etcd`), if clustered; boxed, so
    /// that a server without `--etcd` does not carry its 1.5 kB.
    cluster: Option<Box<etcd_link::EtcdLink>>,
    /// The webhook client (hooks.rs): alerts POSTed to `on_failure=https://...`. Boxed: most
    /// servers have no webhook, and the server is moved on the stack at start-up.
    hooks: Box<hooks::HookClient>,
    /// TLS listeners, sessions and handshakes (tls_glue.rs).
    tls: tls_glue::TlsGlue,
    /// The descriptors open when the loop started less those `fds_held` counted then, so
    /// that the sum of the two is what is open (`open_fds`); `None` without /proc.
    fds_base: Option<i64>,
    /// The reactor-wide counters (stats.rs).
    stats: stats::Stats,
    /// The room kept for loopback and served peers, and accept failures' log (door.rs).
    door: door::Door,
    /// The HTTP action being answered, for the audit trail (audit.rs).
    audit: audit::AuditHook,
}

impl Server {
    /// Bind every listen address (`--listen`, then `--ssl-listen`); `tls` is what
    /// `TlsSetup::load` read. Fails if any cannot be bound. Runs on the system clock.
    pub fn bind(config: Config, tls: TlsSetup) -> io::Result<Server> {
        Server::bind_on(config, tls, Arc::new(SystemClock))
    }

    /// `bind`, on `clock`. A manual clock wakes the loop whenever it moves.
    pub fn bind_on(config: Config, tls: TlsSetup, clock: Arc<dyn Clock>) -> io::Result<Server> {
        let poll = Poll::new()?;
        let time = Time::new(clock, poll.registry())?;
        let listeners = accept::bind_listeners(&config, &poll)?;
        let tls = tls_glue::TlsGlue::new(&config, tls);
        let http = http::HttpGlue::bind(&config, &poll)?;
        let mut engine = Box::new(Engine::new(config.engine.clone()));
        let cluster = match &config.cluster {
            Some(c) => {
                engine.set_clustered(true);
                let id = etcd_link::member_id(listeners.addrs[0]);
                let link = etcd_link::EtcdLink::new(c, id)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                Some(Box::new(link))
            }
            None => None,
        };
        let idle_trim = crate::footprint::IdleTrim::new(config.idle_trim_ms);
        let hooks = Box::new(hooks::HookClient::new(
            config.webhook_timeout_ms,
            config.webhook_ca_file.clone(),
        ));
        let console = config.http.as_ref().is_some_and(|h| h.console);
        let access = gate::Gate::new(config.access.clone(), console);
        let door = door::Door::new(
            config.max_connections_per_address,
            config.max_unserved_connections,
        );
        let schedules = schedules::Schedules::new(config.engine.zone.clone());
        let drain = shutdown::Drain::new(config.graceful_timeout);
        conn::prepare_read_buffer();
        Ok(Server {
            poll,
            listeners,
            conns: Conns::new(config.max_total_output),
            http,
            engine,
            outbox: Outbox::default(),
            hooks,
            config,
            time,
            idle_trim,
            signals: None,
            drain,
            schedules,
            journal: journal::JournalDriver::default(),
            deadlines: deadlines::Deadlines::default(),
            access,
            cluster,
            tls,
            fds_base: None,
            door,
            stats: stats::Stats::default(),
            audit: audit::AuditHook::default(),
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
        let now = self.time.clock.now_ms();
        let line = self.journal.open(
            dir,
            fsync,
            repair,
            &self.config,
            &mut self.engine,
            &mut self.outbox,
            now,
        )?;
        // Alerts the journal brought back may be for https:// webhooks.
        self.hooks.prepare(self.engine.https_webhooks());
        Ok(line)
    }

    /// The `--listen` addresses actually bound (port 0 resolved).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        self.listeners.split_at(self.tls.first_tls_listener).0
    }

    /// The `--ssl-listen` addresses actually bound.
    pub fn ssl_addrs(&self) -> &[SocketAddr] {
        self.listeners.split_at(self.tls.first_tls_listener).1
    }

    /// `--ssl`: every listener speaks TLS.
    pub fn tls_everywhere(&self) -> bool {
        self.tls.https()
    }

    /// Let the loop react to SIGTERM, SIGINT, SIGUSR1 and SIGHUP.
    pub fn set_signals(&mut self, mut s: Signals) -> io::Result<()> {
        self.poll
            .registry()
            .register(s.receiver(), Source::Signals.token(), Interest::READABLE)?;
        self.signals = Some(s);
        Ok(())
    }

    /// Run until stopped: turn after turn, each sleeping in `poll` until a socket, a signal or
    /// the earliest deadline, then acting at one `now`.
    pub fn run(&mut self) -> io::Result<Exit> {
        let mut events = Events::with_capacity(1024);
        crate::log_budget::configure(self.config.refusals_logged_per_second);
        // What start-up opened (standard streams, the log, the poller, the listeners, the
        // signal pipe, the journal) and what was inherited, listed once; from here on the
        // loop counts what it opens and closes (`open_fds`).
        self.fds_base =
            crate::footprint::count_open_fds().map(|n| n as i64 - self.fds_held() as i64);
        loop {
            let now = self.time.clock.now_ms();
            if !self.busy() && self.idle_trim.due(now, self.time.turn == 1) {
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
            // The turn's one reading of the clock.
            let now = self.time.clock.now_ms();
            if let Some(exit) = self.turn(now, &events) {
                return Ok(exit);
            }
        }
    }

    /// One turn at `now`: the events `poll` returned, then what is due, then the replies
    /// written and the journal committed. `Some` when the loop is to end.
    fn turn(&mut self, now: u64, events: &Events) -> Option<Exit> {
        self.time.now = now;
        if self.cluster.is_some() {
            // Only the etcd link runs on it: a server without one reads one clock a turn.
            self.time.mono = self.time.clock.mono_ms();
        }
        self.time.turn += 1;
        // A manual clock's move is not activity. `any` stops at the first event, which on the
        // system clock is never the waker's: one look per turn.
        let wake = Source::Wake.token();
        if events.iter().any(|e| e.token() != wake) {
            self.idle_trim.activity(now);
        }
        for ev in events.iter() {
            let Some(source) = Source::of(ev.token()) else {
                continue;
            };
            match source {
                Source::Etcd(link) => {
                    if let Some(l) = self.cluster.as_mut() {
                        l.event(link, self.poll.registry(), self.time.mono);
                    }
                }
                Source::Hook(i) => {
                    let registry = self.poll.registry();
                    self.hooks.event(i, &mut self.engine, registry, now);
                }
                Source::Signals => {
                    if let Some(exit) = self.on_signals(now) {
                        // Whatever this turn already made durable is written first.
                        self.journal.close(&mut self.engine, &mut self.outbox, now);
                        self.cluster_resign();
                        return Some(exit);
                    }
                }
                // A manual clock moved (the turn acts at its new time), or a stop.
                Source::Wake => {
                    if let Some((exit, close)) = self.time.wake.as_ref().and_then(|w| w.stopped()) {
                        if close {
                            self.journal.close(&mut self.engine, &mut self.outbox, now);
                        }
                        return Some(exit);
                    }
                }
                Source::Listener(l) => self.accept(l, false),
                Source::Conn(id) => {
                    let idx = id.index as usize;
                    let Some(c) = self.conns.slab.get_mut(idx).filter(|c| c.id == id) else {
                        // Its connection closed earlier in this batch, and the slot may hold
                        // a connection accepted since: the event is not the new one's.
                        continue;
                    };
                    if ev.is_read_closed() || ev.is_error() {
                        c.set_hung_up();
                    }
                    if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                        self.read_conn(idx, now);
                        self.hand_on(idx, now);
                    }
                    if ev.is_writable() {
                        self.conns.pending_writes.push(idx);
                    }
                }
            }
        }
        for idx in std::mem::take(&mut self.conns.revisit) {
            if let Some(c) = self.conns.slab.get_mut(idx) {
                c.revisit = false;
            }
            self.read_conn(idx, now);
        }
        if let Some(l) = self.cluster.as_ref() {
            l.standing(&mut self.engine, self.time.mono);
        }
        self.engine.on_time(now, &mut self.outbox);
        self.on_deadlines(now);
        self.cluster_turn(now);
        self.http_ops_answered(now);
        self.resume_paused(now);
        // After every path of the turn that can end a job (an HTTP or console action, an etcd
        // answer, ...): the runs waiting for it start in this turn.
        self.engine.end_turn(now, &mut self.outbox);
        // The replies `hand_on` kept for the turn's end.
        self.conns.pending_writes.append(&mut self.conns.deferred);
        self.dispatch();
        self.conns.uncork(now, self.time.lazy_hold_ms);
        self.finish_turn(now);
        if self.conns.close_over_bound(now) {
            self.finish_turn(now);
        }
        self.hooks_turn(now);
        self.conns.release_held(now);
        self.http.sample_rates(&self.engine, now);
        self.journal.compact_step();
        crate::log_budget::flush(now);
        let registry = self.poll.registry();
        let (engine, outbox) = (&mut self.engine, &mut self.outbox);
        if let Some(exit) = self
            .drain
            .check(&mut self.listeners, registry, engine, outbox, now)
        {
            self.conns.flush_all();
            self.journal.close(&mut self.engine, &mut self.outbox, now);
            self.cluster_resign();
            return Some(exit);
        }
        None
    }

    /// What the signals ask: SIGHUP's reopen and reloads, a stop, a graceful drain.
    fn on_signals(&mut self, now: u64) -> Option<Exit> {
        let s = self.signals.as_mut()?;
        let got = s.take();
        if got.reopen_log {
            if crate::logger::to_file() {
                crate::notice!("SIGHUP: reopening the log file");
                crate::logger::reopen();
            }
            if self.schedules.is_set() {
                let _ = self.reload_schedules(now);
            }
            if self.access.has_acl() {
                let _ = self.reload_acl(now);
            }
            self.tls.reload();
            if let Some(l) = self.cluster.as_mut() {
                l.reload_tls();
            }
        }
        if got.stop {
            crate::notice!("stop signal: shutting down");
            return Some(Exit::Stopped);
        }
        if got.graceful {
            let registry = self.poll.registry();
            self.drain
                .begin(&mut self.listeners, registry, &mut self.engine, now);
        }
        None
    }

    /// Once a turn, with a cluster: the etcd link's turn (etcd_link.rs), a file etcd pushed
    /// loaded as a reload would, and again while that left claims to send.
    fn cluster_turn(&mut self, wall: u64) {
        loop {
            let Some(l) = self.cluster.as_mut() else {
                return;
            };
            let registry = self.poll.registry();
            let pushed = l.turn(
                &mut self.engine,
                &mut self.outbox,
                registry,
                self.time.mono,
                wall,
            );
            if let Some(text) = pushed {
                let loaded =
                    self.schedules
                        .load_pushed(text, &mut self.engine, &mut self.outbox, l, wall);
                audit::AuditHook::push(&mut self.engine, self.time.now, &loaded);
                self.hooks.prepare(self.engine.https_webhooks());
            }
            // Claims made by a takeover's catch-up go out this turn.
            if self.outbox.claims.is_empty() {
                return;
            }
        }
    }

    /// Load the schedules file for the first time (see `Schedules::load`).
    pub fn load_schedules(
        &mut self,
        path: PathBuf,
    ) -> Result<(usize, crate::engine::LoadReport), Vec<String>> {
        let now = self.time.clock.now_ms();
        let journal = self.journal.enabled();
        let cluster = self.cluster.as_deref_mut();
        let loaded = self.schedules.load(
            path,
            journal,
            &mut self.engine,
            &mut self.outbox,
            cluster,
            now,
        )?;
        self.hooks.prepare(self.engine.https_webhooks());
        Ok(loaded)
    }

    /// Read the schedules file again (SIGHUP, `reload schedules`; see `Schedules::reload`).
    pub(super) fn reload_schedules(&mut self, now: u64) -> Result<usize, String> {
        let cluster = self.cluster.as_deref_mut();
        let n = self
            .schedules
            .reload(&mut self.engine, &mut self.outbox, cluster, now)?;
        // A file that names an https:// webhook for the first time: its CA bundle now.
        self.hooks.prepare(self.engine.https_webhooks());
        Ok(n)
    }

    /// At exit: give the leadership up at once (see `EtcdLink::resign`).
    fn cluster_resign(&mut self) {
        if let Some(l) = self.cluster.as_mut() {
            l.resign();
        }
    }

    /// After the turn's journal commit: the webhook client finishes and starts deliveries
    /// (an alert leaves only once its HookQueued is written), and what their ends changed is
    /// committed at once (a delivered alert's HookDone: the window in which a kill -9 would
    /// send it again is this turn's).
    fn hooks_turn(&mut self, now: u64) {
        let registry = self.poll.registry();
        self.hooks.turn(&mut self.engine, registry, now);
        if self.engine.has_durable() {
            self.dispatch();
        }
    }

    /// The descriptors the loop opens and closes: connections, the journal's files, the
    /// sockets to etcd and webhooks. (A turn's passing reads of a file, the schedules say, are closed by
    /// its end.)
    fn fds_held(&self) -> u64 {
        let etcd = self.cluster.as_ref().map_or(0, |l| l.open_sockets());
        self.conns.slab.len() as u64 + self.journal.open_files() + etcd + self.hooks.open_sockets()
    }

    /// The descriptors open now, for `/metrics`: counted, not listed (a listing reads one
    /// entry per connection, in the middle of a turn). `None` without /proc.
    pub(super) fn open_fds(&self) -> Option<u64> {
        let open = self.fds_base? + self.fds_held() as i64;
        Some(open.max(0) as u64)
    }

    /// Work is waiting that the next turn must do without sleeping.
    fn busy(&self) -> bool {
        // The first turn finishes start-up's own work (its journal commit, @reboot runs)
        // before the loop first sleeps.
        self.time.turn == 0
            || !self.conns.revisit.is_empty()
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
            self.hooks.wake_at(&self.engine, now),
            self.conns.output.deadline(),
            self.cluster
                .as_ref()
                .and_then(|l| l.wake_at(now, self.time.clock.mono_ms())),
            crate::log_budget::summary_at(),
            self.conns
                .corked
                .iter()
                .map(|&(_, since)| since.min(now) + self.time.lazy_hold_ms)
                .min(),
        ]
        .into_iter()
        .flatten()
        .min();
        deadline.map(|d| Duration::from_millis(d.saturating_sub(now)))
    }

    /// Write at once what one connection's requests gave other connections (a job for a
    /// worker, a result for a client), so that they start on it while this turn goes on; the
    /// replies to the connection itself wait for the turn's end, as it may have more to say.
    /// Not while changes wait for the journal: one commit per turn.
    fn hand_on(&mut self, from: usize, now: u64) {
        if self.outbox.replies.is_empty() || self.engine.has_durable() || self.journal.failing() {
            return;
        }
        self.resume_paused(now);
        self.dispatch();
        // Only this event's replies are on the list: what earlier events left was flushed
        // or deferred, so the search is short.
        if let Some(p) = self.conns.pending_writes.iter().position(|&i| i == from) {
            self.conns.pending_writes.swap_remove(p);
            self.conns.deferred.push(from);
        }
        if !self.conns.pending_writes.is_empty() {
            self.finish_turn(now);
        }
    }

    /// Run the group commit (the turn's durable changes reach the journal first), then encode
    /// the outbox's replies into write buffers (`Conns::deliver`), and hand the replies for
    /// HTTP connections to the HTTP glue, which answers them (`http_deliver`).
    fn dispatch(&mut self) {
        // Group commit: this turn's durable changes reach the journal (and, under
        // --fsync always, the disk) before any reply that depends on them is written.
        self.journal
            .commit(&mut self.engine, &mut self.outbox, self.time.now);
        self.conns
            .deliver(&mut self.outbox, &mut self.http.inbox, self.time.now);
        self.http_deliver();
    }

    /// Flush writes, close what must close (which may produce more replies), repeat.
    fn finish_turn(&mut self, now: u64) {
        loop {
            let registry = self.poll.registry();
            let max = self.config.max_output_buffer;
            self.conns.flush_pending(registry, max, self.time.now);
            if self.conns.to_close.is_empty() {
                return;
            }
            for idx in std::mem::take(&mut self.conns.to_close) {
                if let Some(mut c) = self.conns.remove(idx) {
                    self.http_closed(&c);
                    if c.unserved {
                        // The slot it held as unserved is given back.
                        self.door.leave(c.access.ip());
                    }
                    self.access.closed(&c, self.time.now);
                    if let Some(k) = c.handshake_deadline() {
                        self.deadlines.cancel(k);
                    }
                    c.deregister(self.poll.registry());
                    self.engine.disconnect(c.id, now, &mut self.outbox);
                }
            }
            self.resume_paused(now);
            self.dispatch();
        }
    }

    /// Accept every client waiting on `from` (see `Listeners::accept`); `retrying`: a retry
    /// after a failure.
    fn accept(&mut self, from: Listener, retrying: bool) {
        let failing = retrying || self.listeners.failing(from);
        loop {
            let mut a = accept::Admission {
                conns: &mut self.conns,
                door: &mut self.door,
                gate: &mut self.access,
                tls: &mut self.tls,
                stats: &mut self.stats,
                engine: &mut self.engine,
                deadlines: &mut self.deadlines,
                http: &self.http,
                registry: self.poll.registry(),
                config: &self.config,
                now: self.time.now,
            };
            match self.listeners.accept(from, failing, &mut a) {
                None => return,
                Some(None) => {}
                Some(Some(idx)) => self.http_accepted(idx, matches!(from, Listener::Http(_))),
            }
        }
    }

    /// May connection `idx` have `need` served (`bearer`: an HTTP request's token)? See
    /// `Gate::check`. An empty slot is refused: a gate that cannot see who asks lets nothing
    /// through.
    #[inline]
    fn gate(&mut self, idx: usize, need: Need<'_>, bearer: Option<&Bearer>) -> Result<(), Denial> {
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return Err(Denial::NoConnection);
        };
        if c.unserved {
            // Its first complete request: it no longer counts against the room unserved
            // peers may hold (door.rs), whatever the gate says of the request.
            c.unserved = false;
            self.door.leave(c.access.ip());
        }
        let refused = &mut self.http.console_refused;
        let now = self.time.now;
        self.access
            .check(c, &self.engine, need, bearer, refused, now)
    }

    /// Would the gate let `need` through for connection `idx`? See `Gate::permits`.
    fn permits(&self, idx: usize, need: Need<'_>) -> bool {
        let c = self.conns.slab.get(idx);
        c.is_some_and(|c| self.access.permits(c, &self.engine, need))
    }

    /// The console may act for connection `idx` (what /ui/api/server tells its page).
    fn console_may_act(&self, idx: usize) -> bool {
        self.permits(idx, Need::ConsoleAct)
    }

    /// A Gearman packet through the gate into the engine (or its refusal back). Inlined, so
    /// that the request moves from its parsing into the engine without another copy.
    #[inline]
    fn enter_packet(&mut self, idx: usize, id: ConnId, req: Request, now: u64) {
        match self.gate(idx, classify::packet(&req), None) {
            Ok(()) => self.engine.handle(id, req, now, &mut self.outbox),
            Err(d) => self.refuse(idx, id, d.packet(), d.closes()),
        }
    }

    /// Send a refusal; when it `closes`, nothing more of the connection is read.
    fn refuse(&mut self, idx: usize, id: ConnId, reply: Response, closes: bool) {
        self.outbox.push(id, reply);
        if let Some(c) = self.conns.slab.get_mut(idx).filter(|_| closes) {
            c.close_after_flush();
            c.rbuf.clear();
        }
    }

    /// After a read of connection `idx` while its TLS handshake runs: when it just ended
    /// (`TlsGlue::handshake_check` names the peer), protected mode judges the peer.
    fn tls_handshake_check(&mut self, idx: usize) {
        let deadlines = &mut self.deadlines;
        if self.tls.handshake_check(&mut self.conns, deadlines, idx) {
            // The name a kept job says ran it (the engine never sees an identity otherwise).
            if let Some(c) = self.conns.slab.get(idx) {
                if let crate::access::Identity::Cn(_) = c.identity().as_ref() {
                    self.engine.set_identity(c.id, &c.identity().to_string());
                }
            }
            self.protected_after_handshake(idx);
        }
    }

    /// A TLS handshake just ended on connection `idx` of a listener that asks no client
    /// certificate: protected mode refuses its peer now, before any request of it is read
    /// (conn/mod.rs reads nothing past the handshake for it).
    fn protected_after_handshake(&mut self, idx: usize) {
        let Some(c) = self.conns.slab.get_mut(idx).filter(|c| c.access.protected) else {
            return;
        };
        let (id, http) = (c.id, c.is_http());
        let refused = &mut self.http.console_refused;
        let d = self
            .access
            .denied(c, Denial::Protected, refused, self.time.now);
        if http {
            self.http_refuse(idx, d.http());
        } else {
            self.refuse(idx, id, d.packet(), true);
        }
    }

    /// Read `--acl` for the first time (before any connection); see `Gate::load`.
    pub fn load_acl(&mut self) -> Result<Option<usize>, String> {
        let (beyond, open_http) = self.listeners.beyond_loopback(&self.tls, self.http.addrs());
        self.access.load(&beyond, &open_http)
    }

    /// Read `--acl` again (SIGHUP, `reload acl`); see `Gate::reload`.
    fn reload_acl(&mut self, now: u64) -> Result<usize, String> {
        let (_, open_http) = self.listeners.beyond_loopback(&self.tls, self.http.addrs());
        let (engine, outbox) = (&mut self.engine, &mut self.outbox);
        self.access
            .reload(&open_http, &self.conns, engine, outbox, now)
    }

    /// Act on the reactor's deadlines that passed (up to `DEADLINES_PER_TURN`; the rest are
    /// due at once on the next turn).
    fn on_deadlines(&mut self, now: u64) {
        for _ in 0..deadlines::DEADLINES_PER_TURN {
            let Some((key, what)) = self.deadlines.due(now) else {
                return;
            };
            match what {
                Deadline::TlsHandshake(id) => {
                    self.tls.deadline(&mut self.conns, key, id, now);
                }
                Deadline::HttpIdle(_)
                | Deadline::HttpRequest(_)
                | Deadline::HttpJob(_)
                | Deadline::HttpLinger(_) => self.http_deadline(key, what),
                Deadline::AcceptRetry(l) => {
                    self.listeners.retry_due(l);
                    self.accept(l, true);
                }
            }
        }
    }
}
