//! The JSON only the console asks for: `/ui/api/server` (server facts and the job-rate ring)
//! and `/ui/api/future` (future jobs with their due time), from data the reactor passes in.

use super::rates::{SLOT_MS, Slot};
use crate::engine::{EngineTotals, FutureJob};
use crate::http::json::{Obj, array, time};

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
    /// The journal's size on disk and the jobs it holds, with `--data-dir`.
    pub journal: Option<(u64, u64)>,
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
    match f.journal {
        None => {
            o.key("journal").push_str("null");
        }
        Some((bytes, jobs)) => {
            let mut j = Obj::new(o.key("journal"));
            j.num("bytes", bytes).num("jobs", jobs);
            j.end();
        }
    }
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
mod tests {
    use bytes::Bytes;

    use super::*;

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
            journal: Some((100, 3)),
            rates: (&slots, 10_000),
            actions: true,
        });
        assert_eq!(
            body,
            "{\"version\":\"1.2.3\",\"now\":\"1970-01-01T00:00:10Z\",\
             \"started\":\"1970-01-01T00:00:04Z\",\"uptime_seconds\":6,\"connections\":5,\
             \"workers\":2,\"functions\":0,\"jobs\":4,\"running\":1,\"schedules\":0,\
             \"draining\":false,\"rss_bytes\":4096,\"actions\":true,\"journal\":{\"bytes\":100,\"jobs\":3},\
             \"rates\":{\"slot_seconds\":10,\"last_slot_start\":\"1970-01-01T00:00:10Z\",\
             \"submitted\":[3,0],\"completed\":[2,0],\"failed\":[1,0]}}\n"
        );
        let none = server(&Facts {
            version: "x",
            now_ms: 0,
            started_ms: None,
            totals: EngineTotals::default(),
            connections: 0,
            rss_bytes: None,
            journal: None,
            rates: (&[], 0),
            actions: false,
        });
        assert!(none.contains("\"uptime_seconds\":null"));
        assert!(none.contains("\"journal\":null"));
        assert!(none.contains("\"last_slot_start\":null,\"submitted\":[]"));
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
