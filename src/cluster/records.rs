//! The values the cluster keeps under `gearwheel/{cluster}/` (leader, members, runs, ops): their
//! JSON text both ways. Written with crate::json, read with serde_json; a value that does
//! not parse is treated as absent fields, never as a panic (another version may write more).

use crate::json::Obj;

/// `P/leader` and `P/members/{id}`: who a server is and which schedules file it runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Member {
    pub id: String,
    /// Its Gearman listen address (`host:port`), the name operators know it by.
    pub addr: String,
    /// The digest of its schedules file (see digest.rs).
    pub digest: String,
    /// Per-entry digests, `id=digest` joined by spaces (only in the leader's value), so that
    /// followers can name the entries that differ.
    pub entries: String,
    /// Which start of the process this is (Settings::boot): a run record names it, so that
    /// a server that restarted under the same address is not taken for the one whose run it
    /// recorded (that run died with the old process).
    pub boot: String,
}

impl Member {
    pub fn to_json(&self) -> Vec<u8> {
        let mut s = String::new();
        let mut o = Obj::new(&mut s);
        o.str("id", &self.id)
            .str("addr", &self.addr)
            .str("digest", &self.digest)
            .str("entries", &self.entries)
            .str("boot", &self.boot)
            .str("version", env!("CARGO_PKG_VERSION"));
        o.end();
        s.into_bytes()
    }

    pub fn parse(value: &[u8]) -> Member {
        let v: serde_json::Value = serde_json::from_slice(value).unwrap_or_default();
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        Member {
            id: s("id"),
            addr: s("addr"),
            digest: s("digest"),
            entries: s("entries"),
            boot: s("boot"),
        }
    }
}

/// `P/runs/{entry}`: the last claimed run of an entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunRecord {
    /// Its scheduled time (unix ms). A run is claimed only if later than this.
    pub nominal_ms: u64,
    /// The leader that claimed it and its fence.
    pub leader: String,
    pub fence: i64,
    /// The server whose queue holds the run's jobs, and their unique (overlap=skip).
    pub server: String,
    pub unique: String,
    /// Until when the run blocks an `overlap=skip` entry on another server (unix ms; 0 =
    /// it does not block: the entry has no `timeout=`).
    pub until_ms: u64,
    /// The `boot` of the server that queued the run (see Member::boot).
    pub boot: String,
    /// overlap=skip: `Some(false)` while the run's jobs go on, `Some(true)` once the server
    /// that queued them saw them all end. `None`: written by a version that never marks a
    /// run done, so only `until` says when it ends.
    pub done: Option<bool>,
}

impl RunRecord {
    pub fn to_json(&self) -> Vec<u8> {
        let mut s = String::new();
        let mut o = Obj::new(&mut s);
        o.num("nominal", self.nominal_ms)
            .str("leader", &self.leader)
            .num("fence", self.fence)
            .str("server", &self.server)
            .str("unique", &self.unique)
            .num("until", self.until_ms)
            .str("boot", &self.boot);
        if let Some(done) = self.done {
            o.bool("done", done);
        }
        o.end();
        s.into_bytes()
    }

    pub fn parse(value: &[u8]) -> Option<RunRecord> {
        let v: serde_json::Value = serde_json::from_slice(value).ok()?;
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        let n = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
        Some(RunRecord {
            nominal_ms: v.get("nominal")?.as_u64()?,
            leader: s("leader"),
            fence: v.get("fence").and_then(|x| x.as_i64()).unwrap_or(0),
            server: s("server"),
            unique: s("unique"),
            until_ms: n("until"),
            boot: s("boot"),
            done: v.get("done").and_then(|x| x.as_bool()),
        })
    }
}

/// `P/ops/{entry}`: what operators asked of an entry on any server of the cluster. The
/// leader obeys it (a new leader too, since it reads it from etcd); every server shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpsRecord {
    /// `pause schedule`: no run of its timing is claimed until `resume schedule`.
    pub paused: bool,
    /// `skip schedule`: the first run claimed with a scheduled time after this (wall ms when
    /// asked) is skipped; 0 = never asked. It is spent once a later run is claimed, so a new
    /// leader never skips a second time.
    pub skip_after_ms: u64,
    /// `run schedule`: runs asked, and those the leader fired (each ask fires once: the
    /// leader counts it fired in the same fenced transaction that lets it fire).
    pub runs_asked: u64,
    pub runs_fired: u64,
}

impl OpsRecord {
    pub fn to_json(&self) -> Vec<u8> {
        let mut s = String::new();
        let mut o = Obj::new(&mut s);
        o.bool("paused", self.paused)
            .num("skip_after", self.skip_after_ms)
            .num("runs_asked", self.runs_asked)
            .num("runs_fired", self.runs_fired);
        o.end();
        s.into_bytes()
    }

    pub fn parse(value: &[u8]) -> OpsRecord {
        let v: serde_json::Value = serde_json::from_slice(value).unwrap_or_default();
        let n = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
        OpsRecord {
            paused: v.get("paused").and_then(|x| x.as_bool()).unwrap_or(false),
            skip_after_ms: n("skip_after"),
            runs_asked: n("runs_asked"),
            runs_fired: n("runs_fired"),
        }
    }

    /// A skip is still to come: no run after it was asked has been claimed (`claimed`: the
    /// entry's last claimed scheduled time).
    pub fn skip_pending(&self, claimed: u64) -> bool {
        self.skip_after_ms > 0 && claimed <= self.skip_after_ms
    }
}

/// `P/backfill/{entry}`: backfills asked on any server and not yet run, each a span of the
/// entry's times, oldest asked first. The leader runs them one time at a time, each with a
/// fenced write that takes the time off the record (its claim), so that no time runs twice
/// and a new leader goes on where the last one stopped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackfillRecord {
    pub spans: Vec<BackfillSpan>,
}

/// The entry's times after `after_ms` up to `to_ms`, at most `left` more (wall ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackfillSpan {
    pub after_ms: u64,
    pub to_ms: u64,
    pub left: u64,
}

impl BackfillRecord {
    pub fn to_json(&self) -> Vec<u8> {
        let mut s = String::new();
        let mut o = Obj::new(&mut s);
        crate::json::array(o.key("spans"), &self.spans, |out, sp| {
            let mut o = Obj::new(out);
            o.num("after", sp.after_ms)
                .num("to", sp.to_ms)
                .num("left", sp.left);
            o.end();
        });
        o.end();
        s.into_bytes()
    }

    /// A record read back; spans that do not parse are left out.
    pub fn parse(value: &[u8]) -> BackfillRecord {
        let v: serde_json::Value = serde_json::from_slice(value).unwrap_or_default();
        let spans = v
            .get("spans")
            .and_then(|x| x.as_array())
            .into_iter()
            .flatten()
            .filter_map(|sp| {
                let n = |k: &str| sp.get(k).and_then(|x| x.as_u64());
                Some(BackfillSpan {
                    after_ms: n("after")?,
                    to_ms: n("to")?,
                    left: n("left")?,
                })
            })
            .filter(|sp| sp.left > 0)
            .collect();
        BackfillRecord { spans }
    }

    /// The record once the leader ran `nominal`, the front span's next time (`None`: the
    /// front span has no time left, it goes).
    pub fn after_run(&self, nominal: Option<u64>) -> BackfillRecord {
        let mut spans = self.spans.clone();
        match (nominal, spans.first_mut()) {
            (Some(t), Some(front)) if front.left > 1 => {
                front.after_ms = t;
                front.left -= 1;
            }
            (_, Some(_)) => {
                spans.remove(0);
            }
            (_, None) => {}
        }
        BackfillRecord { spans }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_garbage_is_harmless() {
        let r = RunRecord {
            nominal_ms: 1_700_000_000_000,
            leader: "a:1".into(),
            fence: 7,
            server: "a:1".into(),
            unique: "nightly".into(),
            until_ms: 0,
            boot: "1-2".into(),
            done: Some(false),
        };
        assert_eq!(RunRecord::parse(&r.to_json()), Some(r.clone()));
        let old = RunRecord { done: None, ..r };
        assert_eq!(RunRecord::parse(&old.to_json()), Some(old));
        assert_eq!(RunRecord::parse(b"{\"x\":1}"), None);
        assert_eq!(RunRecord::parse(b"\xff{"), None);
        let m = Member {
            id: "a:1".into(),
            addr: "a:1".into(),
            digest: "d".into(),
            entries: "x=1 y=2".into(),
            boot: "1-2".into(),
        };
        assert_eq!(Member::parse(&m.to_json()), m);
        assert_eq!(Member::parse(b"nonsense"), Member::default());
        let ops = OpsRecord {
            paused: true,
            skip_after_ms: 5,
            runs_asked: 2,
            runs_fired: 1,
        };
        assert_eq!(OpsRecord::parse(&ops.to_json()), ops);
        assert_eq!(OpsRecord::parse(b"\xff"), OpsRecord::default());
        assert!(ops.skip_pending(5) && !ops.skip_pending(6));
        assert!(!OpsRecord::default().skip_pending(0));
    }
}
