//! The mio loop that drives the peers, and a run: who connects (`Plan`), spread over
//! `--threads` loops, and what ends it.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::thread;
use std::time::{Duration, Instant};

use crate::opts::Opts;
use crate::peers::{Client, Peer, Role, Shared, Submit, Worker, WorkerKind, lock};

/// Drive `peers` until told to stop; then hand the measurements to `sh`.
pub(crate) fn event_loop(mut peers: Vec<Peer>, sh: Arc<Shared>, o: Opts) -> io::Result<()> {
    let mut poll = mio::Poll::new()?;
    let mut events = mio::Events::with_capacity(1024);
    for (i, p) in peers.iter_mut().enumerate() {
        poll.registry().register(
            &mut p.s,
            mio::Token(i),
            mio::Interest::READABLE | mio::Interest::WRITABLE,
        )?;
        if let Role::Worker(w) = &mut p.role {
            w.start(&mut p.out, &o);
        }
    }
    let payload = vec![b'x'; o.payload];
    let has_clients = peers.iter().any(|p| matches!(p.role, Role::Client(_)));
    let mut started = false;
    let mut last_tick = Instant::now();
    while !sh.stop.load(SeqCst) {
        if !started && sh.go.load(SeqCst) {
            started = true;
            lock(&sh.started).get_or_insert_with(Instant::now);
            for p in peers.iter_mut() {
                if let Role::Client(c) = &mut p.role {
                    c.top_up(&mut p.out, &o, &payload, &sh);
                }
            }
        }
        for p in peers.iter_mut().filter(|p| !p.dead && p.wants_flush()) {
            if let Err(e) = p.flush() {
                p.dead = true;
                sh.error(&format!("write: {e}"));
            }
        }
        let timeout = if has_clients && !started {
            Duration::from_millis(1)
        } else {
            Duration::from_millis(20)
        };
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for ev in events.iter() {
            let Some(p) = peers.get_mut(ev.token().0) else {
                continue;
            };
            if p.dead || !(ev.is_readable() || ev.is_read_closed() || ev.is_error()) {
                continue;
            }
            let r = p.serve(&sh);
            if let Role::Client(c) = &mut p.role {
                if started {
                    c.top_up(&mut p.out, &o, &payload, &sh);
                }
            }
            // Write at once, as an independent client or worker would: holding every peer's
            // output until the whole batch of events is read would add the generator's own
            // reading time to every job's latency, for every server alike.
            if r.is_ok() && p.wants_flush() {
                if let Err(e) = p.flush() {
                    p.dead = true;
                    sh.error(&format!("write: {e}"));
                    continue;
                }
            }
            if let Err(e) = r {
                p.dead = true;
                if !sh.stop.load(SeqCst) {
                    sh.error(&format!("read: {e}"));
                    if let Role::Client(c) = &mut p.role {
                        if !c.finished {
                            c.finished = true;
                            sh.client_done();
                        }
                    }
                }
            }
        }
        if last_tick.elapsed() >= Duration::from_millis(20) {
            last_tick = Instant::now();
            for p in peers.iter_mut() {
                if let Role::Worker(w) = &mut p.role {
                    w.tick(&mut p.out, o.regrab);
                }
            }
        }
    }
    let mut lat = Vec::new();
    let mut late = Vec::new();
    for p in peers {
        match p.role {
            Role::Client(c) => lat.extend(c.latencies_us),
            Role::Worker(w) => late.extend(w.lateness_us),
        }
    }
    lock(&sh.latencies_us).extend(lat);
    lock(&sh.lateness_us).extend(late);
    Ok(())
}

/// Who connects for a run.
pub(crate) struct Plan {
    /// Jobs the workers must complete for the run to be over.
    pub(crate) job_target: u64,
    pub(crate) workers: usize,
    pub(crate) kind: WorkerKind,
    pub(crate) clients: usize,
    pub(crate) what: Submit,
    /// Client requests in all, shared among the clients.
    pub(crate) total: u64,
    pub(crate) window: usize,
}

/// A run in progress: event-loop threads over the peers.
pub(crate) struct Run {
    pub(crate) sh: Arc<Shared>,
    threads: Vec<thread::JoinHandle<io::Result<()>>>,
}

impl Run {
    /// Connect the plan's workers and clients, spread over `--threads` event loops; wait
    /// until every worker has registered and gone to sleep.
    pub(crate) fn start(o: &Opts, plan: Plan) -> io::Result<Run> {
        let Plan {
            job_target,
            workers,
            kind,
            clients,
            what,
            total,
            window,
        } = plan;
        let addr = o.addr()?;
        let sh = Shared::new(job_target);
        let mut peers = Vec::new();
        for _ in 0..workers {
            let w = Worker {
                kind,
                sleeping_since: None,
                ready: false,
                lateness_us: Vec::new(),
            };
            peers.push(Peer::connect(addr, Role::Worker(w), o.tls.as_ref())?);
        }
        let n = clients as u64;
        for k in 0..n {
            let share = total / n + u64::from(k < total % n);
            let c = Client::new(what, k, n, share, window);
            peers.push(Peer::connect(addr, Role::Client(c), o.tls.as_ref())?);
        }
        let t = o.threads.max(1).min(peers.len().max(1));
        let mut groups: Vec<Vec<Peer>> = (0..t).map(|_| Vec::new()).collect();
        for (i, p) in peers.into_iter().enumerate() {
            groups[i % t].push(p);
        }
        let threads = groups
            .into_iter()
            .map(|g| {
                let sh = sh.clone();
                let o = o.clone();
                thread::spawn(move || event_loop(g, sh, o))
            })
            .collect();
        let t0 = Instant::now();
        while sh.workers_ready.load(SeqCst) < workers && t0.elapsed() < Duration::from_secs(10) {
            thread::sleep(Duration::from_millis(1));
        }
        Ok(Run { sh, threads })
    }

    /// Let the clients go; the run's start time.
    pub(crate) fn go(&self) -> Instant {
        self.sh.go.store(true, SeqCst);
        loop {
            if let Some(t) = *lock(&self.sh.started) {
                return t;
            }
            thread::sleep(Duration::from_micros(100));
        }
    }

    /// Wait until `done` holds or `deadline` passes, noting when each tenth of `acks`
    /// client requests had been answered.
    pub(crate) fn watch(
        &self,
        acks: u64,
        deadline: Instant,
        done: impl Fn(&Shared) -> bool,
    ) -> (bool, Vec<Instant>) {
        let mut tenths = Vec::new();
        loop {
            let a = self.sh.acked.load(SeqCst);
            while acks > 0 && tenths.len() < 10 && a * 10 >= acks * (tenths.len() as u64 + 1) {
                tenths.push(Instant::now());
            }
            if done(&self.sh) {
                return (true, tenths);
            }
            if Instant::now() > deadline {
                eprintln!("load: timed out");
                return (false, tenths);
            }
            thread::sleep(Duration::from_micros(500));
        }
    }

    pub(crate) fn stop(self) -> Arc<Shared> {
        self.sh.stop.store(true, SeqCst);
        for t in self.threads {
            match t.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => self.sh.error(&format!("event loop: {e}")),
                Err(_) => self.sh.error("event loop panicked"),
            }
        }
        self.sh
    }
}

pub(crate) fn clients_finished(n: usize) -> impl Fn(&Shared) -> bool {
    move |sh: &Shared| sh.clients_done.load(SeqCst) >= n
}

pub(crate) fn jobs_finished(sh: &Shared) -> bool {
    sh.jobs_done.load(SeqCst) >= sh.job_target
}
