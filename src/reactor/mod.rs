//! The mio reactor: listeners, the slab of connections, read and write buffers, signals and
//! the loop. The only owner of sockets; it turns frames into requests for the engine and the
//! engine's outbox into bytes, and never decides anything about a job.
//!
//! This file: `Server`, the loop and one turn, the sleep until the next deadline.
//!
//! - `token`: the one token space: what each mio `Token` names.
//! - `accept`: the listeners bound, accept, `--max-connections`; `listen`: socket options.
//! - `door`: who is let in at accept (room for loopback and served peers).
//! - `conn/`: the connections, their transport and the turn's write side.
//! - `gearman`: the Gearman read path; `admin`: the admin lines the loop answers itself.
//! - `gate`: the one gate into the engine (ACL, protected mode, denials counted).
//! - `http/`: the HTTP listener, its connections, the console and the guard.
//! - `tls_glue`: TLS listeners, sessions, handshakes and certificate reloads.
//! - `etcd_link`: the connections to etcd and the cluster machine.
//! - `journal`: the journal driver and its group commit.
//! - `schedules`: the schedules file read and reloaded.
//! - `deadlines`: the reactor's own timer wheel.
//! - `stats`: `Stats`, the reactor-wide counters for /metrics.
//! - `signals`: signals as loop events; `shutdown`: stopping and the graceful drain.
//! - `embedded`: a server on a thread with a manual clock, for tests.

mod accept;
mod admin;
mod conn;
mod deadlines;
mod door;
mod embedded;
mod etcd_link;
mod gate;
mod gearman;
mod http;
mod journal;
mod listen;
mod schedules;
mod shutdown;
mod signals;
mod stats;
mod tls_glue;
mod token;

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use log::info;
use mio::{Events, Interest, Poll};

use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::engine::{Engine, Outbox};

use conn::Conns;
use deadlines::Deadline;
pub use embedded::Embedded;
pub use schedules::read_schedules;
pub use signals::Signals;
pub use tls_glue::TlsSetup;
use token::Source;

/// Frames one connection may have served per loop turn before others get a go.
const FRAMES_PER_TURN: usize = 256;
/// How long a lazy reply may wait for company: 2 ticks of the loop's millisecond clock, so
/// 1 to 2 ms. Long enough for a worker on the same network to answer a short job, too short
/// for any client to notice a JOB_CREATED that comes late. On a clock moved by hand no reply
/// waits: the hold is a trade of latency for syscalls on real time, not a deadline.
const LAZY_HOLD_MS: u64 = 2;

/// How the loop ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    /// SIGTERM, SIGINT or `shutdown`.
    Stopped,
    /// A graceful shutdown finished (or ran out of time).
    Graceful,
}

/// The loop's time: the clock, the turn count, and the one reading of the clock each turn
/// acts at.
struct Time {
    /// Loop turns since start.
    turn: u64,
    /// `now` of the current loop turn: the clock is read once per turn, and everything the
    /// turn does happens at that time.
    now: u64,
    /// The monotonic time of the same reading (`Clock::mono_ms`): the etcd link's, read only
    /// when there is one.
    mono: u64,
    /// The time (src/clock.rs): the system clock, or a manual one in tests (embedded.rs).
    clock: Arc<dyn Clock>,
    /// How a manual clock wakes the loop when it moves (none on the system clock).
    wake: Option<Arc<embedded::Wake>>,
    /// `LAZY_HOLD_MS`, or 0 on a manual clock.
    lazy_hold_ms: u64,
}

pub struct Server {
    poll: Poll,
    /// The Gearman listeners and their accept retries (accept.rs).
    listeners: accept::Listeners,
    /// The connections and the turn's lists about them (conn/conns.rs).
    conns: Conns,
    /// The HTTP listeners, and what HTTP connections share (http/).
    http: http::HttpGlue,
    engine: Engine,
    outbox: Outbox,
    config: Config,
    /// The clock and the turn's reading of it.
    time: Time,
    /// When to give memory back (src/footprint.rs).
    idle_trim: crate::footprint::IdleTrim,
    signals: Option<Signals>,
    /// A graceful shutdown has begun.
    draining: bool,
    /// The schedules file, read at start, on SIGHUP and on `reload schedules`.
    schedules_path: Option<PathBuf>,
    /// The journal and its group commit (journal.rs).
    journal: journal::JournalDriver,
    /// The reactor's own deadlines (deadlines.rs).
    deadlines: deadlines::Deadlines,
    /// The ACL, protected mode and the denials counted (gate.rs).
    access: gate::Gate,
    /// The connections to etcd and the cluster machine (`--etcd`), if clustered; boxed, so
    /// that a server without `--etcd` does not carry its 1.5 kB.
    cluster: Option<Box<etcd_link::EtcdLink>>,
    /// TLS listeners, sessions and handshakes (tls_glue.rs).
    tls: tls_glue::TlsGlue,
    /// The descriptors open when the loop started less those `fds_held` counted then, so
    /// that the sum of the two is what is open (`open_fds`); `None` without /proc.
    fds_base: Option<i64>,
    /// The reactor-wide counters (stats.rs).
    stats: stats::Stats,
    /// The room kept for loopback and served peers, and accept failures' log (door.rs).
    door: door::Door,
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
        let wake = match clock.manual() {
            Some(m) => Some(embedded::Wake::watch(m, poll.registry())?),
            None => None,
        };
        let lazy_hold_ms = if wake.is_some() { 0 } else { LAZY_HOLD_MS };
        let listeners = accept::bind_listeners(&config, &poll)?;
        let tls = tls_glue::TlsGlue::new(&config, tls);
        let http = http::HttpGlue::bind(&config, &poll)?;
        let mut engine = Engine::new(config.engine.clone());
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
        let console = config.http.as_ref().is_some_and(|h| h.console);
        let access = gate::Gate::new(config.access.clone(), console);
        let door = door::Door::new(
            config.max_connections_per_address,
            config.max_unserved_connections,
        );
        conn::prepare_read_buffer();
        Ok(Server {
            poll,
            listeners,
            conns: Conns::new(config.max_total_output),
            http,
            engine,
            outbox: Outbox::default(),
            config,
            time: Time {
                turn: 0,
                now: 0,
                mono: 0,
                clock,
                wake,
                lazy_hold_ms,
            },
            idle_trim,
            signals: None,
            draining: false,
            schedules_path: None,
            journal: journal::JournalDriver::default(),
            deadlines: deadlines::Deadlines::default(),
            access,
            cluster,
            tls,
            fds_base: None,
            door,
            stats: stats::Stats::default(),
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
                Source::Listener(l) => self.accept(l),
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
        self.engine.on_time(now, &mut self.outbox);
        self.on_deadlines(now);
        self.cluster_turn(now);
        self.resume_paused(now);
        // The replies `hand_on` kept for the turn's end.
        self.conns.pending_writes.append(&mut self.conns.deferred);
        self.dispatch();
        self.uncork();
        self.finish_turn(now);
        if self.conns.close_over_bound(now) {
            self.finish_turn(now);
        }
        self.conns.release_held(now);
        self.http_sample_rates(now);
        self.journal.compact_step();
        crate::log_budget::flush(now);
        if let Some(exit) = self.check_shutdown(now) {
            self.conns.flush_all();
            self.journal.close(&mut self.engine, &mut self.outbox, now);
            self.cluster_resign();
            return Some(exit);
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
                self.load_pushed_schedules(text, wall);
            }
            // Claims made by a takeover's catch-up go out this turn.
            if self.outbox.claims.is_empty() {
                return;
            }
        }
    }

    /// At exit: give the leadership up at once (see `EtcdLink::resign`).
    fn cluster_resign(&mut self) {
        if let Some(l) = self.cluster.as_mut() {
            l.resign();
        }
    }

    /// The descriptors the loop opens and closes: connections, the journal's files, the
    /// sockets to etcd. (A turn's passing reads of a file, the schedules say, are closed by
    /// its end.)
    fn fds_held(&self) -> u64 {
        let etcd = self.cluster.as_ref().map_or(0, |l| l.open_sockets());
        self.conns.slab.len() as u64 + self.journal.open_files() + etcd
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
                Deadline::AcceptRetry(l) => self.accept_retry(l),
            }
        }
    }
}
