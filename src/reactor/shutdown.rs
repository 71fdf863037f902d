//! Stopping: the graceful drain (listeners closed, the engine told) and the check at each
//! turn's end whether to exit. What the signals ask is the loop's (`Server::on_signals`).

use std::time::Duration;

use mio::Registry;

use super::Exit;
use super::accept::Listeners;
use crate::engine::{Engine, Outbox, Shutdown};

/// Whether a graceful shutdown has begun, and how long it may take (`--graceful-timeout`).
pub(super) struct Drain {
    draining: bool,
    timeout: Duration,
}

impl Drain {
    pub(super) fn new(timeout: Duration) -> Drain {
        Drain {
            draining: false,
            timeout,
        }
    }

    /// A graceful shutdown has begun.
    pub(super) fn draining(&self) -> bool {
        self.draining
    }

    /// Begin a graceful shutdown (once): the Gearman listeners close, and the engine drains.
    pub(super) fn begin(
        &mut self,
        listeners: &mut Listeners,
        registry: &Registry,
        engine: &mut Engine,
        now: u64,
    ) {
        if self.draining {
            return;
        }
        self.draining = true;
        crate::notice!(
            "graceful shutdown: no longer accepting Gearman connections (HTTP: health and metrics only); waiting up to {}s for {}",
            self.timeout.as_secs(),
            crate::plural::count(engine.running_jobs() as u64, "running job", "running jobs")
        );
        listeners.close(registry);
        // The HTTP listener stays, for health and metrics only (http::route::while_draining),
        // so that a load balancer sees `503 draining` until the drain ends.
        engine.begin_drain(now, self.timeout.as_millis() as u64);
    }

    /// At a turn's end: a shutdown the engine was asked for (`shutdown`, `shutdown
    /// graceful`) begins, and a drain that finished ends the loop.
    pub(super) fn check(
        &mut self,
        listeners: &mut Listeners,
        registry: &Registry,
        engine: &mut Engine,
        outbox: &mut Outbox,
        now: u64,
    ) -> Option<Exit> {
        match outbox.shutdown.take() {
            Some(Shutdown::Immediate) => return Some(Exit::Stopped),
            Some(Shutdown::Graceful) => self.begin(listeners, registry, engine, now),
            None => {}
        }
        if self.draining && engine.drain_done() {
            crate::notice!(
                "graceful shutdown: done ({} still running); exiting",
                crate::plural::count(engine.running_jobs() as u64, "job", "jobs")
            );
            return Some(Exit::Graceful);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use argh::FromArgs;
    use mio::Poll;

    use super::*;
    use crate::config::{Config, ServeArgs};
    use crate::reactor::accept;

    /// A drain, the engine and one Gearman listener on loopback, as the loop lends them.
    fn parts() -> (Drain, Listeners, Poll, Engine, Outbox) {
        let a = ServeArgs::from_args(&["gearwheel", "serve"], &["-p", "0"]).expect("flags");
        let config = Config::from_args(a, None).expect("config");
        let poll = Poll::new().expect("poll");
        let listeners = accept::bind_listeners(&config, &poll).expect("bind");
        let engine = Engine::new(config.engine.clone());
        let drain = Drain::new(config.graceful_timeout);
        (drain, listeners, poll, engine, Outbox::default())
    }

    #[test]
    fn a_graceful_shutdown_closes_the_listeners_and_ends_once_nothing_runs() {
        let (mut drain, mut listeners, poll, mut engine, mut outbox) = parts();
        let addr = listeners.addrs[0];
        let r = poll.registry();
        assert_eq!(
            drain.check(&mut listeners, r, &mut engine, &mut outbox, 0),
            None
        );
        assert!(std::net::TcpStream::connect(addr).is_ok());
        outbox.shutdown = Some(Shutdown::Graceful);
        // No job runs: the drain is over as soon as it began.
        let exit = drain.check(&mut listeners, r, &mut engine, &mut outbox, 10);
        assert_eq!(exit, Some(Exit::Graceful));
        assert!(drain.draining());
        // The listener is closed, and its address still known.
        assert!(std::net::TcpStream::connect(addr).is_err());
        assert_eq!(listeners.addrs, vec![addr]);
    }

    #[test]
    fn a_shutdown_asked_of_the_engine_stops_at_once() {
        let (mut drain, mut listeners, poll, mut engine, mut outbox) = parts();
        let r = poll.registry();
        outbox.shutdown = Some(Shutdown::Immediate);
        let exit = drain.check(&mut listeners, r, &mut engine, &mut outbox, 0);
        assert_eq!(exit, Some(Exit::Stopped));
        assert!(!drain.draining());
    }
}
