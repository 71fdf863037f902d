//! Engine tests: requests in, outbox out, no sockets; time is a plain number.

use super::*;
use crate::proto::admin::AdminCommand;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// A SUBMIT_JOB of `f` at normal priority.
fn submit_normal(data: &str, background: bool) -> Request {
    Request::SubmitJob {
        func: b("f"),
        body: JobBody::new(b"", data.as_bytes()),
        priority: Priority::Normal,
        background,
    }
}

struct World {
    e: Engine,
    out: Outbox,
    now: u64,
    next: u32,
}

impl World {
    fn new() -> World {
        World::with(EngineConfig {
            handle_prefix: "H:t".into(),
            ..EngineConfig::default()
        })
    }

    fn with(config: EngineConfig) -> World {
        World {
            e: Engine::new(config),
            out: Outbox::default(),
            now: 1_000_000,
            next: 0,
        }
    }

    fn conn(&mut self) -> ConnId {
        let id = ConnId {
            index: self.next,
            generation: 7,
        };
        self.next += 1;
        self.e.connect(
            id,
            ConnInfo {
                fd: 10 + id.index as i32,
                ip: [127, 0, 0, 1].into(),
            },
        );
        id
    }

    fn req(&mut self, id: ConnId, r: Request) -> Vec<(ConnId, Response)> {
        self.req_with_lazy(id, r).0
    }

    /// The replies, and which of them may wait for company (`Outbox::lazy`).
    fn req_with_lazy(&mut self, id: ConnId, r: Request) -> (Vec<(ConnId, Response)>, Vec<usize>) {
        self.e.handle(id, r, self.now, &mut self.out);
        (
            std::mem::take(&mut self.out.replies),
            std::mem::take(&mut self.out.lazy),
        )
    }

    fn admin(&mut self, id: ConnId, line: &str) -> String {
        self.e
            .admin(id, AdminCommand::parse(&b(line)), self.now, &mut self.out);
        let replies = std::mem::take(&mut self.out.replies);
        match &replies[..] {
            [(_, Response::Text(t))] => String::from_utf8_lossy(t).into_owned(),
            other => panic!("{other:?}"),
        }
    }

    fn submit(
        &mut self,
        id: ConnId,
        func: &str,
        unique: &str,
        data: &str,
        p: Priority,
        bg: bool,
    ) -> Bytes {
        let r = self.req(
            id,
            Request::SubmitJob {
                func: b(func),
                body: JobBody::new(unique.as_bytes(), data.as_bytes()),
                priority: p,
                background: bg,
            },
        );
        r.into_iter()
            .find_map(|(to, r)| match r {
                Response::JobCreated { handle } if to == id => Some(handle.to_bytes()),
                _ => None,
            })
            .expect("JOB_CREATED")
    }

    fn grab(&mut self, id: ConnId) -> Option<(Bytes, Bytes)> {
        let r = self.req(id, Request::GrabJob(GrabKind::Uniq));
        match &r[..] {
            [(_, Response::JobAssignUniq { handle, data, .. })] => {
                Some((handle.to_bytes(), data.clone()))
            }
            [(_, Response::NoJob)] => None,
            // A grab may also wake the next sleeper; the assign comes first.
            [(_, Response::JobAssignUniq { handle, data, .. }), rest @ ..]
                if rest.iter().all(|(_, r)| *r == Response::Noop) =>
            {
                Some((handle.to_bytes(), data.clone()))
            }
            other => panic!("{other:?}"),
        }
    }

    fn can_do(&mut self, id: ConnId, f: &str) {
        let r = self.req(id, Request::CanDo { func: b(f) });
        assert!(r.iter().all(|(_, r)| *r == Response::Noop), "{r:?}");
    }
}

mod admin;
mod alerts;
mod cluster_runs;
mod failed;
mod functions;
mod future;
mod grab_wait;
mod hooks;
mod journal;
mod leases;
mod lifecycle;
mod limits;
mod output;
mod queues;
mod retries;
mod robustness;
mod schedule_ops;
mod schedule_runtime;
mod unique_status;
mod watch;
mod workers;
