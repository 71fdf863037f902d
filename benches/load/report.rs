//! A run's results: one `key value` line each, then the one `RESULT key=value ...` line that
//! benches/compare.sh reads; percentiles, and the server's CPU and RSS per job.

use crate::opts::Opts;
use crate::procfs::ProcSnap;

pub(crate) struct Report {
    mode: String,
    label: String,
    pairs: Vec<(String, String)>,
}

impl Report {
    pub(crate) fn new(o: &Opts) -> Report {
        Report {
            mode: o.mode.clone(),
            label: o.label.clone(),
            pairs: Vec::new(),
        }
    }

    pub(crate) fn put(&mut self, k: &str, v: impl std::fmt::Display) {
        self.pairs.push((k.to_string(), v.to_string()));
    }

    pub(crate) fn putf(&mut self, k: &str, v: f64, decimals: usize) {
        self.put(k, format!("{v:.decimals$}"));
    }

    pub(crate) fn print(&self) {
        println!("{} against {}:", self.mode, self.label);
        for (k, v) in &self.pairs {
            println!("  {k:<28} {v}");
        }
        let mut line = format!("RESULT mode={} label={}", self.mode, self.label);
        for (k, v) in &self.pairs {
            line.push_str(&format!(" {k}={v}"));
        }
        println!("{line}");
    }
}

/// Percentile of sorted values.
pub(crate) fn pct<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    Some(sorted[i.min(sorted.len() - 1)])
}

pub(crate) fn put_server(
    r: &mut Report,
    before: Option<ProcSnap>,
    after: Option<ProcSnap>,
    jobs: u64,
) {
    if let (Some(b), Some(a)) = (before, after) {
        let cpu = a.cpu - b.cpu;
        r.putf("server_cpu_s", cpu, 2);
        r.putf("server_cpu_us_per_job", cpu * 1e6 / jobs.max(1) as f64, 2);
        r.putf(
            "server_wakeups_per_job",
            a.ctxt.saturating_sub(b.ctxt) as f64 / jobs.max(1) as f64,
            2,
        );
        r.put("server_rss_kb_before", b.rss_kb);
        r.put("server_rss_kb_after", a.rss_kb);
        r.put("server_threads", a.threads);
    }
}

pub(crate) fn put_latency_us(r: &mut Report, mut lat: Vec<u32>) {
    lat.sort_unstable();
    for (k, p) in [
        ("p10_us", 0.1),
        ("p50_us", 0.5),
        ("p90_us", 0.9),
        ("p95_us", 0.95),
        ("p99_us", 0.99),
        ("p999_us", 0.999),
    ] {
        if let Some(v) = pct(&lat, p) {
            r.put(k, v);
        }
    }
    if let Some(m) = lat.last() {
        r.put("max_us", m);
    }
}
