//! The admin text protocol: one line in, one command out, with gearmand's error replies for
//! lines it cannot take.

use bytes::Bytes;

/// Actions `show audit` lists without a count.
pub const AUDIT_SHOWN: usize = 100;

/// A parsed admin line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminCommand {
    Status,
    PriorityStatus,
    Workers,
    ShowJobs,
    ShowUniqueJobs,
    ShowScheduled,
    ShowSchedules,
    ShowJournal,
    /// `show cluster`: the cluster's members, leader and lease (answered by the loop).
    ShowCluster,
    /// `reload schedules`: read the schedules file again.
    ReloadSchedules,
    /// `reload acl`: read the `--acl` file again.
    ReloadAcl,
    CancelJob(Bytes),
    CreateFunction(Bytes),
    DropFunction(Bytes),
    /// `maxqueue FUNC` reads the limits back; with numbers it sets them. `None` in a slot is
    /// a missing or negative number, which means unlimited.
    MaxQueue {
        func: Bytes,
        limits: Option<[u32; 3]>,
    },
    GetPid,
    Verbose,
    Version,
    Shutdown {
        graceful: bool,
    },
    /// `run|skip|pause|resume schedule ID`: an operator's hand on one schedule entry.
    Schedule {
        op: ScheduleOp,
        id: Bytes,
    },
    /// `backfill schedule ID FROM TO [dry-run]`: the entry's times from FROM to TO (RFC 3339
    /// times or dates, as sent; the engine reads them) run as manual runs, in order.
    Backfill {
        id: Bytes,
        from: Bytes,
        to: Bytes,
        dry_run: bool,
    },
    /// `show failed [FUNCTION]`.
    ShowFailed(Option<Bytes>),
    /// `retry failed HANDLE|FUNCTION|all`.
    RetryFailed(Bytes),
    /// `drop failed HANDLE|FUNCTION|all`.
    DropFailed(Bytes),
    /// `retry FUNCTION N BACKOFF[..MAX]` (the count and backoff as sent; the engine checks).
    SetRetry {
        func: Bytes,
        retries: Bytes,
        backoff: Bytes,
    },
    /// `show retries`.
    ShowRetries,
    /// `show webhooks`: each webhook's alerts waiting and its last try's outcome.
    ShowWebhooks,
    /// `show output HANDLE`: what the job printed (kept while it runs and after it ended).
    ShowOutput(Bytes),
    /// `show runs ENTRY`: a schedule entry's last runs with their handles and output sizes.
    ShowRuns(Bytes),
    /// `timeout FUNCTION [DURATION|off]`: read back or set the job lease of a function (how
    /// long a worker without CAN_DO_TIMEOUT may hold one of its jobs). The duration is the
    /// engine's to read (`30s`, `5m`, ...).
    Timeout {
        func: Bytes,
        set: Option<Bytes>,
    },
    /// `show timeouts`: the leases set.
    ShowTimeouts,
    /// `limit FUNCTION N|off`, `rate FUNCTION N/DURATION|off`, `expire FUNCTION
    /// DURATION|off`: one of a function's limits (`setting` is the command word; the value
    /// as sent, the engine reads it).
    SetLimit {
        setting: LimitWord,
        func: Bytes,
        value: Bytes,
    },
    /// `pause function FUNCTION` (true), `resume function FUNCTION` (false).
    PauseFunction {
        func: Bytes,
        paused: bool,
    },
    /// `show limits`.
    ShowLimits,
    /// `show audit [N]`: the newest N operators' actions (`AUDIT_SHOWN` without N).
    ShowAudit(usize),
    /// A line the server answers with a fixed reply (an error), already formatted.
    Reply(&'static str),
    /// An unknown command word, answered with gearmand's UNKNOWN_COMMAND text.
    Unknown(Bytes),
}

/// The command word of a function's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitWord {
    Limit,
    Rate,
    Expire,
}

impl LimitWord {
    pub fn word(self) -> &'static str {
        match self {
            LimitWord::Limit => "limit",
            LimitWord::Rate => "rate",
            LimitWord::Expire => "expire",
        }
    }
}

/// What an operator can do to a schedule entry, by admin line or HTTP POST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleOp {
    /// A run now, outside its timing.
    Run,
    /// Skip the next run of its timing.
    Skip,
    Pause,
    Resume,
}

impl ScheduleOp {
    /// The command word (`run`, `skip`, `pause`, `resume`), any case.
    pub fn from_word(w: &[u8]) -> Option<ScheduleOp> {
        [
            ("run", ScheduleOp::Run),
            ("skip", ScheduleOp::Skip),
            ("pause", ScheduleOp::Pause),
            ("resume", ScheduleOp::Resume),
        ]
        .into_iter()
        .find(|(name, _)| word_eq(w, name))
        .map(|(_, op)| op)
    }

    pub fn word(self) -> &'static str {
        match self {
            ScheduleOp::Run => "run",
            ScheduleOp::Skip => "skip",
            ScheduleOp::Pause => "pause",
            ScheduleOp::Resume => "resume",
        }
    }
}

/// At most this many words; gearmand closes on more, we answer an error.
const MAX_WORDS: usize = 6;

fn word_eq(w: &[u8], s: &str) -> bool {
    w.eq_ignore_ascii_case(s.as_bytes())
}

fn invalid_arguments(cmd: &str) -> &'static str {
    match cmd {
        "create" => {
            "ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+create\r\n"
        }
        "drop" => {
            "ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+drop\r\n"
        }
        _ => {
            "ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+maxqueue\r\n"
        }
    }
}

/// gearmand's `maxqueue` number: missing, negative or garbage is 0 (unlimited).
fn queue_limit(w: Option<&Bytes>) -> u32 {
    let Some(w) = w else { return 0 };
    let s = std::str::from_utf8(w).unwrap_or("");
    match s.parse::<i64>() {
        Ok(n) if n > 0 => n.min(u32::MAX as i64) as u32,
        _ => 0,
    }
}

impl AdminCommand {
    /// Parse one line (without its line ending).
    pub fn parse(line: &Bytes) -> AdminCommand {
        // Split on single spaces so that a leading space gives an empty first word, as gearmand.
        let mut words: Vec<Bytes> = Vec::with_capacity(MAX_WORDS);
        let mut start = 0;
        let mut first = true;
        for (i, &c) in line.iter().enumerate() {
            if c == b' ' {
                if first || i > start {
                    words.push(line.slice(start..i));
                }
                first = false;
                start = i + 1;
            }
        }
        if first || line.len() > start {
            words.push(line.slice(start..));
        }
        if words.len() > MAX_WORDS {
            return AdminCommand::Reply("ERR TOO_MANY_ARGS Too+many+arguments+were+sent\r\n");
        }
        let cmd = &words[0];
        let arg = |i: usize| words.get(i);
        if word_eq(cmd, "status") {
            AdminCommand::Status
        } else if word_eq(cmd, "prioritystatus") {
            AdminCommand::PriorityStatus
        } else if word_eq(cmd, "workers") {
            AdminCommand::Workers
        } else if word_eq(cmd, "show") {
            match (arg(1), arg(2)) {
                (None, _) => AdminCommand::Unknown(cmd.clone()),
                (Some(a), _) if word_eq(a, "jobs") => AdminCommand::ShowJobs,
                (Some(a), Some(b)) if word_eq(a, "unique") && word_eq(b, "jobs") => {
                    AdminCommand::ShowUniqueJobs
                }
                (Some(a), _) if word_eq(a, "scheduled") => AdminCommand::ShowScheduled,
                (Some(a), _) if word_eq(a, "schedules") => AdminCommand::ShowSchedules,
                (Some(a), _) if word_eq(a, "journal") => AdminCommand::ShowJournal,
                (Some(a), _) if word_eq(a, "cluster") => AdminCommand::ShowCluster,
                (Some(a), f) if word_eq(a, "failed") => AdminCommand::ShowFailed(f.cloned()),
                (Some(a), _) if word_eq(a, "retries") => AdminCommand::ShowRetries,
                (Some(a), _) if word_eq(a, "webhooks") => AdminCommand::ShowWebhooks,
                (Some(a), Some(h)) if word_eq(a, "output") => AdminCommand::ShowOutput(h.clone()),
                (Some(a), Some(e)) if word_eq(a, "runs") => AdminCommand::ShowRuns(e.clone()),
                (Some(a), None) if word_eq(a, "output") || word_eq(a, "runs") => {
                    AdminCommand::Reply(
                        "ERR INVALID_ARGUMENTS Use+show+output+HANDLE+or+show+runs+ENTRY\r\n",
                    )
                }
                (Some(a), _) if word_eq(a, "timeouts") => AdminCommand::ShowTimeouts,
                (Some(a), _) if word_eq(a, "limits") => AdminCommand::ShowLimits,
                (Some(a), n) if word_eq(a, "audit") && words.len() <= 3 => {
                    match n.map(|n| std::str::from_utf8(n).ok().and_then(|n| n.parse().ok())) {
                        None => AdminCommand::ShowAudit(AUDIT_SHOWN),
                        Some(Some(n)) => AdminCommand::ShowAudit(n),
                        Some(None) => {
                            AdminCommand::Reply("ERR INVALID_ARGUMENTS Use+show+audit+[N]\r\n")
                        }
                    }
                }
                _ => AdminCommand::Reply("ERR UNKNOWN_SHOW_ARGUMENTS\r\n"),
            }
        } else if word_eq(cmd, "timeout") {
            match (arg(1), words.len()) {
                (Some(func), 2 | 3) if !func.is_empty() => AdminCommand::Timeout {
                    func: func.clone(),
                    set: arg(2).cloned(),
                },
                _ => AdminCommand::Reply(
                    "ERR INVALID_ARGUMENTS Use+timeout+FUNCTION+[DURATION|off]\r\n",
                ),
            }
        } else if let Some(setting) = [LimitWord::Limit, LimitWord::Rate, LimitWord::Expire]
            .into_iter()
            .find(|w| word_eq(cmd, w.word()))
        {
            match (arg(1), arg(2)) {
                (Some(func), Some(value)) if !func.is_empty() && words.len() == 3 => {
                    AdminCommand::SetLimit {
                        setting,
                        func: func.clone(),
                        value: value.clone(),
                    }
                }
                _ => AdminCommand::Reply(match setting {
                    LimitWord::Limit => "ERR INVALID_ARGUMENTS Use+limit+FUNCTION+N|off\r\n",
                    LimitWord::Rate => "ERR INVALID_ARGUMENTS Use+rate+FUNCTION+N/DURATION|off\r\n",
                    LimitWord::Expire => {
                        "ERR INVALID_ARGUMENTS Use+expire+FUNCTION+DURATION|off\r\n"
                    }
                }),
            }
        } else if (word_eq(cmd, "pause") || word_eq(cmd, "resume"))
            && arg(1).is_some_and(|a| word_eq(a, "function"))
        {
            match arg(2) {
                Some(func) if !func.is_empty() && words.len() == 3 => AdminCommand::PauseFunction {
                    func: func.clone(),
                    paused: word_eq(cmd, "pause"),
                },
                _ => AdminCommand::Reply(
                    "ERR INVALID_ARGUMENTS Use+pause+function+FUNCTION+or+resume+function+FUNCTION\r\n",
                ),
            }
        } else if word_eq(cmd, "cancel") {
            match (arg(1), arg(2)) {
                (Some(j), Some(h)) if word_eq(j, "job") => AdminCommand::CancelJob(h.clone()),
                (Some(_), Some(_)) => AdminCommand::Reply("ERR UNKNOWN_ERROR\r\n"),
                _ => AdminCommand::Unknown(cmd.clone()),
            }
        } else if word_eq(cmd, "retry") && words.len() == 4 {
            AdminCommand::SetRetry {
                func: words[1].clone(),
                retries: words[2].clone(),
                backoff: words[3].clone(),
            }
        } else if (word_eq(cmd, "retry") || word_eq(cmd, "drop"))
            && arg(1).is_some_and(|a| word_eq(a, "failed"))
        {
            match arg(2) {
                Some(sel) if !sel.is_empty() && words.len() == 3 => {
                    if word_eq(cmd, "retry") {
                        AdminCommand::RetryFailed(sel.clone())
                    } else {
                        AdminCommand::DropFailed(sel.clone())
                    }
                }
                _ => AdminCommand::Reply(
                    "ERR INVALID_ARGUMENTS Name+the+jobs:+retry+or+drop+failed+HANDLE|FUNCTION|all\r\n",
                ),
            }
        } else if word_eq(cmd, "create") || word_eq(cmd, "drop") {
            let create = word_eq(cmd, "create");
            match (arg(1), arg(2)) {
                (Some(f), Some(name)) if word_eq(f, "function") && !name.is_empty() => {
                    if create {
                        AdminCommand::CreateFunction(name.clone())
                    } else {
                        AdminCommand::DropFunction(name.clone())
                    }
                }
                _ => AdminCommand::Reply(invalid_arguments(if create { "create" } else { "drop" })),
            }
        } else if word_eq(cmd, "maxqueue") {
            match arg(1) {
                None => AdminCommand::Reply(invalid_arguments("maxqueue")),
                Some(func) if words.len() == 2 => AdminCommand::MaxQueue {
                    func: func.clone(),
                    limits: None,
                },
                Some(func) => {
                    let limits = if words.len() <= 3 {
                        let n = queue_limit(arg(2));
                        [n, n, n]
                    } else {
                        [
                            queue_limit(arg(2)),
                            queue_limit(arg(3)),
                            queue_limit(arg(4)),
                        ]
                    };
                    AdminCommand::MaxQueue {
                        func: func.clone(),
                        limits: Some(limits),
                    }
                }
            }
        } else if word_eq(cmd, "reload") {
            match arg(1) {
                Some(a) if word_eq(a, "schedules") => AdminCommand::ReloadSchedules,
                Some(a) if word_eq(a, "acl") => AdminCommand::ReloadAcl,
                _ => AdminCommand::Reply("ERR UNKNOWN_ARGS Use+reload+schedules+or+reload+acl\r\n"),
            }
        } else if word_eq(cmd, "backfill") {
            let dry_run = match arg(5) {
                None => Some(false),
                Some(w) if word_eq(w, "dry-run") => Some(true),
                Some(_) => None,
            };
            match (arg(1), arg(2), arg(3), arg(4), dry_run) {
                (Some(s), Some(id), Some(from), Some(to), Some(dry_run))
                    if word_eq(s, "schedule") && !id.is_empty() =>
                {
                    AdminCommand::Backfill {
                        id: id.clone(),
                        from: from.clone(),
                        to: to.clone(),
                        dry_run,
                    }
                }
                _ => AdminCommand::Reply(
                    "ERR INVALID_ARGUMENTS Use+backfill+schedule+ID+FROM+TO+[dry-run]\r\n",
                ),
            }
        } else if let Some(op) = ScheduleOp::from_word(cmd) {
            match (arg(1), arg(2)) {
                (Some(s), Some(id))
                    if word_eq(s, "schedule") && !id.is_empty() && words.len() == 3 =>
                {
                    AdminCommand::Schedule { op, id: id.clone() }
                }
                _ => AdminCommand::Reply(
                    "ERR INVALID_ARGUMENTS Name+one+entry:+run,+skip,+pause+or+resume+schedule+ID\r\n",
                ),
            }
        } else if word_eq(cmd, "getpid") {
            AdminCommand::GetPid
        } else if word_eq(cmd, "verbose") {
            AdminCommand::Verbose
        } else if word_eq(cmd, "version") {
            AdminCommand::Version
        } else if word_eq(cmd, "shutdown") {
            match arg(1) {
                None => AdminCommand::Shutdown { graceful: false },
                Some(g) if word_eq(g, "graceful") => AdminCommand::Shutdown { graceful: true },
                Some(_) => {
                    AdminCommand::Reply("ERR UNKNOWN_ARGS Unknown+arguments+to+shutdown\r\n")
                }
            }
        } else {
            AdminCommand::Unknown(cmd.clone())
        }
    }
}

/// gearmand's reply to an unknown command word: the word glued to the text, no separator.
pub fn unknown_command_reply(word: &[u8]) -> Bytes {
    let mut v = b"ERR UNKNOWN_COMMAND Unknown+server+command".to_vec();
    v.extend_from_slice(word);
    v.extend_from_slice(b"\r\n");
    v.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &'static str) -> AdminCommand {
        AdminCommand::parse(&Bytes::from_static(s.as_bytes()))
    }

    fn b(s: &'static str) -> Bytes {
        Bytes::from_static(s.as_bytes())
    }

    #[test]
    fn limits_lines() {
        assert_eq!(
            p("LIMIT f 4"),
            AdminCommand::SetLimit {
                setting: LimitWord::Limit,
                func: b("f"),
                value: b("4")
            }
        );
        assert_eq!(
            p("rate f 100/1m"),
            AdminCommand::SetLimit {
                setting: LimitWord::Rate,
                func: b("f"),
                value: b("100/1m")
            }
        );
        assert_eq!(
            p("expire f off"),
            AdminCommand::SetLimit {
                setting: LimitWord::Expire,
                func: b("f"),
                value: b("off")
            }
        );
        assert_eq!(
            p("pause function f"),
            AdminCommand::PauseFunction {
                func: b("f"),
                paused: true
            }
        );
        assert_eq!(
            p("resume FUNCTION f"),
            AdminCommand::PauseFunction {
                func: b("f"),
                paused: false
            }
        );
        assert_eq!(p("show limits"), AdminCommand::ShowLimits);
        // A schedule entry's pause is still its own.
        assert!(matches!(
            p("pause schedule s"),
            AdminCommand::Schedule { .. }
        ));
        for bad in [
            "limit f",
            "limit",
            "rate f 1/1s x",
            "pause function",
            "resume function a b",
        ] {
            assert!(matches!(p(bad), AdminCommand::Reply(_)), "{bad}");
        }
    }

    #[test]
    fn timeout_reads_back_or_sets_a_lease() {
        assert_eq!(
            p("timeout f"),
            AdminCommand::Timeout {
                func: b("f"),
                set: None
            }
        );
        assert_eq!(
            p("TIMEOUT f 30s"),
            AdminCommand::Timeout {
                func: b("f"),
                set: Some(b("30s"))
            }
        );
        assert_eq!(p("show timeouts"), AdminCommand::ShowTimeouts);
        for bad in ["timeout", "timeout f 1s extra"] {
            assert!(
                matches!(p(bad), AdminCommand::Reply(r) if r.starts_with("ERR INVALID_ARGUMENTS"))
            );
        }
    }

    #[test]
    fn simple_commands_any_case() {
        assert_eq!(p("status"), AdminCommand::Status);
        assert_eq!(p("STATUS"), AdminCommand::Status);
        assert_eq!(p("status extra words"), AdminCommand::Status);
        assert_eq!(p("PriorityStatus"), AdminCommand::PriorityStatus);
        assert_eq!(p("workers"), AdminCommand::Workers);
        assert_eq!(p("show jobs"), AdminCommand::ShowJobs);
        assert_eq!(p("show unique jobs"), AdminCommand::ShowUniqueJobs);
        assert_eq!(p("show scheduled"), AdminCommand::ShowScheduled);
        assert_eq!(p("show schedules"), AdminCommand::ShowSchedules);
        assert_eq!(p("show journal"), AdminCommand::ShowJournal);
        assert_eq!(p("show cluster"), AdminCommand::ShowCluster);
        assert_eq!(p("show failed"), AdminCommand::ShowFailed(None));
        assert_eq!(p("show FAILED f"), AdminCommand::ShowFailed(Some(b("f"))));
        assert_eq!(p("retry failed all"), AdminCommand::RetryFailed(b("all")));
        assert_eq!(p("show retries"), AdminCommand::ShowRetries);
        assert_eq!(p("show webhooks"), AdminCommand::ShowWebhooks);
        assert_eq!(p("show output H:x:1"), AdminCommand::ShowOutput(b("H:x:1")));
        assert_eq!(p("SHOW RUNS backup"), AdminCommand::ShowRuns(b("backup")));
        assert!(matches!(p("show output"), AdminCommand::Reply(r) if r.contains("HANDLE")));
        assert_eq!(p("show audit"), AdminCommand::ShowAudit(AUDIT_SHOWN));
        assert_eq!(p("show audit 5"), AdminCommand::ShowAudit(5));
        assert!(matches!(p("show audit x"), AdminCommand::Reply(_)));
        assert_eq!(
            p("retry failed 3 30s"),
            AdminCommand::SetRetry {
                func: b("failed"),
                retries: b("3"),
                backoff: b("30s")
            }
        );
        assert_eq!(p("drop failed H:x:1"), AdminCommand::DropFailed(b("H:x:1")));
        assert_eq!(p("drop function f"), AdminCommand::DropFunction(b("f")));
        assert!(matches!(p("retry failed"), AdminCommand::Reply(_)));
        assert!(matches!(p("drop failed a b"), AdminCommand::Reply(_)));
        assert_eq!(p("reload schedules"), AdminCommand::ReloadSchedules);
        assert_eq!(p("reload ACL"), AdminCommand::ReloadAcl);
        assert_eq!(p("getpid"), AdminCommand::GetPid);
        assert_eq!(p("verbose"), AdminCommand::Verbose);
        assert_eq!(p("version"), AdminCommand::Version);
        assert_eq!(p("shutdown"), AdminCommand::Shutdown { graceful: false });
        assert_eq!(
            p("shutdown GRACEFUL"),
            AdminCommand::Shutdown { graceful: true }
        );
    }

    #[test]
    fn gearmand_error_replies() {
        assert_eq!(p("show"), AdminCommand::Unknown(b("show")));
        assert_eq!(
            p("show other"),
            AdminCommand::Reply("ERR UNKNOWN_SHOW_ARGUMENTS\r\n")
        );
        assert_eq!(p("cancel"), AdminCommand::Unknown(b("cancel")));
        assert_eq!(p("cancel job"), AdminCommand::Unknown(b("cancel")));
        assert_eq!(
            p("cancel x y"),
            AdminCommand::Reply("ERR UNKNOWN_ERROR\r\n")
        );
        assert_eq!(p("cancel job H:vm:1"), AdminCommand::CancelJob(b("H:vm:1")));
        assert_eq!(p("  status"), AdminCommand::Unknown(b("")));
        assert_eq!(p(""), AdminCommand::Unknown(b("")));
        assert_eq!(
            p("a b c d e f g"),
            AdminCommand::Reply("ERR TOO_MANY_ARGS Too+many+arguments+were+sent\r\n")
        );
        assert_eq!(
            p("create function"),
            AdminCommand::Reply(
                "ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+create\r\n"
            )
        );
        assert_eq!(
            p("create function newfn"),
            AdminCommand::CreateFunction(b("newfn"))
        );
        assert_eq!(p("drop function fnA"), AdminCommand::DropFunction(b("fnA")));
        assert_eq!(
            p("maxqueue"),
            AdminCommand::Reply(
                "ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+maxqueue\r\n"
            )
        );
        assert_eq!(
            &unknown_command_reply(b"bogus")[..],
            b"ERR UNKNOWN_COMMAND Unknown+server+commandbogus\r\n"
        );
    }

    #[test]
    fn maxqueue_forms() {
        assert_eq!(
            p("maxqueue fnA"),
            AdminCommand::MaxQueue {
                func: b("fnA"),
                limits: None
            }
        );
        assert_eq!(
            p("maxqueue fnA 5"),
            AdminCommand::MaxQueue {
                func: b("fnA"),
                limits: Some([5, 5, 5])
            }
        );
        assert_eq!(
            p("maxqueue fnA 1 2 3"),
            AdminCommand::MaxQueue {
                func: b("fnA"),
                limits: Some([1, 2, 3])
            }
        );
        assert_eq!(
            p("maxqueue fnA -1 x 3"),
            AdminCommand::MaxQueue {
                func: b("fnA"),
                limits: Some([0, 0, 3])
            }
        );
        assert_eq!(
            p("maxqueue fnA 1 2"),
            AdminCommand::MaxQueue {
                func: b("fnA"),
                limits: Some([1, 2, 0])
            }
        );
    }
}
