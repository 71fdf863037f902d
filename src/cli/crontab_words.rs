//! The words of a crontab command, pure: cron's `%` rule, a function name guessed from the
//! program a command runs, and quoting for a shell. No I/O.

/// Cron's `%` rule (Vixie cron and cronie alike): the first unescaped `%` ends the command
/// and `\%` in the command is a `%`; what follows is the command's stdin, where an unescaped
/// `%` is a newline and `\%` a `%`. Other backslashes stay. `None`: no stdin.
pub fn split_percent(command: &str) -> (String, Option<String>) {
    let mut cmd = String::with_capacity(command.len());
    let mut escaped = false;
    let mut input = None;
    for (i, ch) in command.char_indices() {
        if escaped {
            if ch == '%' {
                cmd.pop();
            }
            cmd.push(ch);
            escaped = false;
            continue;
        }
        if ch == '%' {
            input = Some(&command[i + 1..]);
            break;
        }
        escaped = ch == '\\';
        cmd.push(ch);
    }
    let input = input.map(|rest| {
        let mut out = String::with_capacity(rest.len());
        let mut escaped = false;
        for ch in rest.chars() {
            let mut ch = ch;
            if escaped {
                if ch != '%' {
                    out.push('\\');
                }
            } else if ch == '%' {
                ch = '\n';
            }
            escaped = ch == '\\';
            if !escaped {
                out.push(ch);
            }
        }
        if escaped {
            out.push('\\');
        }
        out
    });
    (cmd, input.filter(|s| !s.is_empty()))
}

/// A crontab command as cron will read it again, split at its first unescaped `%`: the command
/// and what follows from that `%` on (empty when none), both as written (`\%` stays, for cron).
pub fn split_at_percent(command: &str) -> (&str, &str) {
    let mut escaped = false;
    for (i, ch) in command.char_indices() {
        if ch == '%' && !escaped {
            return (&command[..i], &command[i..]);
        }
        escaped = ch == '\\' && !escaped;
    }
    (command, "")
}

/// A crontab command run through `gearwheel ping ID`: the command (cron's `%` rule kept: it
/// reads the line before the shell does) in `shell -c`, so that `a && b` is watched whole.
pub fn ping_wrapped(id: &str, server: Option<&str>, shell: &str, command: &str) -> String {
    let (cmd, stdin) = split_at_percent(command);
    let server = server.map_or_else(String::new, |s| format!("-s {} ", shell_quote(s)));
    format!(
        "gearwheel ping {server}{} -- {} -c {}{stdin}",
        shell_quote(id),
        shell_quote(shell),
        shell_quote(cmd.trim_end())
    )
}

/// A word for a POSIX shell: as it is when nothing in it is special, else single-quoted.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Letters, digits and `_` only (others become one `_`), at most 40 characters; `None` if
/// nothing is left.
pub fn sanitize(s: &str) -> Option<String> {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out: String = out.trim_matches('_').chars().take(40).collect();
    let out = out.trim_end_matches('_').to_string();
    (!out.is_empty()).then_some(out)
}

/// Shell words split into simple commands at `;`, `&&`, `||`, `|`, `&`, parentheses and
/// braces; quotes removed, redirections dropped. Rough, but only names come from it.
fn segments(command: &str) -> Vec<Vec<String>> {
    let mut segs: Vec<Vec<String>> = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    let end_word = |segs: &mut Vec<Vec<String>>, word: &mut Option<String>| {
        if let Some(w) = word.take() {
            if w == "{" || w == "}" {
                segs.push(Vec::new());
            } else if let Some(seg) = segs.last_mut() {
                seg.push(w);
            }
        }
    };
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else if c == '\\' && q == '"' {
                if let Some(n) = chars.next() {
                    word.get_or_insert_with(String::new).push(n);
                }
            } else {
                word.get_or_insert_with(String::new).push(c);
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    word.get_or_insert_with(String::new).push(n);
                }
            }
            // `2>&1`, `&>`: part of a redirection, not a separator.
            '&' if word.as_deref().is_some_and(|w| w.ends_with(['>', '<']))
                || chars.peek() == Some(&'>') =>
            {
                word.get_or_insert_with(String::new).push(c);
            }
            ';' | '&' | '|' | '(' | ')' | '\n' => {
                end_word(&mut segs, &mut word);
                segs.push(Vec::new());
            }
            c if c.is_whitespace() => end_word(&mut segs, &mut word),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    end_word(&mut segs, &mut word);
    segs.into_iter()
        .map(|seg| {
            let mut out = Vec::new();
            let mut skip_next = false;
            for w in seg {
                if skip_next {
                    skip_next = false;
                    continue;
                }
                let op = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
                if op.starts_with(['>', '<']) {
                    // A bare operator takes the next word as its target.
                    skip_next = op.trim_end_matches(['>', '<', '&', '|']).is_empty();
                    continue;
                }
                out.push(w);
            }
            out
        })
        .filter(|s| !s.is_empty())
        .collect()
}

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(n, _)| {
        !n.is_empty()
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !n.starts_with(|c: char| c.is_ascii_digit())
    })
}

fn base(w: &str) -> &str {
    w.rsplit('/').find(|p| !p.is_empty()).unwrap_or(w)
}

/// A program that only checks or waits: the name comes from a later command.
const GUARDS: [&str; 14] = [
    "cd", "test", "[", "[[", "true", "false", ":", "sleep", "fi", "done", "esac", "exit", "echo",
    "which",
];
/// Words that lead into the command proper.
const KEYWORDS: [&str; 10] = [
    "if", "then", "else", "elif", "do", "while", "until", "!", "exec", "command",
];
/// Programs that run another program: (name, positional arguments of their own, options
/// that take the next word as their value).
const WRAPPERS: [(&str, usize, &[&str]); 14] = [
    ("nice", 0, &["-n"]),
    ("ionice", 0, &["-c", "-n", "-p"]),
    ("nohup", 0, &[]),
    ("env", 0, &["-u", "-C", "-S"]),
    ("chronic", 0, &[]),
    ("cronic", 0, &[]),
    ("setsid", 0, &[]),
    ("sudo", 0, &["-u", "-g", "-C", "-D"]),
    ("time", 0, &["-f", "-o"]),
    ("stdbuf", 0, &["-i", "-o", "-e"]),
    ("run-one", 0, &[]),
    ("systemd-cat", 0, &["-t", "-p"]),
    ("timeout", 1, &["-s", "-k"]),
    ("flock", 1, &["-w", "-E"]),
];
/// Programs whose first argument names what runs (a script, a directory, a service).
const RUNNERS: [&str; 19] = [
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "python",
    "python2",
    "python3",
    "perl",
    "php",
    "ruby",
    "node",
    "nodejs",
    "lua",
    "run-parts",
    "invoke-rc.d",
    "service",
    "Rscript",
    "java",
];
/// Runner options that take the next word as their value.
const RUNNER_VALUE_OPTIONS: [&str; 4] = ["-W", "-X", "-m", "-d"];

fn is_runner(p: &str) -> bool {
    RUNNERS.contains(&p) || (p.starts_with("php") || p.starts_with("python")) && p.len() <= 10
}

/// What one simple command runs: `Some((name, strong))`; weak names (an interpreter with
/// inline code) give way to a later command's.
fn segment_name(seg: &[String]) -> Option<(String, bool)> {
    let mut i = 0;
    let word = |i: usize| seg.get(i).map(String::as_str);
    while let Some(w) = word(i) {
        if is_assignment(w)
            || (KEYWORDS.contains(&w)
                && !(w == "command" && word(i + 1).is_some_and(|n| n.starts_with('-'))))
        {
            i += 1;
            continue;
        }
        break;
    }
    let mut prog = base(word(i)?);
    if GUARDS.contains(&prog) || prog == "command" {
        return None;
    }
    // Wrappers: skip their options and own arguments.
    while let Some(&(_, own, value_options)) = WRAPPERS.iter().find(|(n, ..)| *n == prog) {
        i += 1;
        while let Some(w) = word(i) {
            if value_options.contains(&w) {
                i += 2;
            } else if w.starts_with('-') || is_assignment(w) || w.parse::<i64>().is_ok() {
                i += 1;
            } else {
                break;
            }
        }
        i += own;
        prog = base(word(i)?);
    }
    if !is_runner(prog) {
        return Some((strip_ext(prog).to_string(), true));
    }
    let runner = prog;
    i += 1;
    while let Some(w) = word(i) {
        if ["-c", "-e", "-r", "-E"].contains(&w) {
            // Inline code: the interpreter is all there is to name.
            return Some((runner.to_string(), false));
        }
        if RUNNER_VALUE_OPTIONS.contains(&w) {
            i += 2;
        } else if w.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    let Some(target) = word(i) else {
        return Some((runner.to_string(), true));
    };
    Some((strip_ext(base(target)).to_string(), true))
}

/// A script's name without the extension that only says its language.
fn strip_ext(name: &str) -> &str {
    for ext in [
        ".sh", ".bash", ".py", ".php", ".pl", ".rb", ".js", ".jar", ".lua", ".R",
    ] {
        if let Some(stem) = name.strip_suffix(ext).filter(|s| !s.is_empty()) {
            return stem;
        }
    }
    name
}

/// A short name for the function that runs `command`, from the program it runs (past `cd`,
/// tests, wrappers such as nice or flock, and into interpreters and run-parts).
pub fn function_name(command: &str) -> Option<String> {
    let (cmd, _) = split_percent(command);
    let mut weak = None;
    for seg in segments(&cmd) {
        match segment_name(&seg) {
            Some((name, true)) => {
                if let Some(n) = sanitize(&name) {
                    return Some(n);
                }
            }
            Some((name, false)) if weak.is_none() => weak = sanitize(&name),
            _ => {}
        }
    }
    weak
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_wrapped_in_gearwheel_ping_keeps_crons_percent_rule() {
        assert_eq!(split_at_percent("a%b%c"), ("a", "%b%c"));
        assert_eq!(split_at_percent(r"date +\%F"), (r"date +\%F", ""));
        assert_eq!(split_at_percent(r"a\\%b"), (r"a\\", "%b"));
        assert_eq!(
            ping_wrapped(
                "web1.backup",
                None,
                "/bin/sh",
                "cd /srv && ./backup.sh%full%now"
            ),
            "gearwheel ping web1.backup -- /bin/sh -c 'cd /srv && ./backup.sh'%full%now"
        );
        assert_eq!(
            ping_wrapped(
                "web1.date",
                Some("http://gw:8080"),
                "/bin/bash",
                r"date +\%F >> /tmp/d"
            ),
            r"gearwheel ping -s http://gw:8080 web1.date -- /bin/bash -c 'date +\%F >> /tmp/d'"
        );
        assert_eq!(
            ping_wrapped("x", None, "/bin/sh", "echo 'hi'"),
            r"gearwheel ping x -- /bin/sh -c 'echo '\''hi'\'''"
        );
    }

    #[test]
    fn percent_as_cron_reads_it() {
        let s = |c: &str| split_percent(c);
        assert_eq!(s("date"), ("date".into(), None));
        assert_eq!(
            s("mail -s hi root%line one%line two"),
            ("mail -s hi root".into(), Some("line one\nline two".into()))
        );
        assert_eq!(s("date +\\%Y-\\%m"), ("date +%Y-%m".into(), None));
        assert_eq!(
            s("cat%100\\% sure%"),
            ("cat".into(), Some("100% sure\n".into()))
        );
        // Other backslashes stay, on both sides.
        assert_eq!(
            s("echo a\\ b\\\\%x\\y\\"),
            ("echo a\\ b\\\\".into(), Some("x\\y\\".into()))
        );
        assert_eq!(s("true%"), ("true".into(), None));
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/bin/sh"), "/bin/sh");
        assert_eq!(shell_quote("PATH=/a:/b"), "PATH=/a:/b");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn names_from_real_lines() {
        let n = |c: &str| function_name(c).unwrap_or_default();
        assert_eq!(
            n("cd / && run-parts --report /etc/cron.hourly"),
            "cron_hourly"
        );
        assert_eq!(
            n("test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }"),
            "cron_daily"
        );
        assert_eq!(
            n(
                "[ -x /etc/init.d/anacron ] && if [ ! -d /run/systemd/system ]; then /usr/sbin/invoke-rc.d anacron start >/dev/null; fi"
            ),
            "anacron"
        );
        assert_eq!(
            n(
                "test -x /usr/bin/certbot -a \\! -d /run/systemd/system && perl -e 'sleep int(rand(43200))' && certbot -q renew --no-random-sleep-on-renew"
            ),
            "certbot"
        );
        assert_eq!(
            n("test -e /run/systemd/system || SERVICE_MODE=1 /sbin/e2scrub_all -A -r"),
            "e2scrub_all"
        );
        assert_eq!(
            n("command -v debian-sa1 > /dev/null && debian-sa1 1 1"),
            "debian_sa1"
        );
        assert_eq!(
            n("nice -n 19 ionice -c3 flock -n /tmp/l /usr/local/bin/backup.sh >>/var/log/b 2>&1"),
            "backup"
        );
        assert_eq!(
            n("/usr/bin/php8.2 /var/www/artisan schedule:run"),
            "artisan"
        );
        assert_eq!(n("sudo -u www-data python3 -u /srv/app/tasks.py"), "tasks");
        assert_eq!(n("sh -c 'echo hi'"), "sh");
        assert_eq!(n("find /tmp -mtime +7 -delete"), "find");
        assert_eq!(n("date +\\%s >> /tmp/x"), "date");
        assert_eq!(n("echo hi"), "");
        assert_eq!(
            sanitize("Web-1.example.org").as_deref(),
            Some("web_1_example_org")
        );
        assert_eq!(sanitize("--"), None);
    }
}
