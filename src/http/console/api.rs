//! The JSON only the console asks for: `/ui/api/server` (server facts and the job-rate ring)
//! and `/ui/api/future` (future jobs with their due time), from data the reactor passes in,
//! and the previews every list cuts its texts to (`lists` has the filtered and paged lists). Every answer is
//! bounded whatever the server holds: a page polls it every second.

use super::rates::{SLOT_MS, Slot};
use crate::engine::{EngineTotals, FailedList, FutureJob};
use crate::http::json::{Obj, array, time};
use crate::store::JournalMetrics;

/// What `/ui/api/server` shows.
pub struct Facts<'a> {
    pub version: &'a str,
    pub now_ms: u64,
    /// Process start (ms since the epoch), when /proc says.
    pub started_ms: Option<u64>,
    pub totals: EngineTotals,
    /// Open connections, HTTP ones (this one) included.
    pub connections: usize,
    pub rss_bytes: Option<u64>,
    /// The journal's size, jobs and fsyncs, with `--data-dir`.
    pub journal: Option<&'a JournalMetrics>,
    /// The failed list (counted per function for the overview).
    pub failed: &'a FailedList,
    /// The cluster's leader, when this server is one of a cluster (`--etcd`) and a leader is
    /// known; `None` shows no leader line.
    pub leader: Option<&'a str>,
    /// This server's part in the cluster, for the header of every page: `leader`,
    /// `follower`, `stopped` (as `show cluster` says), or `standalone` without `--etcd`.
    pub role: &'a str,
    /// The rate ring's slots, oldest first, and the last (open) slot's start.
    pub rates: (&'a [Slot], u64),
    /// The asking peer may use the console's actions (on loopback; under --acl, granted admin).
    pub actions: bool,
}

pub fn server(f: &Facts<'_>) -> String {
    let mut out = String::with_capacity(512 + f.rates.0.len() * 24);
    let mut o = Obj::new(&mut out);
    let t = &f.totals;
    o.str("version", f.version);
    time(&mut o, "now", Some(f.now_ms));
    time(&mut o, "started", f.started_ms);
    o.opt_num(
        "uptime_seconds",
        f.started_ms.map(|s| f.now_ms.saturating_sub(s) / 1000),
    )
    .num("connections", f.connections)
    .num("workers", t.workers)
    .num("functions", t.functions)
    .num("jobs", t.jobs)
    .num("running", t.running)
    .num("schedules", t.schedules)
    .bool("draining", t.draining)
    .opt_num("rss_bytes", f.rss_bytes)
    .bool("actions", f.actions);
    o.opt_str("leader", f.leader);
    o.str("role", f.role);
    match f.journal {
        None => {
            o.key("journal").push_str("null");
        }
        Some(m) => {
            let mut j = Obj::new(o.key("journal"));
            j.num("bytes", m.total_bytes)
                .num("jobs", m.live_jobs)
                .num("fsyncs", m.fsync.count)
                .opt_num(
                    "last_fsync_us",
                    (m.fsync.count > 0).then_some(m.fsync.last_us),
                );
            j.end();
        }
    }
    failed_counts(o.key("failed"), f.failed);
    {
        let (slots, open_ms) = f.rates;
        let mut r = Obj::new(o.key("rates"));
        r.num("slot_seconds", SLOT_MS / 1000);
        time(
            &mut r,
            "last_slot_start",
            (!slots.is_empty()).then_some(open_ms),
        );
        for (k, pick) in [
            ("submitted", (|s: &Slot| s.submitted) as fn(&Slot) -> u64),
            ("completed", |s: &Slot| s.completed),
            ("failed", |s: &Slot| s.failed),
        ] {
            array(r.key(k), slots, |out, s| out.push_str(&pick(s).to_string()));
        }
        r.end();
    }
    o.end();
    out.push('\n');
    out
}

/// How many functions the overview's failed counts name (the most failed first); the rest are
/// summed in `other`.
pub const FAILED_FUNCTIONS_SHOWN: usize = 100;

/// `{"total":N,"functions":[{"function":F,"count":C},...],"other":O}`.
fn failed_counts(out: &mut String, failed: &FailedList) {
    let mut by: Vec<(&[u8], usize)> = Vec::new();
    let mut index = crate::engine::FastMap::<&[u8], usize>::default();
    for j in failed.iter() {
        let i = *index.entry(&j.func[..]).or_insert_with(|| {
            by.push((&j.func[..], 0));
            by.len() - 1
        });
        by[i].1 += 1;
    }
    by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let shown = by.len().min(FAILED_FUNCTIONS_SHOWN);
    let other: usize = by[shown..].iter().map(|x| x.1).sum();
    let mut o = Obj::new(out);
    o.num("total", failed.len());
    array(o.key("functions"), &by[..shown], |out, (f, n)| {
        let mut o = Obj::new(out);
        o.bytes("function", f).num("count", n);
        o.end();
    });
    o.num("other", other);
    o.end();
}

/// The longest workload preview, in bytes (`workload_bytes` gives the whole size).
pub const WORKLOAD_PREVIEW: usize = 200;

/// At most `max` bytes of `b`, not ending inside a UTF-8 character (bytes that are not UTF-8
/// become U+FFFD when written).
pub(super) fn preview(b: &[u8], max: usize) -> &[u8] {
    if b.len() <= max {
        return b;
    }
    let cut = &b[..max];
    match std::str::from_utf8(cut) {
        Err(e) if e.error_len().is_none() => &cut[..e.valid_up_to()],
        _ => cut,
    }
}

/// How many actions `/ui/api/audit` lists (the newest); `total` says how many are kept.
pub const AUDIT_SHOWN: usize = 50;

/// How many future jobs `/ui/api/future` lists (the soonest); `total` says how many there are.
pub const FUTURE_SHOWN: usize = 200;

pub fn future(total: usize, jobs: &[FutureJob]) -> String {
    let mut out = String::with_capacity(64 + jobs.len() * 128);
    let mut o = Obj::new(&mut out);
    o.num("total", total);
    array(o.key("jobs"), jobs, |out, j| {
        let mut o = Obj::new(out);
        o.bytes("handle", &j.handle)
            .bytes("function", &j.function)
            .bytes("unique", &j.unique);
        time(&mut o, "due", Some(j.due_ms));
        o.end();
    });
    o.end();
    out.push('\n');
    out
}

#[cfg(test)]
pub(super) mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::engine::FailedJob;

    pub(in crate::http::console) fn failed_job(
        handle: &str,
        func: &[u8],
        data: Vec<u8>,
        error: Vec<u8>,
    ) -> FailedJob {
        FailedJob {
            handle: Bytes::from(handle.to_string()),
            func: Bytes::copy_from_slice(func),
            unique: Bytes::from_static(b"u"),
            data: Bytes::from(data),
            error: Bytes::from(error),
            attempts: 1,
            first_ms: 1_000,
            last_ms: 2_000,
            entry: None,
        }
    }

    #[test]
    fn server_shape() {
        let slots = [
            Slot {
                submitted: 3,
                completed: 2,
                failed: 1,
            },
            Slot::default(),
        ];
        let mut journal = JournalMetrics {
            total_bytes: 100,
            live_jobs: 3,
            ..JournalMetrics::default()
        };
        journal.fsync.observe(1_500);
        journal.fsync.observe(420);
        let mut failed = FailedList::new(10, 0);
        for (h, f) in [("H:x:1", "b"), ("H:x:2", "a"), ("H:x:3", "b")] {
            failed.push(failed_job(h, f.as_bytes(), vec![], b"e".to_vec()));
        }
        let body = server(&Facts {
            version: "1.2.3",
            now_ms: 10_000,
            started_ms: Some(4_000),
            totals: EngineTotals {
                jobs: 4,
                running: 1,
                workers: 2,
                ..EngineTotals::default()
            },
            connections: 5,
            rss_bytes: Some(4096),
            journal: Some(&journal),
            failed: &failed,
            leader: None,
            role: "standalone",
            rates: (&slots, 10_000),
            actions: true,
        });
        assert_eq!(
            body,
            "{\"version\":\"1.2.3\",\"now\":\"1970-01-01T00:00:10Z\",\
             \"started\":\"1970-01-01T00:00:04Z\",\"uptime_seconds\":6,\"connections\":5,\
             \"workers\":2,\"functions\":0,\"jobs\":4,\"running\":1,\"schedules\":0,\
             \"draining\":false,\"rss_bytes\":4096,\"actions\":true,\"leader\":null,\"role\":\"standalone\",\
             \"journal\":{\"bytes\":100,\"jobs\":3,\"fsyncs\":2,\"last_fsync_us\":420},\
             \"failed\":{\"total\":3,\"functions\":[{\"function\":\"b\",\"count\":2},\
             {\"function\":\"a\",\"count\":1}],\"other\":0},\
             \"rates\":{\"slot_seconds\":10,\"last_slot_start\":\"1970-01-01T00:00:10Z\",\
             \"submitted\":[3,0],\"completed\":[2,0],\"failed\":[1,0]}}\n"
        );
        let empty = FailedList::new(10, 0);
        let quiet = JournalMetrics::default();
        let bare = Facts {
            version: "x",
            now_ms: 0,
            started_ms: None,
            totals: EngineTotals::default(),
            connections: 0,
            rss_bytes: None,
            journal: None,
            failed: &empty,
            leader: Some("node-b"),
            role: "follower",
            rates: (&[], 0),
            actions: false,
        };
        let none = server(&bare);
        assert!(none.contains("\"uptime_seconds\":null"));
        assert!(none.contains("\"journal\":null"));
        assert!(none.contains("\"leader\":\"node-b\",\"role\":\"follower\""));
        assert!(none.contains("\"failed\":{\"total\":0,\"functions\":[],\"other\":0}"));
        assert!(none.contains("\"last_slot_start\":null,\"submitted\":[]"));
        let no_fsync_yet = server(&Facts {
            journal: Some(&quiet),
            leader: None,
            ..bare
        });
        assert!(no_fsync_yet.contains("\"fsyncs\":0,\"last_fsync_us\":null"));
    }

    #[test]
    fn failed_counts_are_bounded() {
        let mut failed = FailedList::new(1000, 0);
        for i in 0..FAILED_FUNCTIONS_SHOWN + 5 {
            let f = format!("f{i:03}");
            failed.push(failed_job(
                &format!("H:x:{i}"),
                f.as_bytes(),
                vec![],
                b"e".to_vec(),
            ));
        }
        failed.push(failed_job("H:x:a", b"f000", vec![], b"e".to_vec()));
        let mut out = String::new();
        failed_counts(&mut out, &failed);
        assert!(
            out.starts_with("{\"total\":106,\"functions\":[{\"function\":\"f000\",\"count\":2},")
        );
        assert_eq!(out.matches("\"count\"").count(), FAILED_FUNCTIONS_SHOWN);
        assert!(out.ends_with("],\"other\":5}"), "{out}");
    }

    #[test]
    fn future_shape_escapes_names() {
        let j = FutureJob {
            handle: Bytes::from_static(b"H:x:1"),
            function: Bytes::from_static(b"<img src=x onerror=\"alert(1)\">"),
            unique: Bytes::from_static(b"u"),
            due_ms: 4_102_444_800_000,
        };
        assert_eq!(
            future(7, &[j]),
            "{\"total\":7,\"jobs\":[{\"handle\":\"H:x:1\",\
             \"function\":\"<img src=x onerror=\\\"alert(1)\\\">\",\"unique\":\"u\",\
             \"due\":\"2100-01-01T00:00:00Z\"}]}\n"
        );
    }
}
