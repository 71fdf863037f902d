//! The console's paged job lists: one function's queued (in hand-out order), running (longest
//! first) or future (soonest first) jobs, a page at a time. Read-only, like `query`; the
//! caller bounds the page (`limit`) and how far in it may start (`offset`).

use bytes::Bytes;

use super::query::JobPhase;
use super::types::NIL;
use super::{ConnId, Engine, JobState};
use crate::proto::request::Priority;

/// One job of a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedJob {
    pub handle: Bytes,
    pub unique: Bytes,
    pub priority: Priority,
    /// The workload (the caller cuts its preview).
    pub data: Bytes,
    /// When it was submitted (restored, for a job read back from the journal).
    pub added_ms: u64,
    /// A running job: its worker and since when it runs (the JOB_ASSIGN's `now`).
    pub worker: Option<ConnId>,
    pub since_ms: Option<u64>,
    /// A future job's due time.
    pub due_ms: Option<u64>,
}

/// A page of one function's jobs in one state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobPage {
    /// All the function's jobs in that state.
    pub total: usize,
    pub jobs: Vec<ListedJob>,
}

impl Engine {
    /// The jobs of `function` in `phase` from `offset` on, at most `limit`; `None` when the
    /// server knows no such function. Queued jobs walk the queues (high, normal, low, each
    /// oldest first: the order workers get them), O(offset + limit); running and future ones
    /// are gathered and sorted, O(jobs), as `future_jobs`.
    pub fn jobs_of(
        &self,
        function: &[u8],
        phase: JobPhase,
        offset: usize,
        limit: usize,
    ) -> Option<JobPage> {
        let &fid = self.func_by_name.get(function)?;
        let func = self.functions.get(fid)?;
        let listed = |k: usize, worker: Option<ConnId>, since_ms, due_ms| {
            let j = self.jobs.get(k)?;
            Some(ListedJob {
                handle: Bytes::from(self.by_handle.of(j).to_string()),
                unique: j.unique(),
                priority: j.priority,
                data: j.data(),
                added_ms: j.added_ms,
                worker,
                since_ms,
                due_ms,
            })
        };
        // The function counts its jobs in each state: an empty state costs no walk.
        let count = match phase {
            JobPhase::Queued => func.queued.iter().map(|&n| n as usize).sum(),
            JobPhase::Running => func.running as usize,
            JobPhase::Future => func.future as usize,
        };
        if count == 0 {
            return Some(JobPage {
                total: 0,
                jobs: Vec::new(),
            });
        }
        match phase {
            JobPhase::Queued => {
                let total = count;
                let mut jobs = Vec::new();
                let mut skip = offset;
                'queues: for q in &func.queues {
                    let mut k = q.head;
                    while k != NIL && jobs.len() < limit {
                        let Some(j) = self.jobs.get(k as usize) else {
                            break;
                        };
                        if skip > 0 {
                            skip -= 1;
                        } else if let Some(row) = listed(k as usize, None, None, None) {
                            jobs.push(row);
                        }
                        k = j.next();
                    }
                    if jobs.len() >= limit {
                        break 'queues;
                    }
                }
                Some(JobPage { total, jobs })
            }
            JobPhase::Running => {
                let mut rows: Vec<(u64, u64, usize, ConnId)> = self
                    .conns
                    .iter()
                    .flatten()
                    .flat_map(|c| {
                        c.holding.iter().filter_map(move |(&k, h)| {
                            let j = self.jobs.get(k as usize)?;
                            (j.func() == fid).then_some((h.since_ms, j.id, k as usize, c.id))
                        })
                    })
                    .collect();
                rows.sort_unstable_by_key(|&(since, id, _, _)| (since, id));
                let total = rows.len();
                let jobs = rows
                    .into_iter()
                    .skip(offset)
                    .take(limit)
                    .filter_map(|(since, _, k, w)| listed(k, Some(w), Some(since), None))
                    .collect();
                Some(JobPage { total, jobs })
            }
            JobPhase::Future => {
                let mut rows: Vec<(u64, u64, usize)> = self
                    .jobs
                    .iter()
                    .filter(|(_, j)| j.func() == fid && matches!(j.state(), JobState::Future))
                    .map(|(k, j)| (self.due_ms(k).unwrap_or(0), j.id, k))
                    .collect();
                rows.sort_unstable();
                let total = rows.len();
                let jobs = rows
                    .into_iter()
                    .skip(offset)
                    .take(limit)
                    .filter_map(|(due, _, k)| listed(k, None, None, Some(due)))
                    .collect();
                Some(JobPage { total, jobs })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ConnInfo, EngineConfig, Outbox};
    use crate::proto::request::{GrabKind, JobBody, Request};

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn conn(e: &mut Engine, i: u32) -> ConnId {
        let id = ConnId {
            index: i,
            generation: 1,
        };
        let info = ConnInfo {
            fd: 20 + i as i32,
            ip: [127, 0, 0, 1].into(),
        };
        e.connect(id, info);
        id
    }

    fn submit(e: &mut Engine, c: ConnId, f: &str, data: &str, p: Priority, now: u64) {
        let req = Request::SubmitJob {
            func: b(f),
            body: JobBody::new(b"", data.as_bytes()),
            priority: p,
            background: true,
        };
        e.handle(c, req, now, &mut Outbox::default());
    }

    fn handles(p: &JobPage) -> Vec<String> {
        p.jobs
            .iter()
            .map(|j| String::from_utf8_lossy(&j.handle).into_owned())
            .collect()
    }

    #[test]
    fn queued_pages_follow_the_hand_out_order() {
        let mut e = Engine::new(EngineConfig {
            handle_prefix: "H:l".into(),
            ..EngineConfig::default()
        });
        let c = conn(&mut e, 0);
        submit(&mut e, c, "f", "a", Priority::Low, 1000);
        submit(&mut e, c, "f", "b", Priority::Normal, 1000);
        submit(&mut e, c, "f", "c", Priority::High, 1000);
        submit(&mut e, c, "f", "d", Priority::Normal, 1000);
        submit(&mut e, c, "g", "other", Priority::Normal, 1000);
        let all = e.jobs_of(b"f", JobPhase::Queued, 0, 10).unwrap();
        assert_eq!(all.total, 4);
        assert_eq!(handles(&all), ["H:l:3", "H:l:2", "H:l:4", "H:l:1"]);
        assert_eq!(all.jobs[0].priority, Priority::High);
        assert_eq!(&all.jobs[0].data[..], b"c");
        let page = e.jobs_of(b"f", JobPhase::Queued, 1, 2).unwrap();
        assert_eq!(
            (page.total, handles(&page)),
            (4, vec!["H:l:2".into(), "H:l:4".into()])
        );
        assert!(
            e.jobs_of(b"f", JobPhase::Queued, 9, 2)
                .unwrap()
                .jobs
                .is_empty()
        );
        assert!(
            e.jobs_of(b"f", JobPhase::Queued, 0, 0)
                .unwrap()
                .jobs
                .is_empty()
        );
        assert_eq!(e.jobs_of(b"nope", JobPhase::Queued, 0, 10), None);
        assert_eq!(e.jobs_of(b"f", JobPhase::Future, 0, 10).unwrap().total, 0);
    }

    #[test]
    fn running_jobs_name_their_worker_and_start() {
        let mut e = Engine::new(EngineConfig {
            handle_prefix: "H:r".into(),
            ..EngineConfig::default()
        });
        let c = conn(&mut e, 0);
        let w = conn(&mut e, 1);
        submit(&mut e, c, "f", "a", Priority::Normal, 1000);
        submit(&mut e, c, "f", "b", Priority::Normal, 1000);
        let mut out = Outbox::default();
        e.handle(w, Request::CanDo { func: b("f") }, 1000, &mut out);
        e.handle(w, Request::GrabJob(GrabKind::Plain), 2000, &mut out);
        e.handle(w, Request::GrabJob(GrabKind::Plain), 3000, &mut out);
        let run = e.jobs_of(b"f", JobPhase::Running, 0, 10).unwrap();
        assert_eq!(handles(&run), ["H:r:1", "H:r:2"]);
        assert_eq!(run.jobs[0].worker, Some(w));
        assert_eq!(run.jobs[1].since_ms, Some(3000));
        assert_eq!(e.jobs_of(b"f", JobPhase::Queued, 0, 10).unwrap().total, 0);
        let second = e.jobs_of(b"f", JobPhase::Running, 1, 10).unwrap();
        assert_eq!((second.total, handles(&second)), (2, vec!["H:r:2".into()]));
    }

    #[test]
    fn future_jobs_soonest_first() {
        let mut e = Engine::new(EngineConfig {
            handle_prefix: "H:f".into(),
            ..EngineConfig::default()
        });
        let c = conn(&mut e, 0);
        let mut out = Outbox::default();
        for (data, epoch) in [("late", "4000"), ("soon", "3000")] {
            let req = Request::SubmitJobEpoch {
                func: b("f"),
                body: JobBody::new(b"", data.as_bytes()),
                epoch: b(epoch),
            };
            e.handle(c, req, 1000, &mut out);
        }
        let fut = e.jobs_of(b"f", JobPhase::Future, 0, 10).unwrap();
        assert_eq!(handles(&fut), ["H:f:2", "H:f:1"]);
        assert_eq!(fut.jobs[0].due_ms, Some(3_000_000));
        assert_eq!(
            e.jobs_of(b"f", JobPhase::Future, 1, 1).unwrap().jobs.len(),
            1
        );
    }
}
