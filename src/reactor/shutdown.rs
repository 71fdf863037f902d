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
