//! Engine calls the reactor needs beyond `handle`: letting a job go on without a client that
//! stops waiting for it (an HTTP request's `X-Gearman-Timeout`), and the turn's last look at
//! what waits (`end_turn`). Nothing here sees a socket.

use super::types::BACKGROUND;
use super::{ConnId, Engine, JobState, Outbox};

impl Engine {
    /// The turn is over: what waits for a job to leave or a hold to lift (a schedule's
    /// waiting runs, a group's runs, held GRABs) goes now. Called once, after every part of
    /// the turn that can end a job or lift a hold (a Gearman packet, an admin line, an HTTP
    /// or console action, a timer, an etcd answer, a closed connection), so that none of them
    /// leaves a waiting run for a later turn.
    pub fn end_turn(&mut self, now: u64, out: &mut Outbox) {
        self.serve_held_grabs(now, out);
    }

    /// `conn` no longer waits for the job `handle`: it gets no more WORK_* packets for it, and
    /// the job is made background so that it still runs (and finishes) without that client.
    /// Returns whether the connection was attached to that job.
    pub fn release_client(&mut self, conn: ConnId, handle: &[u8]) -> bool {
        let Some(k) = self.by_handle.get(handle, &self.jobs) else {
            return false;
        };
        let Some(e) = self.extra_get_mut(k) else {
            return false;
        };
        let before = e.clients.len();
        e.clients.retain(|c| *c != conn);
        if e.clients.len() == before {
            return false;
        }
        let job = &mut self.jobs[k];
        let was_background = job.background();
        if !was_background {
            log::info!(
                "client {} stopped waiting for job {} ({}); it goes on as a background job",
                conn.index,
                self.by_handle.of(job),
                match job.state() {
                    JobState::Running(_) => "running",
                    JobState::Queued => "queued",
                    JobState::Future => "future",
                }
            );
        }
        job.flags |= BACKGROUND;
        if !was_background {
            // Background jobs outlive a restart; this one has become one.
            self.journal_added(k);
        }
        if let Some(c) = self.conn_mut(conn) {
            c.attached.remove(&(k as u32));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use crate::engine::{ConnId, ConnInfo, Engine, EngineConfig, Outbox};
    use crate::proto::request::{GrabKind, JobBody, Priority, Request};
    use crate::proto::response::Response;
    use crate::store::Record;

    fn conn(e: &mut Engine, i: u32) -> ConnId {
        let id = ConnId {
            index: i,
            generation: 3,
        };
        e.connect(
            id,
            ConnInfo {
                fd: i as i32,
                ip: [127, 0, 0, 1].into(),
            },
        );
        id
    }

    /// An engine (handles `H:r:N`) with one foreground job `H:r:1` of function `f`, data `d`,
    /// submitted by connection 0.
    fn one_foreground_job(durable: bool, unique: &[u8]) -> (Engine, Outbox, ConnId) {
        let mut e = Engine::new(EngineConfig {
            handle_prefix: "H:r".into(),
            durable,
            ..EngineConfig::default()
        });
        let mut out = Outbox::default();
        let client = conn(&mut e, 0);
        e.handle(
            client,
            Request::SubmitJob {
                func: Bytes::from_static(b"f"),
                body: JobBody::new(unique, b"d"),
                priority: Priority::Normal,
                background: false,
            },
            1,
            &mut out,
        );
        (e, out, client)
    }

    #[test]
    fn a_released_foreground_job_is_journalled_as_a_background_one() {
        let (mut e, mut out, client) = one_foreground_job(true, b"u");
        // A foreground job is not durable...
        assert_eq!(e.take_durable().count(), 0);
        assert!(e.release_client(client, b"H:r:1"));
        // ...until nobody waits for it: then it must survive a restart like any background job.
        let added: Vec<_> = e.take_durable().collect();
        assert!(
            matches!(&added[..], [Record::JobAdded(j)]
                if j.handle == "H:r:1" && j.unique == "u" && j.data == "d"),
            "{added:?}"
        );
        // Its end is journalled too, so a restart does not run it again.
        let w = conn(&mut e, 1);
        e.handle(
            w,
            Request::CanDo {
                func: Bytes::from_static(b"f"),
            },
            1,
            &mut out,
        );
        e.handle(w, Request::GrabJob(GrabKind::Plain), 1, &mut out);
        e.handle(
            w,
            Request::WorkComplete {
                handle: Bytes::from_static(b"H:r:1"),
                data: Bytes::new(),
            },
            1,
            &mut out,
        );
        let done: Vec<_> = e.take_durable().collect();
        assert!(
            matches!(
                &done[..],
                [Record::OutputKept(_), Record::JobFinished { .. }]
            ),
            "{done:?}"
        );
    }

    #[test]
    fn a_released_foreground_job_runs_on_without_its_client() {
        let (mut e, mut out, client) = one_foreground_job(false, b"");
        assert!(e.release_client(client, b"H:r:1"));
        assert!(!e.release_client(client, b"H:r:1"));
        // Its client leaving no longer drops it.
        e.disconnect(client, 1, &mut out);
        assert_eq!(e.job_count(), 1);
        let w = conn(&mut e, 1);
        e.handle(
            w,
            Request::CanDo {
                func: Bytes::from_static(b"f"),
            },
            1,
            &mut out,
        );
        out.replies.clear();
        e.handle(w, Request::GrabJob(GrabKind::Plain), 1, &mut out);
        assert!(matches!(out.replies[0].1, Response::JobAssign { .. }));
    }
}
