//! `import-crontab`'s translation, pure: crontab text in, a schedules file and a report of
//! everything that could not be carried over out. No files, no clock, no host lookups (the
//! caller passes the host name); `import_crontab.rs` does the I/O.

use std::fmt::Write as _;

use crate::schedule::Zone;
use crate::schedule::cron::Timing;

use super::crontab_words::{function_name, ping_wrapped, sanitize, shell_quote, split_percent};

/// What the caller knows about the machine.
#[derive(Clone, Debug)]
pub struct Options {
    /// The machine the crontabs belong to; it names the functions (`web1.cleanup_tmp`).
    pub host: String,
    /// The owner of user crontabs, if known.
    pub user: Option<String>,
    /// The version that wrote the file, for its first line.
    pub version: String,
    /// `--monitor`: nothing moves yet; the crontab stays, each command wrapped in
    /// `gearwheel ping`, and the entries expect its pings.
    pub monitor: Option<Monitor>,
}

/// How the monitored crontab pings.
#[derive(Clone, Debug, Default)]
pub struct Monitor {
    /// `gearwheel ping -s SERVER`, when the server is not the default.
    pub server: Option<String>,
}

/// One crontab.
#[derive(Clone, Debug)]
pub struct Source {
    /// Where the text came from, for comments and reports (`/etc/crontab`, `stdin`).
    pub name: String,
    pub text: String,
    /// Every line has a user field (/etc/crontab, /etc/cron.d).
    pub system: bool,
}

/// A line that was not carried over as it stood, or something the reader must know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub source: String,
    pub line: usize,
    pub message: String,
}

/// The schedules file and the reports.
#[derive(Clone, Debug, Default)]
pub struct Import {
    pub text: String,
    pub entries: usize,
    /// Lines of the crontab that fire nothing in the result.
    pub dropped: usize,
    pub reports: Vec<Report>,
    /// With `--monitor`: the crontab to install instead of the one read, each command run
    /// through `gearwheel ping`.
    pub crontab: String,
}

/// Settings cron uses itself and gearwheel cannot: reported, never passed to the command.
const MAIL_SETTINGS: [&str; 4] = [
    "MAILTO",
    "MAILFROM",
    "CONTENT_TYPE",
    "CONTENT_TRANSFER_ENCODING",
];

const MACROS: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// A crontab environment line as cron reads it: `NAME = VALUE`, spaces allowed around `=`,
/// matching quotes around the value removed.
fn env_line(line: &str) -> Option<(String, String)> {
    let t = line.trim_start();
    let end = t.find(|c: char| c == '=' || c.is_whitespace())?;
    let name = &t[..end];
    let rest = t[end..].trim_start().strip_prefix('=')?;
    if name.is_empty() {
        return None;
    }
    let mut value = rest.trim();
    for q in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(q) && value.ends_with(q) {
            value = &value[1..value.len() - 1];
        }
    }
    Some((name.to_string(), value.to_string()))
}

/// The next whitespace-separated word of `s` and the rest after it (leading blanks kept off).
fn next_word(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start_matches([' ', '\t']);
    if s.is_empty() {
        return None;
    }
    let end = s.find([' ', '\t']).unwrap_or(s.len());
    Some((&s[..end], s[end..].trim_start_matches([' ', '\t'])))
}

/// One crontab entry, split as cron splits it.
struct CronLine<'a> {
    /// The timing as written: a macro or the five fields joined by single spaces.
    spec: String,
    user: Option<&'a str>,
    command: &'a str,
}

/// Split an entry; `system`: a user field follows the timing. Errors say what is missing.
fn split_entry(line: &str, system: bool) -> Result<CronLine<'_>, String> {
    let mut rest = line;
    let mut fields = Vec::with_capacity(5);
    let (first, r) = next_word(rest).ok_or("empty line")?;
    rest = r;
    fields.push(first);
    if !first.starts_with('@') {
        for _ in 0..4 {
            let (w, r) = next_word(rest).ok_or_else(|| {
                format!(
                    "only {} time fields (cron wants five, then {}the command)",
                    fields.len(),
                    if system { "the user, then " } else { "" }
                )
            })?;
            fields.push(w);
            rest = r;
        }
    }
    let user = if system {
        let (u, r) = next_word(rest).ok_or("no user field and no command")?;
        rest = r;
        Some(u)
    } else {
        None
    };
    if rest.is_empty() {
        return Err("no command".into());
    }
    Ok(CronLine {
        spec: fields.join(" "),
        user,
        command: rest,
    })
}

/// Whether a user-crontab line really is a system line: its sixth word is `root` and a
/// command follows (nobody has a program called root).
fn clearly_system(line: &str) -> bool {
    let Ok(l) = split_entry(line, true) else {
        return false;
    };
    l.user == Some("root")
}

/// The worker command for one entry: the shell from SHELL=, the environment cron would give,
/// and the `%` stdin fed through a pipe (the job's own workload is empty).
fn worker_argv(shell: &str, env: &[(String, String)], command: &str) -> Vec<String> {
    let (cmd, stdin) = split_percent(command);
    let mut argv = Vec::new();
    if !env.is_empty() {
        argv.push("/usr/bin/env".to_string());
        argv.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
    }
    argv.push(shell.to_string());
    argv.push("-c".to_string());
    match stdin {
        None => argv.push(cmd),
        Some(input) => {
            // printf's format: only `\` and `%` are special to it.
            let fmt = input
                .replace('\\', "\\\\")
                .replace('%', "%%")
                .replace('\n', "\\n");
            argv.push(format!(
                "printf {} | {} -c \"$1\"",
                shell_quote(&fmt),
                shell_quote(shell)
            ));
            argv.push(shell.to_string());
            argv.push(cmd);
        }
    }
    argv
}

/// An entry on its way out.
struct Out {
    source: String,
    line: usize,
    original: String,
    spec: String,
    function: String,
    user: Option<String>,
    argv: Vec<String>,
    zone: Option<String>,
    /// `--monitor`: the entry expects the crontab's ping instead of firing a job.
    monitored: bool,
}

/// What the output holds, in the crontabs' order.
enum Item {
    Entry(Out),
    /// A line that fires nothing, kept as a comment in its place.
    Dropped(String),
    /// What the output says in the place of a crontab setting (MAILTO= becomes ON_FAILURE=).
    Note(String),
}

/// Translate crontabs into one schedules file (function names unique across them all).
pub fn translate(sources: &[Source], opts: &Options) -> Import {
    let mut imp = Import::default();
    let mut items = Vec::new();
    let mut names = Vec::new();
    let host = super::crontab_words::sanitize(&opts.host).unwrap_or_else(|| "host".into());
    for src in sources {
        read(src, opts, &host, &mut imp, &mut items, &mut names);
    }
    imp.text = render(sources, opts, &host, &items, &imp.reports);
    imp
}

/// One crontab; cron starts each file with a fresh environment, and so does this.
fn read(
    src: &Source,
    opts: &Options,
    host: &str,
    imp: &mut Import,
    items: &mut Vec<Item>,
    names: &mut Vec<String>,
) {
    let report = |imp: &mut Import, line: usize, message: String| {
        imp.reports.push(Report {
            source: src.name.clone(),
            line,
            message,
        });
    };
    let mut shell = "/bin/sh".to_string();
    let mut env: Vec<(String, String)> = Vec::new();
    // Env lines seen since the last entry, to report those that apply to nothing.
    let mut pending_env: Vec<(usize, String)> = Vec::new();
    let mut zone: Option<String> = None;
    // With --monitor: the entry lines of the crontab as they are written back.
    let mut replaced: Vec<(usize, String)> = Vec::new();
    // A line with `root` where a user crontab has its command makes it a system crontab.
    let system = src.system
        || {
            let first = src.text.lines().enumerate().find(|(_, l)| {
                let t = l.trim_start();
                !t.starts_with('#') && env_line(t).is_none() && clearly_system(t)
            });
            if let Some((n, _)) = first {
                report(
                imp,
                n + 1,
                "read as a system crontab, with a user field, because this line has the user root there; --system says so".into(),
            );
            }
            first.is_some()
        };
    for (n, raw) in src.text.lines().enumerate() {
        let line_no = n + 1;
        let t = raw.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some((name, value)) = env_line(t) {
            match name.as_str() {
                "CRON_TZ" => match Zone::parse(&value) {
                    Ok(_) => {
                        zone = Some(value);
                        pending_env.push((line_no, name));
                    }
                    Err(e) => report(
                        imp,
                        line_no,
                        format!("CRON_TZ={value}: {e}; the entries below keep the zone before it"),
                    ),
                },
                "SHELL" => {
                    shell = value;
                    pending_env.push((line_no, name));
                }
                // An empty MAILTO= is cron's way of sending no mail: nothing is lost.
                n if MAIL_SETTINGS.contains(&n) && value.is_empty() => {}
                "MAILTO" => {
                    items.push(Item::Note(on_failure_note(&value)));
                    report(
                        imp,
                        line_no,
                        format!(
                            "MAILTO={value}: cron mails a run's output; gearwheel mails nothing itself: put ON_FAILURE=FUNCTION above the entries and run a worker for FUNCTION that mails the alert job a failed run sends it (gearwheel-schedules(5), Alerts; the commented ON_FAILURE= line in the output says how)"
                        ),
                    );
                }
                n if MAIL_SETTINGS.contains(&n) => report(
                    imp,
                    line_no,
                    format!(
                        "{name}={value}: cron mails a run's output; gearwheel mails nothing itself: put ON_FAILURE=FUNCTION above the entries and run a worker for FUNCTION that mails the alert job a failed run sends it (gearwheel-schedules(5), Alerts); meanwhile the worker logs each run's exit status and a failing run's stderr tail is the job's exception text"
                    ),
                ),
                "RANDOM_DELAY" => report(
                    imp,
                    line_no,
                    format!(
                        "RANDOM_DELAY={value}: not carried over (it would move every run); add jitter={value}m to the entries if you want it"
                    ),
                ),
                _ => {
                    env.retain(|(k, _)| *k != name);
                    env.push((name.clone(), value));
                    pending_env.push((line_no, name));
                }
            }
            continue;
        }
        let not_carried = |imp: &mut Import, items: &mut Vec<Item>, why: String| {
            items.push(Item::Dropped(format!(
                "# NOT CARRIED OVER ({}:{line_no}: {why}): {t}",
                src.name
            )));
            imp.dropped += 1;
            report(imp, line_no, format!("not carried over: {why}"));
        };
        let l = match split_entry(t, system) {
            Ok(l) => l,
            Err(why) => {
                not_carried(imp, items, why);
                continue;
            }
        };
        let lower = l.spec.to_ascii_lowercase();
        if lower == "@reboot" {
            not_carried(
                imp,
                items,
                "@reboot runs when the machine boots; gearwheel's @reboot fires when the server starts, on whichever machine that is: run it from the machine's own boot (a systemd unit) instead".into(),
            );
            continue;
        }
        if lower.starts_with('@') && !MACROS.iter().any(|(m, _)| *m == lower) {
            not_carried(imp, items, format!("unknown macro {}", l.spec));
            continue;
        }
        if let Err(e) = Timing::parse(&l.spec) {
            not_carried(imp, items, format!("odd fields: {}", e.message));
            continue;
        }
        pending_env.clear();
        let base = function_name(l.command).unwrap_or_else(|| format!("line{line_no}"));
        let mut name = format!("{host}.{base}");
        let mut k = 2;
        while names.contains(&name) {
            name = format!("{host}.{base}_{k}");
            k += 1;
        }
        names.push(name.clone());
        imp.entries += 1;
        if let Some(m) = &opts.monitor {
            let prefix = &t[..t.len() - l.command.len()];
            let wrapped = ping_wrapped(&name, m.server.as_deref(), &shell, l.command);
            replaced.push((line_no, format!("{prefix}{wrapped}")));
        }
        items.push(Item::Entry(Out {
            source: src.name.clone(),
            line: line_no,
            original: t.to_string(),
            spec: l.spec.clone(),
            function: name,
            user: l.user.map(str::to_string).or_else(|| opts.user.clone()),
            argv: worker_argv(&shell, &env, l.command),
            zone: zone.clone(),
            monitored: opts.monitor.is_some(),
        }));
    }
    for (line, name) in pending_env {
        report(
            imp,
            line,
            format!("{name}= comes after the last entry, so it applies to none"),
        );
    }
    if opts.monitor.is_some() {
        let mut replaced = replaced.into_iter().peekable();
        for (n, raw) in src.text.lines().enumerate() {
            match replaced.next_if(|(l, _)| *l == n + 1) {
                Some((_, line)) => imp.crontab.push_str(&line),
                None => imp.crontab.push_str(raw),
            }
            imp.crontab.push('\n');
        }
    }
}

/// The guidance in place of `MAILTO=ADDRESS`: an `ON_FAILURE=` line to uncomment, and the
/// worker that would mail its alerts.
fn on_failure_note(address: &str) -> String {
    let first = address.split(',').next().unwrap_or(address).trim();
    let function = format!(
        "mail.{}",
        sanitize(first).unwrap_or_else(|| "alerts".into())
    );
    format!(
        "# MAILTO={address}: cron mailed the output of the entries below there; gearwheel\n\
         # sends a failed or missed run's account to a function instead. Uncomment the next line\n\
         # and run a worker that mails it, for example:\n\
         #     gearwheel work -f {function} -- sh -c {}\n\
         # ON_FAILURE={function}",
        shell_quote(&format!(
            "mail -s 'gearwheel alert' {}",
            shell_quote(address)
        ))
    )
}

fn render(
    sources: &[Source],
    opts: &Options,
    host: &str,
    items: &[Item],
    reports: &[Report],
) -> String {
    let mut s = String::new();
    let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    let _ = writeln!(
        s,
        "# gearwheel schedules imported from {} (host {host}) by gearwheel import-crontab {}.",
        names.join(", "),
        opts.version
    );
    let outs: Vec<&Out> = items
        .iter()
        .filter_map(|i| match i {
            Item::Entry(o) => Some(o),
            Item::Dropped(_) | Item::Note(_) => None,
        })
        .collect();
    if opts.monitor.is_some() {
        let _ = writeln!(
            s,
            "# Monitor first, migrate later: the crontab keeps running on {host}, each command\n\
             # through `gearwheel ping ID --` (install the crontab written with this file), and\n\
             # each entry here submits no job: it expects that ping (expect=ping) and alerts its\n\
             # on_failure= function when a run fails or is not pinged within its grace (1h unless\n\
             # grace= says otherwise). Add max_duration= and min_duration= where you know them."
        );
        notes_and_entries(&mut s, items, reports);
        return s;
    }
    let _ = writeln!(
        s,
        "# Each entry fires a background job; a `gearwheel work` on {host} runs the crontab line's\n# command for it. Start these workers on {host} (with -s SERVER:PORT or\n# GEARMAN_SERVERS=SERVER:PORT when the server is not 127.0.0.1:4730):"
    );
    let mut users: Vec<Option<&str>> = Vec::new();
    for o in &outs {
        if !users.contains(&o.user.as_deref()) {
            users.push(o.user.as_deref());
        }
    }
    for u in users {
        let _ = writeln!(s, "#");
        match u {
            Some(u) => {
                let _ = writeln!(s, "#   as user {u}:");
            }
            None => {
                let _ = writeln!(s, "#   as the crontab's owner:");
            }
        }
        for o in outs.iter().filter(|o| o.user.as_deref() == u) {
            let argv: Vec<String> = o.argv.iter().map(|a| shell_quote(a)).collect();
            let _ = writeln!(
                s,
                "#   gearwheel work -f {} -- {}",
                o.function,
                argv.join(" ")
            );
        }
    }
    let _ = writeln!(
        s,
        "#\n# As systemd units: gearwheel-work@.service (see gearwheel(1)).\n#\n# Unlike cron, an entry skips a run while its previous job is still queued or running\n# (overlap=skip, the default); add overlap=allow to an entry to start every run as cron does.\n# CRON_TZ became tz= on the entries; the others run in the server's --timezone (its local\n# time unless set), where the crontab ran in {host}'s local time."
    );
    notes_and_entries(&mut s, items, reports);
    s
}

/// The reports and the entries, in the crontabs' order (an entry expects pings in monitor
/// mode).
fn notes_and_entries(s: &mut String, items: &[Item], reports: &[Report]) {
    if !reports.is_empty() {
        let _ = writeln!(
            s,
            "#\n# Not carried over as it stood, and notes (also reported on stderr):"
        );
        for r in reports {
            let _ = writeln!(s, "#   {}:{}: {}", r.source, r.line, r.message);
        }
    }
    for item in items {
        match item {
            Item::Entry(o) => {
                let _ = writeln!(s, "\n# {}:{}: {}", o.source, o.line, o.original);
                // tz= rather than a CRON_TZ line: a zone set in one crontab must not reach
                // the entries of the next, and a schedules file cannot unset CRON_TZ.
                let _ = write!(s, "{}  {}", o.spec, o.function);
                if o.monitored {
                    s.push_str("  expect=ping");
                }
                if let Some(z) = &o.zone {
                    let _ = write!(s, "  tz={z}");
                }
                s.push('\n');
            }
            Item::Dropped(c) | Item::Note(c) => {
                let _ = writeln!(s, "\n{c}");
            }
        }
    }
}

#[cfg(test)]
mod tests;
