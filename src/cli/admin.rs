//! `gearwheel admin`: one admin text command, its reply shown as an aligned table (or, with
//! `--raw`, as the lines the server sent).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{AdminArgs, EXIT_FAILED, EXIT_UNREACHABLE, EXIT_USAGE, say};
use super::{escape, table};
use crate::client::{self, Conn, Error, format_duration};

/// How a reply is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    Status,
    PriorityStatus,
    Workers,
    Jobs,
    Unique,
    Scheduled,
    Schedules,
    /// `show failed`.
    Failed,
    /// `show retries`.
    Retries,
    Webhooks,
    /// `show runs ENTRY`.
    Runs,
    /// `show output HANDLE`: the bytes as they are, to stdout (read by `run`, not `render`).
    Output,
    /// `show limits`.
    Limits,
    /// `OK <value>`: print the value.
    Value,
    /// `OK`, or `OK h n l` from `maxqueue FUNC`.
    Ok,
    /// `maxqueue FUNC` without numbers: `OK h n l` as a table.
    MaxQueue,
    /// `NAME\tVALUE` lines (`show journal`).
    Pairs,
    /// A command this tool has no layout for: the lines as they came.
    Lines,
}

/// An admin command to send: the protocol line, whether the reply is a list, and its view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub line: String,
    pub list: bool,
    pub view: View,
}

const USAGE: &str = "status, prioritystatus, workers, jobs, unique, scheduled, schedules, \
                     journal, cluster, version, getpid, verbose, cancel HANDLE, create FUNC, drop FUNC, \
                     maxqueue FUNC [N | HIGH NORMAL LOW], reload, run|skip|pause|resume ID, \
                     failed [FUNC], retry|drop failed HANDLE|FUNC|all, retries, webhooks, \
                     retry FUNC N BACKOFF[..MAX], output HANDLE, runs ID, limits, limit FUNC N|off, \
                     rate FUNC N/DURATION|off, expire FUNC DURATION|off, \
                     pause|resume function FUNC, shutdown [graceful], or any \
                     line of the admin protocol (show jobs, cancel job HANDLE, ...)";

/// The admin protocol's own spellings (`show jobs`, `cancel job H`, `reload schedules`) as
/// the short words `plan` knows, so either form gets its table.
fn short_form(words: &[String]) -> Vec<String> {
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let lw: Vec<&str> = lower.iter().map(String::as_str).collect();
    let keep = |n: usize, short: &str| {
        let mut v = vec![short.to_string()];
        v.extend(words.iter().skip(n).cloned());
        v
    };
    match lw.as_slice() {
        ["show", "unique", "jobs"] => keep(3, "unique"),
        [
            "show",
            w @ ("jobs" | "scheduled" | "schedules" | "journal" | "cluster" | "failed" | "retries"
            | "output" | "runs" | "limits" | "webhooks"),
            ..,
        ] => keep(2, w),
        ["cancel", "job", _] => keep(2, "cancel"),
        ["create", "function", _] => keep(2, "create"),
        ["drop", "function", _] => keep(2, "drop"),
        ["reload", "schedules"] => keep(2, "reload"),
        [op @ ("run" | "skip" | "pause" | "resume"), "schedule", _] => keep(2, op),
        ["backfill", "schedule", ..] => keep(2, "backfill"),
        _ => words.to_vec(),
    }
}

/// Map the command words to the protocol line.
pub(crate) fn plan(words: &[String]) -> Result<Plan, String> {
    let words = short_form(words);
    let Some((cmd, rest)) = words.split_first() else {
        return Err(format!("no command given; one of: {USAGE}"));
    };
    let list = |line: &str, view| {
        Ok(Plan {
            line: line.into(),
            list: true,
            view,
        })
    };
    let one = |line: String, view| {
        Ok(Plan {
            line,
            list: false,
            view,
        })
    };
    let arity = |n: usize, what: &str| {
        if rest.len() == n {
            Ok(())
        } else {
            Err(format!("{cmd} takes {what}"))
        }
    };
    for w in rest {
        if w.is_empty() || w.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "{w:?}: arguments cannot be empty or contain spaces"
            ));
        }
    }
    match cmd.to_ascii_lowercase().as_str() {
        "status" => arity(0, "no arguments").and(list("status", View::Status)),
        "prioritystatus" => {
            arity(0, "no arguments").and(list("prioritystatus", View::PriorityStatus))
        }
        "workers" => arity(0, "no arguments").and(list("workers", View::Workers)),
        "jobs" => arity(0, "no arguments").and(list("show jobs", View::Jobs)),
        "unique" => arity(0, "no arguments").and(list("show unique jobs", View::Unique)),
        "scheduled" => arity(0, "no arguments").and(list("show scheduled", View::Scheduled)),
        "schedules" => arity(0, "no arguments").and(list("show schedules", View::Schedules)),
        "journal" => arity(0, "no arguments").and(list("show journal", View::Pairs)),
        "cluster" => arity(0, "no arguments").and(list("show cluster", View::Lines)),
        "failed" => match rest {
            [] => list("show failed", View::Failed),
            [f] => list(&format!("show failed {f}"), View::Failed),
            _ => Err("failed takes nothing or a function".into()),
        },
        "retries" => arity(0, "no arguments").and(list("show retries", View::Retries)),
        "webhooks" => arity(0, "no arguments").and(list("show webhooks", View::Webhooks)),
        "output" => arity(1, "a job handle")
            .and_then(|_| one(format!("show output {}", rest[0]), View::Output)),
        "runs" => arity(1, "a schedule entry id")
            .and_then(|_| list(&format!("show runs {}", rest[0]), View::Runs)),
        "limits" => arity(0, "no arguments").and(list("show limits", View::Limits)),
        c @ ("limit" | "rate" | "expire") => arity(2, "a function and a value, or off")
            .and_then(|_| one(format!("{c} {}", rest.join(" ")), View::Ok)),
        op @ ("pause" | "resume") if rest.first().is_some_and(|w| w == "function") => {
            arity(2, "function and a function name")
                .and_then(|_| one(format!("{op} function {}", rest[1]), View::Ok))
        }
        "audit" => match rest {
            [] => list("show audit", View::Lines),
            [n] => list(&format!("show audit {n}"), View::Lines),
            _ => Err("audit takes nothing or a count".into()),
        },
        "retry" if rest.len() == 3 => one(format!("retry {}", rest.join(" ")), View::Ok),
        op @ ("retry" | "drop") if rest.first().is_some_and(|w| w == "failed") => {
            arity(2, "failed and a handle, a function or all")
                .and_then(|_| one(format!("{op} failed {}", rest[1]), View::Value))
        }
        c @ ("version" | "getpid" | "verbose") => {
            arity(0, "no arguments").and(one(c.into(), View::Value))
        }
        "cancel" => {
            arity(1, "a job handle").and_then(|_| one(format!("cancel job {}", rest[0]), View::Ok))
        }
        "create" => arity(1, "a function name")
            .and_then(|_| one(format!("create function {}", rest[0]), View::Ok)),
        "drop" => arity(1, "a function name")
            .and_then(|_| one(format!("drop function {}", rest[0]), View::Ok)),
        "maxqueue" => match rest.len() {
            1 => one(format!("maxqueue {}", rest[0]), View::MaxQueue),
            2 | 4 => {
                if let Some(bad) = rest[1..].iter().find(|n| n.parse::<u32>().is_err()) {
                    return Err(format!("maxqueue: {bad:?} is not a number (0 = unlimited)"));
                }
                one(format!("maxqueue {}", rest.join(" ")), View::Ok)
            }
            _ => Err("maxqueue takes FUNC, FUNC N, or FUNC HIGH NORMAL LOW".into()),
        },
        "reload" => arity(0, "no arguments").and(one("reload schedules".into(), View::Ok)),
        op @ ("run" | "skip" | "pause" | "resume") => arity(1, "a schedule entry id")
            .and_then(|_| one(format!("{op} schedule {}", rest[0]), View::Ok)),
        // A dry run lists the times; a backfill answers `OK N`.
        "backfill" => match rest {
            [id, from, to] => one(format!("backfill schedule {id} {from} {to}"), View::Lines),
            [id, from, to, d] if d.eq_ignore_ascii_case("dry-run") => list(
                &format!("backfill schedule {id} {from} {to} dry-run"),
                View::Lines,
            ),
            _ => Err("backfill takes ID FROM TO [dry-run]".into()),
        },
        "shutdown" => match rest {
            [] => one("shutdown".into(), View::Ok),
            [g] if g.eq_ignore_ascii_case("graceful") => one("shutdown graceful".into(), View::Ok),
            _ => Err("shutdown takes nothing or \"graceful\"".into()),
        },
        // Anything else goes to the server as it is (a newer server's command, or one this
        // tool does not know): its reply is shown line by line, an ERR as an error.
        _ => list(&words.join(" "), View::Lines),
    }
}

/// `ERR CODE Text+with+plus` -> `CODE: Text with plus`; `None` for any other line.
pub(crate) fn server_error(line: &str) -> Option<String> {
    let rest = line.strip_prefix("ERR ")?;
    let (code, text) = rest.split_once(' ').unwrap_or((rest, ""));
    let text = text.replace('+', " ");
    Some(if text.is_empty() {
        code.to_string()
    } else {
        format!("{code}: {text}")
    })
}

fn tsv(lines: &[String]) -> Vec<Vec<String>> {
    lines
        .iter()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// Rows of `status`-like replies, whose first column is a function name shown as its bytes:
/// a TAB in the name (Perl's `prefix` makes one) splits it, so the fields past `columns` are
/// the name's, joined back and shown as `\x09`.
fn tsv_named(lines: &[String], columns: usize) -> Vec<Vec<String>> {
    tsv(lines)
        .into_iter()
        .map(|mut r| {
            if r.len() > columns {
                let extra = r.len() - columns;
                let name: Vec<String> = r.drain(..=extra).collect();
                r.insert(0, name.join("\\x09"));
            }
            r
        })
        .collect()
}

/// How far from `now` (unix ms) an RFC 3339 time is: `in 1m30s`, `due`, or empty.
fn until(due: &str, now_ms: i64) -> String {
    match chrono::DateTime::parse_from_rfc3339(due) {
        Ok(t) => {
            let ms = t.timestamp_millis() - now_ms;
            if ms <= 0 {
                "due".into()
            } else {
                // Whole seconds, rounded up, read better than milliseconds here.
                let secs = (ms as u64).div_ceil(1000);
                format!("in {}", format_duration(Duration::from_secs(secs)))
            }
        }
        Err(_) => String::new(),
    }
}

/// Render a reply (without its `.` line) for a view. `now_ms` is for "in 5m" columns.
pub(crate) fn render(view: View, lines: &[String], now_ms: i64) -> String {
    match view {
        View::Status => {
            let mut rows = tsv_named(lines, 4);
            rows.sort();
            table::render(&["FUNCTION", "TOTAL", "RUNNING", "WORKERS"], &rows)
        }
        View::PriorityStatus => {
            let mut rows = tsv_named(lines, 5);
            rows.sort();
            table::render(&["FUNCTION", "HIGH", "NORMAL", "LOW", "WORKERS"], &rows)
        }
        View::Workers => {
            // `FD IP CLIENT_ID : FUNCTION ...`; an IPv6 address has colons too, so the
            // separator is the first word that is a lone `:` after the address.
            let mut rows: Vec<Vec<String>> = lines
                .iter()
                .map(|l| {
                    // gearmand's single spaces: a TAB inside a function name is the name's.
                    let words: Vec<&str> = l.split(' ').filter(|w| !w.is_empty()).collect();
                    let sep = words
                        .iter()
                        .skip(2)
                        .position(|w| *w == ":")
                        .map(|i| i + 2)
                        .unwrap_or(words.len());
                    let word = |i: usize| words.get(i).copied().unwrap_or("").to_string();
                    let id = words.get(2..sep).map(|w| w.join(" ")).unwrap_or_default();
                    let mut funcs = words.get(sep + 1..).unwrap_or_default().to_vec();
                    funcs.sort_unstable();
                    let funcs = funcs.join(" ");
                    vec![word(0), word(1), id, funcs]
                })
                .collect();
            rows.sort_by_key(|r| r[0].parse::<u64>().unwrap_or(u64::MAX));
            table::render(&["FD", "ADDRESS", "CLIENT-ID", "FUNCTIONS"], &rows)
        }
        View::Jobs => {
            // `HANDLE\tRETRIES\t0\tBACKGROUND`; the third column is always 0 (gearmand's
            // ignore_job) and is left out.
            let rows: Vec<Vec<String>> = tsv(lines)
                .into_iter()
                .map(|r| match r.as_slice() {
                    [h, retries, _, bg] => vec![
                        h.clone(),
                        retries.clone(),
                        if bg == "1" { "yes" } else { "no" }.into(),
                    ],
                    _ => r,
                })
                .collect();
            table::render(&["HANDLE", "RETRIES", "BACKGROUND"], &rows)
        }
        View::Unique => {
            let rows: Vec<Vec<String>> = lines
                .iter()
                .map(|l| {
                    vec![if l.is_empty() {
                        "(none)".into()
                    } else {
                        l.clone()
                    }]
                })
                .collect();
            table::render(&["UNIQUE"], &rows)
        }
        View::Scheduled => {
            // `HANDLE\tFUNCTION\tUNIQUE\tDUE\tPRIORITY`, plus how long until it is due.
            let rows: Vec<Vec<String>> = tsv(lines)
                .into_iter()
                .map(|mut r| {
                    if r.len() == 5 {
                        let left = until(&r[3], now_ms);
                        r.push(left);
                    }
                    r
                })
                .collect();
            table::render(
                &["HANDLE", "FUNCTION", "UNIQUE", "DUE", "PRIORITY", "IN"],
                &rows,
            )
        }
        View::Schedules => {
            let rows = tsv(lines);
            // Columns only ever come at the end: a server before the marks sends ten, one
            // before the run history thirteen, one before retries fifteen, one before
            // clusters sixteen.
            let headers = [
                "ID",
                "SPEC",
                "FUNCTION",
                "NEXT",
                "LAST",
                "OUTCOME",
                "MS",
                "RUNS",
                "FAILURES",
                "SKIPS",
                "STATE",
                "SKIP",
                "LAST-BY",
                "LAST-ERROR",
                "RECENT-RUNS",
                "RETRYING",
                "LEADER",
            ];
            let width = rows.first().map_or(headers.len(), Vec::len);
            if [10, 13, 15, 16, headers.len()].contains(&width)
                && rows.iter().all(|r| r.len() == width)
            {
                table::render(&headers[..width], &rows)
            } else {
                table::render(&[], &rows)
                    .split_once('\n')
                    .map(|(_, rest)| rest.to_string())
                    .unwrap_or_default()
            }
        }
        View::Failed => table::render(
            &[
                "HANDLE", "FUNCTION", "UNIQUE", "ATTEMPTS", "FIRST", "LAST", "ENTRY", "ERROR",
            ],
            &tsv(lines),
        ),
        View::Retries => table::render(&["FUNCTION", "RETRIES", "BACKOFF", "PENDING"], &tsv(lines)),
        View::Webhooks => table::render(&["URL", "QUEUED", "LAST", "OUTCOME"], &tsv(lines)),
        View::Runs => table::render(
            &[
                "SCHEDULED",
                "HANDLE",
                "STARTED",
                "ENDED",
                "OUTCOME",
                "OUTPUT",
                "AFTER",
            ],
            &tsv(lines),
        ),
        // Written by `run` as it came.
        View::Output => String::new(),
        View::Limits => table::render(
            &[
                "FUNCTION", "LIMIT", "RUNNING", "RATE", "WINDOW", "PAUSED", "EXPIRE", "HELD",
            ],
            &tsv(lines),
        ),
        View::Value => lines
            .first()
            .map(|l| format!("{}\n", l.strip_prefix("OK ").unwrap_or(l)))
            .unwrap_or_default(),
        View::Ok => lines.first().map(|l| format!("{l}\n")).unwrap_or_default(),
        View::Pairs => table::render(&["NAME", "VALUE"], &tsv(lines)),
        View::Lines => lines.iter().map(|l| format!("{l}\n")).collect(),
        View::MaxQueue => {
            let first = lines.first().map(String::as_str).unwrap_or("");
            let nums: Vec<&str> = first
                .strip_prefix("OK ")
                .map(|r| r.split_whitespace().collect())
                .unwrap_or_default();
            if nums.len() != 3 {
                return format!("{first}\n");
            }
            let cell = |n: &str| {
                if n == "0" {
                    "unlimited".to_string()
                } else {
                    n.to_string()
                }
            };
            table::render(
                &["HIGH", "NORMAL", "LOW"],
                &[nums.iter().map(|n| cell(n)).collect()],
            )
        }
    }
}

pub fn run(a: AdminArgs) -> u8 {
    let plan = match plan(&a.command) {
        Ok(p) => p,
        Err(e) => {
            say("admin", e);
            return EXIT_USAGE;
        }
    };
    // One server: the -s flag, else the first of $GEARMAN_SERVERS / $GEARMAN_SERVER.
    let flag: Vec<String> = a.server.iter().cloned().collect();
    let servers = match client::servers::from_env(&flag) {
        Ok(s) => s,
        Err(e) => {
            say("admin", e);
            return EXIT_USAGE;
        }
    };
    let server = servers.first().map_or("127.0.0.1:4730", String::as_str);
    let tls = match client::tls_from_flags(a.ssl, &a.ssl_ca_file, &a.ssl_certificate, &a.ssl_key) {
        Ok(t) => t,
        Err(e) => {
            say("admin", e);
            return EXIT_USAGE;
        }
    };
    if plan.view == View::Output {
        return output(server, &plan.line, tls.as_ref());
    }
    let reply =
        Conn::connect_secure(server, Duration::from_secs(5), tls.as_ref()).and_then(|mut c| {
            c.set_read_timeout(Some(Duration::from_secs(30)))?;
            c.admin_bytes(&plan.line, plan.list)
        });
    let raw_lines = match reply {
        Ok(l) => l,
        // The server refused the connection itself (protected mode answers at accept with
        // an ERROR packet): its words, and the exit code of a refused command.
        Err(Error::Server { code, text }) => {
            say("admin", format_args!("{server}: {code}: {text}"));
            return EXIT_FAILED;
        }
        Err(e) => {
            say("admin", format_args!("{server}: {e}"));
            return EXIT_UNREACHABLE;
        }
    };
    // Tables show uniques and ids escaped (a terminal must not run what a client put in
    // them); --raw passes the bytes on untouched.
    let lines: Vec<String> = raw_lines.iter().map(|l| escape::line(l)).collect();
    let err = lines.first().and_then(|l| server_error(l));
    if a.raw {
        let mut s = Vec::new();
        for l in &raw_lines {
            s.extend_from_slice(l);
            s.push(b'\n');
        }
        let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), &s);
        return if err.is_some() { EXIT_FAILED } else { 0 };
    }
    if let Some(e) = err {
        say("admin", format_args!("{server}: {e}"));
        return EXIT_FAILED;
    }
    let body = match lines.split_last() {
        Some((last, rest)) if plan.list && last == "." => rest,
        _ => &lines[..],
    };
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    print!("{}", render(plan.view, body, now_ms));
    0
}

/// `gearwheel admin output HANDLE`: what the job printed, its bytes untouched on stdout (a
/// pipe into `less` or a file keeps them as they were); a cut is said on stderr.
fn output(server: &str, line: &str, tls: Option<&client::ClientTls>) -> u8 {
    let reply = Conn::connect_secure(server, Duration::from_secs(5), tls).and_then(|mut c| {
        c.set_read_timeout(Some(Duration::from_secs(30)))?;
        c.admin_block(line)
    });
    match reply {
        Ok(Ok((bytes, printed))) => {
            let mut out = std::io::stdout().lock();
            if std::io::Write::write_all(&mut out, &bytes)
                .and_then(|_| std::io::Write::flush(&mut out))
                .is_err()
            {
                return EXIT_FAILED;
            }
            if printed > bytes.len() as u64 {
                say(
                    "admin",
                    format_args!(
                        "output cut: the last {} of {printed} bytes printed are kept",
                        bytes.len()
                    ),
                );
            }
            0
        }
        Ok(Err(line)) => {
            say(
                "admin",
                format_args!("{server}: {}", server_error(&line).unwrap_or(line)),
            );
            EXIT_FAILED
        }
        Err(Error::Server { code, text }) => {
            say("admin", format_args!("{server}: {code}: {text}"));
            EXIT_FAILED
        }
        Err(e) => {
            say("admin", format_args!("{server}: {e}"));
            EXIT_UNREACHABLE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn l(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn words_map_to_protocol_lines() {
        let p = |s: &str| plan(&w(s)).map(|p| (p.line, p.list));
        assert_eq!(p("status"), Ok(("status".into(), true)));
        assert_eq!(p("jobs"), Ok(("show jobs".into(), true)));
        assert_eq!(p("unique"), Ok(("show unique jobs".into(), true)));
        assert_eq!(p("scheduled"), Ok(("show scheduled".into(), true)));
        assert_eq!(p("schedules"), Ok(("show schedules".into(), true)));
        assert_eq!(p("output H:x:1"), Ok(("show output H:x:1".into(), false)));
        assert_eq!(
            p("show output H:x:1"),
            Ok(("show output H:x:1".into(), false))
        );
        assert_eq!(p("runs backup"), Ok(("show runs backup".into(), true)));
        assert!(p("output").is_err());
        assert_eq!(p("cluster"), Ok(("show cluster".into(), true)));
        assert_eq!(p("show cluster"), Ok(("show cluster".into(), true)));
        assert_eq!(p("failed"), Ok(("show failed".into(), true)));
        assert_eq!(p("retries"), Ok(("show retries".into(), true)));
        assert_eq!(p("webhooks"), Ok(("show webhooks".into(), true)));
        assert_eq!(p("limits"), Ok(("show limits".into(), true)));
        assert_eq!(p("show limits"), Ok(("show limits".into(), true)));
        assert_eq!(p("limit f 4"), Ok(("limit f 4".into(), false)));
        assert_eq!(p("rate f 100/1m"), Ok(("rate f 100/1m".into(), false)));
        assert_eq!(p("expire f off"), Ok(("expire f off".into(), false)));
        assert_eq!(
            p("pause function f"),
            Ok(("pause function f".into(), false))
        );
        assert_eq!(p("resume f"), Ok(("resume schedule f".into(), false)));
        assert!(p("limit f").is_err());
        assert_eq!(p("audit"), Ok(("show audit".into(), true)));
        assert_eq!(p("audit 5"), Ok(("show audit 5".into(), true)));
        assert_eq!(
            p("retry f 3 30s..10m"),
            Ok(("retry f 3 30s..10m".into(), false))
        );
        assert_eq!(p("show failed f"), Ok(("show failed f".into(), true)));
        assert_eq!(
            p("retry failed all"),
            Ok(("retry failed all".into(), false))
        );
        assert_eq!(
            p("drop failed H:x:1"),
            Ok(("drop failed H:x:1".into(), false))
        );
        assert_eq!(p("drop f"), Ok(("drop function f".into(), false)));
        assert_eq!(p("VERSION"), Ok(("version".into(), false)));
        assert_eq!(p("cancel H:x:1"), Ok(("cancel job H:x:1".into(), false)));
        assert_eq!(p("create f"), Ok(("create function f".into(), false)));
        assert_eq!(p("drop f"), Ok(("drop function f".into(), false)));
        for op in ["run", "skip", "pause", "resume"] {
            let line = Ok((format!("{op} schedule nightly"), false));
            assert_eq!(p(&format!("{op} nightly")), line);
            assert_eq!(p(&format!("{op} schedule nightly")), line);
            assert!(p(op).is_err(), "{op} without an id");
        }
        assert_eq!(p("maxqueue f"), Ok(("maxqueue f".into(), false)));
        assert_eq!(
            p("maxqueue f 1 2 3"),
            Ok(("maxqueue f 1 2 3".into(), false))
        );
        assert_eq!(
            p("shutdown graceful"),
            Ok(("shutdown graceful".into(), false))
        );
        assert_eq!(p("reload"), Ok(("reload schedules".into(), false)));
        // The protocol's own spellings get the same tables.
        let v = |s: &str| plan(&w(s)).map(|p| (p.line, p.view));
        assert_eq!(v("show jobs"), Ok(("show jobs".into(), View::Jobs)));
        assert_eq!(
            v("SHOW unique JOBS"),
            Ok(("show unique jobs".into(), View::Unique))
        );
        assert_eq!(
            v("show scheduled"),
            Ok(("show scheduled".into(), View::Scheduled))
        );
        assert_eq!(
            v("show schedules"),
            Ok(("show schedules".into(), View::Schedules))
        );
        assert_eq!(v("show journal"), Ok(("show journal".into(), View::Pairs)));
        assert_eq!(v("journal"), Ok(("show journal".into(), View::Pairs)));
        assert_eq!(
            v("cancel job H:x:1"),
            Ok(("cancel job H:x:1".into(), View::Ok))
        );
        assert_eq!(
            v("create function f"),
            Ok(("create function f".into(), View::Ok))
        );
        assert_eq!(
            v("drop function f"),
            Ok(("drop function f".into(), View::Ok))
        );
        assert_eq!(
            v("reload schedules"),
            Ok(("reload schedules".into(), View::Ok))
        );
        // Anything else is sent as it is and shown line by line.
        assert_eq!(
            v("frobnicate now"),
            Ok(("frobnicate now".into(), View::Lines))
        );
        assert_eq!(
            v("show whatever"),
            Ok(("show whatever".into(), View::Lines))
        );
        for bad in [
            "",
            "cancel",
            "status x",
            "maxqueue f x",
            "maxqueue f 1 2",
            "shutdown now",
        ] {
            assert!(plan(&w(bad)).is_err(), "{bad:?}");
        }
        assert!(plan(&l(&["cancel", "a b"])).is_err());
    }

    #[test]
    fn err_lines_are_decoded() {
        assert_eq!(
            server_error("ERR UNKNOWN_JOB").as_deref(),
            Some("UNKNOWN_JOB")
        );
        assert_eq!(
            server_error("ERR JOB_RUNNING The+job+is+running+on+a+worker").as_deref(),
            Some("JOB_RUNNING: The job is running on a worker")
        );
        assert_eq!(server_error("OK"), None);
    }

    #[test]
    fn a_tab_in_a_function_name_stays_in_its_column() {
        let t = render(View::Status, &l(&["pre\tfn\t3\t1\t2"]), 0);
        assert_eq!(
            t,
            "FUNCTION   TOTAL  RUNNING  WORKERS\n\
             pre\\x09fn      3        1        2\n"
        );
        let t = render(View::Workers, &l(&["12 127.0.0.1 w-1 : pre\tfn"]), 0);
        assert!(t.contains("pre\tfn\n"), "{t}");
    }

    #[test]
    fn status_and_workers_tables() {
        let t = render(View::Status, &l(&["up\t3\t1\t2", "down\t0\t0\t1"]), 0);
        assert_eq!(
            t,
            "FUNCTION  TOTAL  RUNNING  WORKERS\n\
             down          0        0        1\n\
             up            3        1        2\n"
        );
        let t = render(
            View::Workers,
            &l(&["12 127.0.0.1 w-1 : up down", "9 ::1 - :"]),
            0,
        );
        assert_eq!(
            t,
            "FD  ADDRESS    CLIENT-ID  FUNCTIONS\n\
             \x209  ::1        -\n\
             12  127.0.0.1  w-1        down up\n"
        );
    }

    #[test]
    fn jobs_unique_and_scheduled_tables() {
        let t = render(View::Jobs, &l(&["H:x:1\t0\t0\t1", "H:x:2\t2\t0\t0"]), 0);
        assert_eq!(
            t,
            "HANDLE  RETRIES  BACKGROUND\nH:x:1         0  yes\nH:x:2         2  no\n"
        );
        let t = render(View::Unique, &l(&["", "abc"]), 0);
        assert_eq!(t, "UNIQUE\n(none)\nabc\n");
        let now = 1_893_553_445_000 - 90_500;
        let t = render(
            View::Scheduled,
            &l(&["H:x:3\tf\tu\t2030-01-02T03:04:05Z\tNORMAL"]),
            now,
        );
        assert_eq!(
            t,
            "HANDLE  FUNCTION  UNIQUE  DUE                   PRIORITY  IN\n\
             H:x:3   f         u       2030-01-02T03:04:05Z  NORMAL    in 1m31s\n"
        );
        let t = render(
            View::Scheduled,
            &l(&["H:x:3\tf\tu\t2030-01-02T03:04:05Z\tNORMAL"]),
            now + 100_000,
        );
        assert!(t.ends_with("NORMAL    due\n"), "{t}");
    }

    #[test]
    fn schedules_values_and_maxqueue() {
        let row = "nightly\t0 3 * * *\tbackup\t2030-01-02T03:00:00Z\t-\t-\t0\t0\t0\t0";
        let t = render(View::Schedules, &l(&[row]), 0);
        assert!(t.starts_with("ID       SPEC       FUNCTION  NEXT"), "{t}");
        assert!(t.contains("\nnightly  0 3 * * *  backup    2030-01-02T03:00:00Z"));
        // Today's rows end with the state, the skip and who made the last run.
        let row = format!("{row}\tpaused\tskip-next\t-");
        let t = render(View::Schedules, &l(&[&row]), 0);
        assert!(t.contains("SKIPS  STATE   SKIP       LAST-BY\n"), "{t}");
        assert!(t.ends_with("paused  skip-next  -\n"), "{t}");
        // And now with the last error and the recent runs.
        let row = format!("{row}\tdisk full\t2030-01-01T03:00:00Z 5ms failed");
        let t = render(View::Schedules, &l(&[&row]), 0);
        assert!(t.contains("LAST-BY  LAST-ERROR  RECENT-RUNS\n"), "{t}");
        assert!(
            t.ends_with("disk full   2030-01-01T03:00:00Z 5ms failed\n"),
            "{t}"
        );
        let row = format!("{row}\t2");
        let t = render(View::Schedules, &l(&[&row]), 0);
        assert!(t.contains(" RETRYING\n"), "{t}");
        assert!(t.ends_with("5ms failed         2\n"), "{t}");
        let row = format!("{row}\t127.0.0.1:4730");
        let t = render(View::Schedules, &l(&[&row]), 0);
        assert!(t.contains(" LEADER\n"), "{t}");
        assert!(t.ends_with(" 127.0.0.1:4730\n"), "{t}");
    }
}
