//! The etcd request each purpose sends (`Machine::request_for`), built when it is sent.

use super::*;

impl Machine {
    /// The request for a purpose, built when it is sent (a claim compares the revision read
    /// last, which an earlier claim may have changed). `None`: nothing to send (a claim
    /// decided without etcd).
    pub(super) fn request_for(
        &mut self,
        p: &Purpose,
        now: u64,
        out: &mut Output,
    ) -> Option<Request> {
        let leader_key = self.key("leader");
        let member_key = self.key(&format!("members/{}", self.s.id));
        Some(match p {
            Purpose::Grant => Request::LeaseGrant {
                ttl_secs: self.s.ttl_secs,
            },
            Purpose::KeepAlive { lease } => Request::LeaseKeepAlive { lease: *lease },
            Purpose::PutMember => Request::Put {
                key: member_key,
                value: self.me.to_json(),
                lease: self.lease?,
            },
            Purpose::Campaign => Request::Txn(Txn {
                compare: vec![Compare::CreateRevision {
                    key: leader_key.clone(),
                    revision: 0,
                }],
                success: vec![
                    Op::Put {
                        key: leader_key.clone(),
                        value: self.me.to_json(),
                        lease: self.lease?,
                    },
                    Op::Get {
                        key: leader_key.clone(),
                    },
                ],
                failure: vec![Op::Get { key: leader_key }],
            }),
            Purpose::PublishLeader => {
                let fence = self.fence?;
                Request::Txn(Txn {
                    compare: vec![Compare::CreateRevision {
                        key: leader_key.clone(),
                        revision: fence,
                    }],
                    success: vec![Op::Put {
                        key: leader_key,
                        value: self.me.to_json(),
                        lease: self.lease?,
                    }],
                    failure: vec![],
                })
            }
            // The entries' accounts with the claims: the new leader counts its misses on
            // top of the last leader's counts, even when the watch has not brought its last
            // account yet.
            Purpose::LoadRuns => Request::Txn(Txn {
                compare: vec![],
                success: vec![
                    Op::GetPrefix {
                        prefix: self.key("runs/"),
                    },
                    Op::GetPrefix {
                        prefix: self.key("history/"),
                    },
                ],
                failure: vec![],
            }),
            Purpose::ReadState => Request::Txn(Txn {
                compare: vec![],
                success: vec![
                    Op::Get { key: leader_key },
                    Op::GetPrefix {
                        prefix: self.key("members/"),
                    },
                    Op::Get {
                        key: self.key("schedules"),
                    },
                    Op::GetPrefix {
                        prefix: self.key("runs/"),
                    },
                    Op::GetPrefix {
                        prefix: self.key("ops/"),
                    },
                    Op::GetPrefix {
                        prefix: self.key("history/"),
                    },
                    Op::GetPrefix {
                        prefix: self.key("after/"),
                    },
                    Op::GetPrefix {
                        prefix: self.key("backfill/"),
                    },
                ],
                failure: vec![],
            }),
            Purpose::DeleteRun => {
                let id = self.stale_runs.pop()?;
                let fence = self.fence?;
                Request::Txn(Txn {
                    compare: vec![Compare::CreateRevision {
                        key: leader_key,
                        revision: fence,
                    }],
                    // The entry's operators' record, its account, its `@after` set and its
                    // backfill go with it.
                    success: vec![
                        Op::Delete {
                            key: self.run_key(&id),
                        },
                        Op::Delete {
                            key: self.ops_key(&id),
                        },
                        Op::Delete {
                            key: self.history_key(&id),
                        },
                        Op::Delete {
                            key: self.key(&format!("after/{id}")),
                        },
                        Op::Delete {
                            key: self.key(&format!("backfill/{id}")),
                        },
                    ],
                    failure: vec![],
                })
            }
            Purpose::Claim { ask, .. } => {
                if let Err(r) = self.precheck(ask, now) {
                    self.decide(ask.clone(), Err(r), out);
                    return None;
                }
                let fence = self.fence?;
                let key = self.run_key(&ask.entry);
                let revision = self.runs.get(&ask.entry).map_or(0, |c| c.mod_revision);
                // The record the claim is written over: the watch may bring this very
                // claim back before its answer, so the one before it is kept here.
                self.claim_previous = self.runs.get(&ask.entry).map_or(0, |c| c.record.nominal_ms);
                let record = self.claim_record(ask, fence);
                Request::Txn(fenced_put(
                    leader_key,
                    fence,
                    key,
                    revision,
                    record.to_json(),
                ))
            }
            Purpose::Operate { entry, op, .. } => self.operate_request(entry, op),
            Purpose::FireRun { entry } => self.fire_request(entry)?,
            Purpose::PutHistory { entry } => self.history_request(entry)?,
            p @ (Purpose::Backfill { .. } | Purpose::BackfillRun { .. }) => {
                self.backfill_request(p, out)?
            }
            Purpose::Compact { revision } => Request::Compact {
                revision: *revision,
            },
            Purpose::FinishRun { entry } => {
                let o = self.own.get(entry).filter(|o| o.ended)?;
                let key = self.run_key(entry);
                let record = RunRecord {
                    done: Some(true),
                    ..o.record.clone()
                };
                // Not fenced by the leader key: a server that lost the leadership still
                // owns its run's record, and the revision compare keeps it from writing
                // over any newer claim.
                Request::Txn(Txn {
                    compare: vec![Compare::ModRevision {
                        key: key.clone(),
                        revision: o.revision,
                    }],
                    success: vec![Op::Put {
                        key,
                        value: record.to_json(),
                        lease: 0,
                    }],
                    failure: vec![],
                })
            }
        })
    }
}

/// A write only the leader of term `fence` can make, over the `revision` of `key` it read (0:
/// the key must not exist): on failure, the leader key and `key` are read back to see why.
pub(super) fn fenced_put(
    leader_key: Vec<u8>,
    fence: i64,
    key: Vec<u8>,
    revision: i64,
    value: Vec<u8>,
) -> Txn {
    Txn {
        compare: vec![
            Compare::CreateRevision {
                key: leader_key.clone(),
                revision: fence,
            },
            Compare::ModRevision {
                key: key.clone(),
                revision,
            },
        ],
        success: vec![Op::Put {
            key: key.clone(),
            value,
            lease: 0,
        }],
        failure: vec![Op::Get { key: leader_key }, Op::Get { key }],
    }
}
