//! Stopping: what the signals ask (stop, graceful drain, SIGHUP's reloads), the graceful drain
//! (listeners closed, the engine told) and the check at each turn's end whether to exit.

use super::{Exit, Server};
use crate::engine::Shutdown;

impl Server {
    pub(super) fn on_signals(&mut self, now: u64) -> Option<Exit> {
        let s = self.signals.as_mut()?;
        let got = s.take();
        if got.reopen_log {
            if crate::logger::to_file() {
                crate::notice!("SIGHUP: reopening the log file");
                crate::logger::reopen();
            }
            if self.schedules_path.is_some() {
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
            self.begin_graceful(now);
        }
        None
    }

    pub(super) fn begin_graceful(&mut self, now: u64) {
        if self.draining {
            return;
        }
        self.draining = true;
        crate::notice!(
            "graceful shutdown: no longer accepting Gearman connections (HTTP: health and metrics only); waiting up to {}s for {}",
            self.config.graceful_timeout.as_secs(),
            crate::plural::count(
                self.engine.running_jobs() as u64,
                "running job",
                "running jobs"
            )
        );
        for mut l in self.listeners.sockets.drain(..) {
            let _ = self.poll.registry().deregister(&mut l);
        }
        // The HTTP listener stays, for health and metrics only (http::route::while_draining),
        // so that a load balancer sees `503 draining` until the drain ends.
        self.engine
            .begin_drain(now, self.config.graceful_timeout.as_millis() as u64);
    }

    pub(super) fn check_shutdown(&mut self, now: u64) -> Option<Exit> {
        match self.outbox.shutdown.take() {
            Some(Shutdown::Immediate) => return Some(Exit::Stopped),
            Some(Shutdown::Graceful) => self.begin_graceful(now),
            None => {}
        }
        if self.draining && self.engine.drain_done() {
            crate::notice!(
                "graceful shutdown: done ({} still running); exiting",
                crate::plural::count(self.engine.running_jobs() as u64, "job", "jobs")
            );
            return Some(Exit::Graceful);
        }
        None
    }
}
