//! The cluster machine's vocabulary with the outside: which link, the settings, a claim and
//! its answer, what to do next, counters and a status view.

use super::etcd::Request;
use super::records::{Member, OpsRecord};

pub(crate) fn rfc3339(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| ms.to_string())
}

/// Which connection a request goes on: the unary one (one request in flight) or the watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    Unary,
    Watch,
}

/// What the machine is told at start.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `--cluster NAME`: the keys live under `gearwheel/{NAME}/`.
    pub cluster: String,
    /// This server's id and address: its first Gearman listen address.
    pub id: String,
    /// `--etcd-lease-ttl`, in seconds.
    pub ttl_secs: i64,
    /// A unary request unanswered this long drops the connection.
    pub request_timeout_ms: u64,
    /// Claims waiting for the unary connection at most; more are refused.
    pub max_pending_claims: usize,
    /// Names this start of the process (unique per start: the reactor uses the pid and the
    /// start time), so that run records of an earlier start of the same server are known.
    pub boot: String,
    /// `--etcd-compaction-interval` in ms: the leader compacts etcd's history this often
    /// (0: never).
    pub compaction_interval_ms: u64,
}

/// A due run the engine asks to fire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimAsk {
    pub entry: String,
    /// Its scheduled time (wall-clock unix ms).
    pub nominal_ms: u64,
    /// `overlap=skip`: a run of it still going on another live server blocks this one.
    pub overlap_skip: bool,
    /// The unique its jobs get (overlap=skip), recorded for the other servers.
    pub unique: String,
    /// Until when this run blocks the entry elsewhere (wall ms; 0 = it does not).
    pub until_ms: u64,
    /// The wall clock when asked (overlap checks compare `until` with it).
    pub wall_ms: u64,
}

/// Why a run was not granted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// This server is not the leader: the leader fires (quietly refused).
    NotLeader,
    /// The lease could not be renewed in time: no run fires until etcd confirms it again.
    LeaseUnsure,
    /// The run's time (or a later one) is already claimed.
    AlreadyClaimed { recorded_ms: u64 },
    /// overlap=skip: the entry's last run is still going on another live server.
    Busy { server: String },
    /// etcd said this server no longer holds the leader key (a newer leader has it).
    FenceRejected,
    /// etcd did not answer, or answered an error: the claim's fate is unknown, so it is
    /// treated as not granted (a run is lost rather than doubled).
    Unknown(String),
    /// Too many claims waiting for etcd.
    QueueFull,
    /// An operator paused the entry (`pause schedule` on any server of the cluster).
    Paused,
}

/// An operator's hand on an entry, asked on any server and kept in etcd (`P/ops/{entry}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryOp {
    Pause,
    Resume,
    /// Skip the first run claimed with a scheduled time after `after_ms` (wall ms when asked).
    Skip {
        after_ms: u64,
    },
    /// One run now, fired by the leader.
    Run,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotLeader => write!(f, "this server is not the cluster's leader"),
            Refusal::LeaseUnsure => write!(
                f,
                "the etcd lease could not be renewed in time; not firing (safety before liveness)"
            ),
            Refusal::AlreadyClaimed { recorded_ms } => write!(
                f,
                "already claimed (the last claimed run is at {})",
                rfc3339(*recorded_ms)
            ),
            Refusal::Busy { server } => write!(
                f,
                "its last run is still going on {server} (overlap=skip across the cluster)"
            ),
            Refusal::FenceRejected => write!(
                f,
                "etcd refused the claim: another server holds the leader key now"
            ),
            Refusal::Unknown(why) => write!(f, "claim not confirmed by etcd ({why})"),
            Refusal::QueueFull => write!(f, "too many claims waiting for etcd"),
            Refusal::Paused => write!(f, "paused (pause schedule, kept in etcd for the cluster)"),
        }
    }
}

/// The answer to one claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub ask: ClaimAsk,
    pub result: Result<(), Refusal>,
    /// A granted run an operator asked to skip (`skip schedule`): it is claimed, so the
    /// skip is spent in the cluster, and not made.
    pub skip: bool,
}

/// What the machine asks of its driver after an event.
#[derive(Debug, Default)]
pub struct Output {
    /// Requests to send, in order.
    pub send: Vec<(Link, Request)>,
    /// Connections to drop and open again (a request timed out, the watch was cancelled).
    pub reset: Vec<Link>,
    /// Claims decided.
    pub decisions: Vec<Decision>,
    /// This server became the leader: the last claimed scheduled time of every entry etcd
    /// knows, for the engine's catch-up rules.
    pub takeover: Option<Vec<(String, u64)>>,
    /// `P/schedules` holds a (new) schedules file to load.
    pub schedules_text: Option<String>,
    /// Entries whose operators' record (`P/ops/{entry}`) is new to this server: paused or
    /// not, and whether a skip is pending, for its engine to show and obey.
    pub ops: Vec<(String, OpsRecord, bool)>,
    /// Runs asked by an operator that this server, the leader, won the right to fire.
    pub run_now: Vec<String>,
    /// Another server's account of an entry's runs (`P/history/{entry}`), as it wrote it.
    pub history: Vec<(String, Vec<u8>)>,
    /// An `@after` child's set of its parents' runs (`P/after/{child}`), as another server
    /// (the leader then) wrote it.
    pub after_sets: Vec<(String, Vec<u8>)>,
    /// An entry's backfill record (`P/backfill/{entry}`) as it is now in etcd: the spans of
    /// times still to run (none: nothing waits).
    pub backfills: Vec<(String, Vec<super::records::BackfillSpan>)>,
    /// The answers to the leader's runs of backfilled times: the time to run now (`None`: a
    /// spent span dropped), or why not.
    pub backfill_runs: Vec<(String, Result<Option<u64>, String>)>,
    /// An `@after` child's set as etcd held it when this server's write met it (another
    /// server wrote first): the engine merges it with its own and writes the merge.
    pub after_conflicts: Vec<(String, Vec<u8>)>,
    /// Operators' asks etcd did not take and this server gave up on (entry, why), to log.
    pub ops_failed: Vec<(String, String)>,
    /// Operators' asks answered (their ticket): `Ok` when etcd took the write, else why not
    /// (refused, given up, the link lost before etcd answered, no answer in time).
    pub ops_done: Vec<(u64, Result<(), String>)>,
}

/// Counters for /metrics and `show cluster`.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Times this server became the leader.
    pub leaderships: u64,
    /// Claims etcd refused because the fence no longer held.
    pub fence_failures: u64,
    /// Times the leader stopped firing because its lease could not be renewed in time.
    pub safety_stops: u64,
    pub claims_granted: u64,
    pub claims_refused: u64,
    pub claims_unknown: u64,
    /// Unary requests answered, their summed and worst latency (ms).
    pub requests: u64,
    pub latency_sum_ms: u64,
    pub latency_max_ms: u64,
    /// Requests that failed (error reply, timeout, lost connection).
    pub request_errors: u64,
    /// Compactions of etcd's history this server made as the leader.
    pub compactions: u64,
    /// TLS sessions with etcd that failed, by reason (`bad_certificate`, `alert`, `timeout`,
    /// ...): counted by the reactor's link, the machine never sees TLS.
    pub tls_failures: Vec<(&'static str, u64)>,
}

/// A read-only view for `show cluster` and `/cluster`.
#[derive(Clone, Debug)]
pub struct Status {
    pub cluster: String,
    pub id: String,
    pub leader: Option<String>,
    pub is_leader: bool,
    pub fence: Option<i64>,
    /// The last fence seen (this server's or the leader's key create revision).
    pub leader_revision: Option<i64>,
    /// Lease time left by the local clock (ms), if there is a lease.
    pub lease_left_ms: Option<u64>,
    pub reachable: bool,
    pub members: Vec<Member>,
    /// Entries whose definition differs from the leader's.
    pub differing: Vec<String>,
    pub stats: Stats,
}
