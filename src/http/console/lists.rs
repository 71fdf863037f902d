//! The console's filtered and paged lists: the query strings they take (one function's
//! queued, running or future jobs, `/ui/api/jobs?function=F&state=S&offset=N&limit=N`; the
//! failed jobs of a function or schedule entry, `/ui/api/failed?function=F&entry=E`, and the
//! same filter as the body of Retry all / Drop all) and the JSON of a job page. Every page is
//! bounded: `limit` and `offset` are capped here, whatever the query asks.

use bytes::Bytes;

use super::api::{WORKLOAD_PREVIEW, preview};
use crate::engine::{FailedJob, FailedList, JobPage, JobPhase};
use crate::http::json::{Obj, array, priority_name, time};

/// The most jobs one page lists (`limit`), and the page size when the query names none.
pub const PAGE_MAX: usize = 200;
pub const PAGE_DEFAULT: usize = 50;
/// How far into a queue a page may start: a queued page walks the queue from its head, so the
/// walk one request costs the loop is bounded too.
pub const OFFSET_MAX: usize = 100_000;

/// `/ui/api/jobs`'s query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobsQuery {
    pub function: Bytes,
    pub phase: JobPhase,
    pub offset: usize,
    pub limit: usize,
}

/// The failed jobs a view or a bulk action names (`None` matches any).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailedFilter {
    pub function: Option<Bytes>,
    pub entry: Option<Bytes>,
    /// One job (a job's page asks whether it is in the failed list).
    pub handle: Option<Bytes>,
}

impl FailedFilter {
    pub fn selector(&self) -> crate::engine::FailedSelector<'_> {
        crate::engine::FailedSelector::Matching {
            function: self.function.as_deref(),
            entry: self.entry.as_deref(),
            handle: self.handle.as_deref(),
        }
    }
}

/// `a=1&b=x%20y` as decoded pairs (`+` is a space, as forms send it); `None` on a bad escape.
fn pairs(q: &[u8]) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let decode = |s: &[u8]| -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(s.len());
        let mut i = 0;
        while let Some(&c) = s.get(i) {
            match c {
                b'%' => {
                    let hex = std::str::from_utf8(s.get(i + 1..i + 3)?).ok()?;
                    out.push(u8::from_str_radix(hex, 16).ok()?);
                    i += 3;
                }
                b'+' => {
                    out.push(b' ');
                    i += 1;
                }
                c => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        Some(out)
    };
    q.split(|&b| b == b'&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_at(p.iter().position(|&b| b == b'=').unwrap_or(p.len()));
            Some((decode(k)?, decode(v.strip_prefix(b"=").unwrap_or(v))?))
        })
        .collect()
}

fn number(v: &[u8]) -> Option<usize> {
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// A name from a query: non-empty, no control characters (it is matched, never stored).
fn name(v: Vec<u8>) -> Result<Bytes, &'static str> {
    if v.is_empty() || crate::proto::names::has_control(&v) {
        return Err("a name must be non-empty, with no control characters");
    }
    Ok(Bytes::from(v))
}

pub fn jobs_query(q: &[u8]) -> Result<JobsQuery, &'static str> {
    let mut function = None;
    let mut phase = JobPhase::Queued;
    let (mut offset, mut limit) = (0, PAGE_DEFAULT);
    for (k, v) in pairs(q).ok_or("bad percent-escape in the query")? {
        match &k[..] {
            b"function" => function = Some(name(v)?),
            b"state" => {
                phase = match &v[..] {
                    b"queued" => JobPhase::Queued,
                    b"running" => JobPhase::Running,
                    b"future" => JobPhase::Future,
                    _ => return Err("state must be queued, running or future"),
                }
            }
            b"offset" => offset = number(&v).ok_or("offset must be a number")?,
            b"limit" => limit = number(&v).ok_or("limit must be a number")?,
            _ => {}
        }
    }
    Ok(JobsQuery {
        function: function.ok_or("the query must name a function (function=NAME)")?,
        phase,
        offset: offset.min(OFFSET_MAX),
        limit: limit.min(PAGE_MAX),
    })
}

/// `function=F&entry=E&handle=H`, any of them; empty: every failed job.
pub fn failed_filter(q: &[u8]) -> Result<FailedFilter, &'static str> {
    let mut f = FailedFilter::default();
    for (k, v) in pairs(q).ok_or("bad percent-escape in the query")? {
        match &k[..] {
            b"function" if !v.is_empty() => f.function = Some(name(v)?),
            b"entry" if !v.is_empty() => f.entry = Some(name(v)?),
            b"handle" if !v.is_empty() => f.handle = Some(name(v)?),
            _ => {}
        }
    }
    Ok(f)
}

/// `/ui/api/jobs`: a page of one function's jobs. `worker` names a running job's worker as
/// `/workers` does (its identity), from the reactor's connections.
pub fn jobs(
    q: &JobsQuery,
    page: &JobPage,
    now_ms: u64,
    worker: impl Fn(&crate::engine::ConnId) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(128 + page.jobs.len() * (WORKLOAD_PREVIEW + 192));
    let mut o = Obj::new(&mut out);
    o.bytes("function", &q.function)
        .str("state", q.phase.name())
        .num("total", page.total)
        .num("offset", q.offset)
        .num("limit", q.limit);
    array(o.key("jobs"), &page.jobs, |out, j| {
        let mut o = Obj::new(out);
        o.bytes("handle", &j.handle)
            .bytes("unique", preview(&j.unique, WORKLOAD_PREVIEW))
            .str("priority", priority_name(j.priority))
            .bytes("workload", preview(&j.data, WORKLOAD_PREVIEW))
            .num("workload_bytes", j.data.len());
        time(&mut o, "submitted", Some(j.added_ms));
        o.num("age_ms", now_ms.saturating_sub(j.added_ms));
        time(&mut o, "since", j.since_ms);
        o.opt_num("running_ms", j.since_ms.map(|s| now_ms.saturating_sub(s)));
        time(&mut o, "due", j.due_ms);
        let w = j.worker.as_ref().and_then(&worker);
        o.opt_str("worker", w.as_deref());
        o.end();
    });
    o.end();
    out.push('\n');
    out
}

/// How many failed jobs `/ui/api/failed` lists (the newest); `total` says how many are kept.
pub const FAILED_SHOWN: usize = 100;
/// The longest error text shown, in bytes (`error_bytes` gives the whole size).
pub const ERROR_PREVIEW: usize = 1000;

/// `/ui/api/failed`: the newest `FAILED_SHOWN` failed jobs, newest first, each with a preview
/// of its workload and error.
pub fn failed(list: &FailedList) -> String {
    failed_matching(list, &FailedFilter::default())
}

/// `/ui/api/failed?function=F&entry=E`: as `failed`, of the jobs the filter names; `total`
/// counts those, `kept` every failed job.
pub fn failed_matching(list: &FailedList, filter: &FailedFilter) -> String {
    let sel = filter.selector();
    let total = list.iter().filter(|j| sel.matches(j)).count();
    let jobs: Vec<&FailedJob> = list
        .iter()
        .rev()
        .filter(|j| sel.matches(j))
        .take(FAILED_SHOWN)
        .collect();
    let mut out = String::with_capacity(64 + jobs.len() * (WORKLOAD_PREVIEW + 256));
    let mut o = Obj::new(&mut out);
    o.num("total", total).num("kept", list.len());
    array(o.key("jobs"), &jobs, |out, j| {
        let mut o = Obj::new(out);
        o.bytes("handle", &j.handle)
            .bytes("function", &j.func)
            .bytes("unique", preview(&j.unique, WORKLOAD_PREVIEW))
            .bytes("workload", preview(&j.data, WORKLOAD_PREVIEW))
            .num("workload_bytes", j.data.len())
            .bytes("error", preview(&j.error, ERROR_PREVIEW))
            .num("error_bytes", j.error.len())
            .num("attempts", j.attempts);
        time(&mut o, "first_failure", Some(j.first_ms));
        time(&mut o, "last_failure", Some(j.last_ms));
        o.opt_str("entry", j.entry.as_deref());
        o.end();
    });
    o.end();
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::super::api::tests::failed_job;
    use super::*;
    use crate::engine::{ConnId, ListedJob};
    use crate::proto::request::Priority;

    #[test]
    fn queries_are_parsed_and_capped() {
        let q =
            jobs_query(b"function=video.transcode%20hd&state=running&offset=5&limit=20").unwrap();
        assert_eq!(&q.function[..], b"video.transcode hd");
        assert_eq!((q.phase, q.offset, q.limit), (JobPhase::Running, 5, 20));
        let q = jobs_query(b"function=a+b&limit=100000&offset=999999999").unwrap();
        assert_eq!(&q.function[..], b"a b");
        assert_eq!(
            (q.phase, q.offset, q.limit),
            (JobPhase::Queued, OFFSET_MAX, PAGE_MAX)
        );
        assert_eq!(jobs_query(b"function=f").unwrap().limit, PAGE_DEFAULT);
        for bad in [
            &b""[..],
            b"state=queued",
            b"function=",
            b"function=%0a",
            b"function=f&state=done",
            b"function=f&limit=-1",
            b"function=%zz",
            b"function=f&offset=%",
        ] {
            assert!(jobs_query(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn failed_filters() {
        assert_eq!(failed_filter(b"").unwrap(), FailedFilter::default());
        assert_eq!(
            failed_filter(b"function=&entry=").unwrap(),
            FailedFilter::default()
        );
        let h = failed_filter(b"handle=H%3Ax%3A1").unwrap();
        assert_eq!(h.handle.as_deref(), Some(&b"H:x:1"[..]));
        let f = failed_filter(b"function=f&entry=nightly%2Dbackup").unwrap();
        assert_eq!(f.function.as_deref(), Some(&b"f"[..]));
        assert_eq!(f.entry.as_deref(), Some(&b"nightly-backup"[..]));
        assert!(failed_filter(b"entry=a%00b").is_err());
    }

    #[test]
    fn a_page_of_jobs() {
        let q = jobs_query(b"function=f&state=running").unwrap();
        let w = ConnId {
            index: 3,
            generation: 1,
        };
        let page = JobPage {
            total: 7,
            jobs: vec![ListedJob {
                handle: Bytes::from_static(b"H:x:1"),
                unique: Bytes::from_static(b"u"),
                priority: Priority::High,
                data: Bytes::from(vec![b'x'; 300]),
                added_ms: 500,
                worker: Some(w),
                since_ms: Some(1_000),
                due_ms: None,
            }],
        };
        let body = jobs(&q, &page, 4_000, |c| {
            (c.index == 3).then(|| "addr:127.0.0.1".into())
        });
        assert_eq!(
            body,
            format!(
                "{{\"function\":\"f\",\"state\":\"running\",\"total\":7,\"offset\":0,\
                 \"limit\":50,\"jobs\":[{{\"handle\":\"H:x:1\",\"unique\":\"u\",\
                 \"priority\":\"high\",\"workload\":\"{}\",\"workload_bytes\":300,\
                 \"submitted\":\"1970-01-01T00:00:00Z\",\"age_ms\":3500,\"since\":\"1970-01-01T00:00:01Z\",\"running_ms\":3000,\"due\":null,\
                 \"worker\":\"addr:127.0.0.1\"}}]}}\n",
                "x".repeat(WORKLOAD_PREVIEW)
            )
        );
    }

    #[test]
    fn failed_list_is_newest_first_bounded_and_cut() {
        let mut list = FailedList::new(1000, 0);
        // A workload of 3-byte characters, cut inside one; an error with control bytes and
        // HTML; binary data.
        let long = "\u{20ac}".repeat(100).into_bytes();
        list.push(failed_job(
            "H:x:1",
            b"<img src=x onerror=alert(1)>",
            long.clone(),
            b"line 1\nline 2\x00<b>".to_vec(),
        ));
        list.push(failed_job(
            "H:x:2",
            b"f",
            vec![0xff, 0xfe, b'a'],
            vec![b'e'; 5000],
        ));
        let body = failed(&list);
        let v: Vec<&str> = body.split("{\"handle\":").collect();
        assert_eq!(v.len(), 3);
        assert!(v[0].starts_with("{\"total\":2,\"kept\":2,\"jobs\":["));
        assert!(v[1].starts_with("\"H:x:2\""), "newest first");
        assert!(v[1].contains("\"workload\":\"\u{fffd}\u{fffd}a\",\"workload_bytes\":3"));
        assert!(v[1].contains(&format!(
            "\"error\":\"{}\",\"error_bytes\":5000",
            "e".repeat(ERROR_PREVIEW)
        )));
        // 200 bytes end inside the 67th euro sign: 66 whole ones are shown.
        let shown = format!(
            "\"workload\":\"{}\",\"workload_bytes\":300",
            "\u{20ac}".repeat(66)
        );
        assert!(v[2].contains(&shown), "{}", v[2]);
        assert!(v[2].contains("\"function\":\"<img src=x onerror=alert(1)>\""));
        assert!(
            v[2].contains("\"error\":\"line 1\\nline 2\\u0000<b>\""),
            "{}",
            v[2]
        );
        for i in 3..FAILED_SHOWN + 10 {
            list.push(failed_job(&format!("H:x:{i}"), b"f", vec![], b"e".to_vec()));
        }
        let body = failed(&list);
        assert!(body.starts_with(&format!("{{\"total\":{},", FAILED_SHOWN + 9)));
        let only = failed_matching(
            &list,
            &FailedFilter {
                function: Some(Bytes::from_static(b"<img src=x onerror=alert(1)>")),
                entry: None,
                handle: None,
            },
        );
        assert!(only.starts_with(&format!("{{\"total\":1,\"kept\":{},", FAILED_SHOWN + 9)));
        assert_eq!(only.matches("\"handle\"").count(), 1);
        assert_eq!(body.matches("\"handle\"").count(), FAILED_SHOWN);
        assert!(body.contains(&format!("\"handle\":\"H:x:{}\"", FAILED_SHOWN + 9)));
        assert!(
            !body.contains("\"handle\":\"H:x:1\""),
            "the oldest is not shown"
        );
    }
}
