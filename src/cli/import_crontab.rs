//! `gearwheel import-crontab`: read a crontab file (or stdin), print the schedules file on
//! stdout and the report on stderr; with `--check`, validate the result as `gearwheel check`
//! does; with `--monitor`, also the crontab wrapped in `gearwheel ping` (`--crontab-out`).
//! The translation itself is `crontab_import`.

use std::io::Read;

use argh::FromArgs;

use super::crontab_import::{Monitor, Options, Source, translate};
use crate::schedule::{Zone, check};

#[derive(FromArgs, Debug, Default, PartialEq)]
/// Translate a crontab into a schedules file (stdout) and the workers it needs (comments in it).
#[argh(
    subcommand,
    name = "import-crontab",
    example = "crontab -l | gearwheel import-crontab --user alice > alice.cron",
    example = "gearwheel import-crontab /etc/crontab /etc/cron.d/* --host web1 --check > web1.cron",
    example = "crontab -l | gearwheel import-crontab --monitor --crontab-out new.crontab > web1.cron",
    note = "Lines it cannot carry over (@reboot, MAILTO, odd fields, settings after the last \
            entry) are reported on stderr with their line numbers and kept as comments. \
            /etc/crontab and /etc/cron.d/* are read as system crontabs (a user field) without \
            --system. Exit codes: 0 written, 1 --check found errors, 2 bad flags or an \
            unreadable file."
)]
pub struct ImportCrontabArgs {
    /// crontab files, translated together ("-" or none: standard input)
    #[argh(positional)]
    pub files: Vec<String>,
    /// the machine the crontab runs on; names the functions HOST.COMMAND (default this
    /// machine's short host name)
    #[argh(option)]
    pub host: Option<String>,
    /// the owner of a user crontab, named in the worker commands
    #[argh(option)]
    pub user: Option<String>,
    /// every line has a user field after the time fields (as in /etc/crontab, /etc/cron.d)
    #[argh(switch)]
    pub system: bool,
    /// validate the result as `gearwheel check` does (errors on stderr, exit 1)
    #[argh(switch)]
    pub check: bool,
    /// watch first, move nothing: the entries expect pings (expect=ping), and the crontab is
    /// written back to --crontab-out with each command run through `gearwheel ping ID --`
    #[argh(switch)]
    pub monitor: bool,
    /// with --monitor: where the crontab to install goes (one crontab at a time)
    #[argh(option)]
    pub crontab_out: Option<String>,
    /// with --monitor: the server's HTTP address for `gearwheel ping -s` in the crontab
    #[argh(option)]
    pub ping_server: Option<String>,
}

/// The short host name (up to the first dot).
fn short_hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length and gethostname NUL-terminates within it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).into_owned();
    name.split('.').next().unwrap_or("localhost").to_string()
}

/// Whether a path is one cron reads with a user field.
fn is_system_path(path: &str) -> bool {
    path == "/etc/crontab" || path.starts_with("/etc/cron.d/")
}

pub fn run(a: ImportCrontabArgs) -> u8 {
    let say = |m: String| super::say("import-crontab", m);
    let files = if a.files.is_empty() {
        vec!["-".to_string()]
    } else {
        a.files
    };
    let monitor = match (a.monitor, &a.crontab_out) {
        (true, Some(_)) if files.len() == 1 => Some(Monitor {
            server: a.ping_server.clone(),
        }),
        (true, Some(_)) => {
            say("--monitor writes one crontab back: give one file".into());
            return super::EXIT_USAGE;
        }
        (true, None) => {
            say("--monitor needs --crontab-out FILE, where the crontab to install goes".into());
            return super::EXIT_USAGE;
        }
        (false, None) if a.ping_server.is_none() => None,
        (false, _) => {
            say("--crontab-out and --ping-server go with --monitor".into());
            return super::EXIT_USAGE;
        }
    };
    let mut sources = Vec::new();
    for f in files {
        let (name, text) = if f == "-" || f == "/dev/stdin" {
            let mut t = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut t) {
                say(format!("cannot read standard input: {e}"));
                return super::EXIT_USAGE;
            }
            ("stdin".to_string(), t)
        } else {
            match std::fs::read_to_string(&f) {
                Ok(t) => (f, t),
                Err(e) => {
                    say(format!("{f}: {e}"));
                    return super::EXIT_USAGE;
                }
            }
        };
        sources.push(Source {
            system: a.system || is_system_path(&name),
            name,
            text,
        });
    }
    let opts = Options {
        host: a.host.unwrap_or_else(short_hostname),
        user: a.user,
        version: env!("CARGO_PKG_VERSION").to_string(),
        monitor,
    };
    let imp = translate(&sources, &opts);
    for r in &imp.reports {
        say(format!("{}:{}: {}", r.source, r.line, r.message));
    }
    say(format!(
        "{} entries; {} line(s) not carried over",
        imp.entries, imp.dropped
    ));
    if let Some(out) = &a.crontab_out {
        if let Err(e) = std::fs::write(out, &imp.crontab) {
            say(format!("{out}: {e}"));
            return super::EXIT_USAGE;
        }
        say(format!(
            "the crontab to install, each command through gearwheel ping, is in {out}"
        ));
    }
    print!("{}", imp.text);
    if a.check {
        let (report, ok) = check::check("(output)", &imp.text, &Zone::Local, 0, chrono::Utc::now());
        eprint!("{report}");
        if !ok {
            return super::EXIT_FAILED;
        }
    }
    0
}
