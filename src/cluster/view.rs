//! The cluster seen from outside: `show cluster` lines, the `/cluster` JSON and the
//! `gearwheel_cluster_*` /metrics families, all formatted from a `Status`.

use std::fmt::Write as _;

use super::Status;
use crate::json::Obj;

/// This server's part: `leader`, `follower`, or `stopped` (its lease is not confirmed).
pub fn role(s: &Status) -> &'static str {
    if s.is_leader {
        "leader"
    } else if !s.reachable {
        "stopped"
    } else {
        "follower"
    }
}

/// `show cluster`: `key<TAB>value` lines, then one `member` line per live member
/// (its Gearman address, `leader` or `-`, whether its schedules file matches the leader's),
/// then `.`.
pub fn listing(s: &Status) -> String {
    let mut o = String::new();
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let _ = writeln!(o, "cluster\t{}", s.cluster);
    let _ = writeln!(o, "self\t{}", s.id);
    let _ = writeln!(o, "role\t{}", role(s));
    let _ = writeln!(o, "leader\t{}", opt(s.leader.clone()));
    let _ = writeln!(
        o,
        "etcd\t{}",
        if s.reachable {
            "reachable"
        } else {
            "unreachable"
        }
    );
    let _ = writeln!(
        o,
        "lease_left_ms\t{}",
        opt(s.lease_left_ms.map(|v| v.to_string()))
    );
    let _ = writeln!(
        o,
        "fence\t{}",
        opt(s.leader_revision.map(|v| v.to_string()))
    );
    let _ = writeln!(o, "failovers\t{}", s.stats.leaderships);
    let _ = writeln!(o, "fence_failures\t{}", s.stats.fence_failures);
    let _ = writeln!(o, "safety_stops\t{}", s.stats.safety_stops);
    let _ = writeln!(
        o,
        "differing\t{}",
        if s.differing.is_empty() {
            "-".to_string()
        } else {
            s.differing.join(",")
        }
    );
    for m in &s.members {
        let is_leader = s.leader.as_deref() == Some(m.id.as_str());
        let _ = writeln!(
            o,
            "member\t{}\t{}\t{}",
            m.addr,
            if is_leader { "leader" } else { "-" },
            if m.digest.is_empty() { "-" } else { &m.digest }
        );
    }
    o.push_str(".\n");
    o
}

/// `/cluster`.
pub fn json(s: &Status) -> String {
    let mut out = String::new();
    let mut o = Obj::new(&mut out);
    o.str("cluster", &s.cluster)
        .str("self", &s.id)
        .str("role", role(s))
        .opt_str("leader", s.leader.as_deref())
        .bool("etcd_reachable", s.reachable)
        .opt_num("lease_left_ms", s.lease_left_ms)
        .opt_num("fence", s.leader_revision.map(|v| v.max(0) as u64))
        .num("failovers", s.stats.leaderships)
        .num("fence_failures", s.stats.fence_failures)
        .num("safety_stops", s.stats.safety_stops);
    let differing = &s.differing;
    crate::json::array(o.key("differing"), differing, |out, d| {
        crate::json::string(out, d)
    });
    let leader = s.leader.clone();
    crate::json::array(o.key("members"), &s.members, |out, m| {
        let mut e = Obj::new(out);
        e.str("id", &m.id)
            .str("addr", &m.addr)
            .bool("leader", leader.as_deref() == Some(m.id.as_str()))
            .str("digest", &m.digest);
        e.end();
    });
    o.end();
    out
}

/// The `gearwheel_cluster_*` and `gearwheel_etcd_*` families.
pub fn metrics(s: &Status, out: &mut String) {
    fn family(out: &mut String, name: &str, kind: &str, help: &str, v: String) {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}"
        );
    }
    /// A family with one label, a sample per value.
    fn labelled<L: std::fmt::Display>(
        out: &mut String,
        name: &str,
        help: &str,
        label: &str,
        samples: impl IntoIterator<Item = (L, u64)>,
    ) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (value, n) in samples {
            let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {n}");
        }
    }
    let b = |x: bool| if x { "1" } else { "0" }.to_string();
    family(
        out,
        "gearwheel_cluster_leader",
        "gauge",
        "1 while this server is the cluster's leader and fires the schedules.",
        b(s.is_leader),
    );
    family(
        out,
        "gearwheel_cluster_failovers_total",
        "counter",
        "Times this server became the cluster's leader.",
        s.stats.leaderships.to_string(),
    );
    family(
        out,
        "gearwheel_cluster_fence_failures_total",
        "counter",
        "Claims etcd refused because another server held the leader key.",
        s.stats.fence_failures.to_string(),
    );
    family(
        out,
        "gearwheel_cluster_safety_stops_total",
        "counter",
        "Times the leader stopped firing because its lease could not be renewed in time.",
        s.stats.safety_stops.to_string(),
    );
    labelled(
        out,
        "gearwheel_cluster_claims_total",
        "Schedule run claims by outcome.",
        "outcome",
        [
            ("granted", s.stats.claims_granted),
            ("refused", s.stats.claims_refused),
            ("unknown", s.stats.claims_unknown),
        ],
    );
    family(
        out,
        "gearwheel_etcd_reachable",
        "gauge",
        "1 while etcd answers and this server's lease is confirmed.",
        b(s.reachable),
    );
    let _ = writeln!(
        out,
        "# HELP gearwheel_etcd_request_seconds Latency of the requests to etcd.\n# TYPE gearwheel_etcd_request_seconds summary\ngearwheel_etcd_request_seconds_sum {:.3}\ngearwheel_etcd_request_seconds_count {}",
        s.stats.latency_sum_ms as f64 / 1000.0,
        s.stats.requests
    );
    family(
        out,
        "gearwheel_etcd_request_max_seconds",
        "gauge",
        "The slowest request to etcd since start.",
        format!("{:.3}", s.stats.latency_max_ms as f64 / 1000.0),
    );
    family(
        out,
        "gearwheel_etcd_request_errors_total",
        "counter",
        "Requests to etcd that failed (error, timeout, lost connection).",
        s.stats.request_errors.to_string(),
    );
    family(
        out,
        "gearwheel_etcd_compactions_total",
        "counter",
        "Compactions of etcd's history this server made as the leader (--etcd-compaction-interval).",
        s.stats.compactions.to_string(),
    );
    labelled(
        out,
        "gearwheel_etcd_tls_failures_total",
        "TLS sessions with etcd that failed (https:// --etcd), by reason.",
        "reason",
        s.stats.tls_failures.iter().map(|(reason, n)| (reason, *n)),
    );
}
