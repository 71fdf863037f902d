//! The client-side commands, `work`, `submit`, `admin`, `import-crontab` and `schedules`: their flags and
//! what they do, on top of the blocking library in `client`. They never touch the engine or
//! the reactor; each returns the process exit code.
//!
//! Exit codes: 0 success; 1 the job failed (WORK_FAIL / WORK_EXCEPTION) or the server answered
//! `ERR`; 2 bad flags; 3 the server could not be reached or broke the protocol.
//!
//! - `args`: the top-level command line; `help`: `--help` wrapped for a terminal.
//! - `work`, `submit`, `admin`: the commands of those names; `table` and `escape`: the
//!   `admin` command's tables and terminal-safe bytes.
//! - `import_crontab`: the `import-crontab` command; `crontab_import`: its pure translation;
//!   `crontab_words`: a crontab command's words.
//! - `schedules`: `gearwheel schedules push|show`, a cluster's schedules file in etcd.
//! - `ping`: `gearwheel ping ID -- COMMAND`, a command run anywhere reported to its heartbeat
//!   entry.

pub mod admin;
pub mod args;
pub mod crontab_import;
mod crontab_words;
mod escape;
pub mod help;
pub mod import_crontab;
pub mod ping;
pub mod schedules;
pub mod submit;
pub mod table;
pub mod work;

use argh::FromArgs;

/// Exit code: the job failed, or the server refused the command.
pub const EXIT_FAILED: u8 = 1;
/// Exit code: bad flags.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: the server could not be reached, or broke the protocol.
pub const EXIT_UNREACHABLE: u8 = 3;

#[derive(FromArgs, Debug, Default, PartialEq)]
/// Run COMMAND once per job of the given functions, with the workload on stdin; its stdout is
/// the result.
#[argh(
    subcommand,
    name = "work",
    example = "gearwheel work -f resize -c 4 --timeout 5m -- /usr/local/bin/resize-image",
    note = "COMMAND gets GEARMAN_FUNCTION, GEARMAN_HANDLE and GEARMAN_UNIQUE in its environment. \
            Exit 0: stdout goes back as WORK_COMPLETE. Non-zero exit, a signal or --timeout: \
            WORK_EXCEPTION with the reason and the tail of stderr (clients without the \
            exceptions option get WORK_FAIL). SIGTERM or SIGINT: take no more jobs, let the \
            running ones finish, exit 0; a second one kills them (the server requeues them)."
)]
pub struct WorkArgs {
    /// function to serve (repeatable; at least one)
    #[argh(option, short = 'f')]
    pub function: Vec<String>,
    /// server HOST[:PORT] to take jobs from (repeatable; default $GEARMAN_SERVERS, else
    /// $GEARMAN_SERVER, else 127.0.0.1; the port defaults to $GEARMAND_PORT, else 4730)
    #[argh(option, short = 's')]
    pub server: Vec<String>,
    /// most jobs run at once, over all servers (default 1)
    #[argh(option, short = 'c', default = "1")]
    pub concurrency: usize,
    /// kill a job's command after this long (10s, 5m, 2h, 1d) and report it
    #[argh(option)]
    pub timeout: Option<String>,
    /// client id shown by `gearwheel admin workers` (default gearwheel-work-<pid>)
    #[argh(option)]
    pub id: Option<String>,
    /// speak TLS to the server (the server's certificate is checked against --ssl-ca-file,
    /// else the system's CA bundle)
    #[argh(switch)]
    pub ssl: bool,
    /// PEM file of the CA that signed the server's certificate (with --ssl)
    #[argh(option)]
    pub ssl_ca_file: Option<String>,
    /// PEM file of this client's certificate, for a server that requires one (with --ssl)
    #[argh(option)]
    pub ssl_certificate: Option<String>,
    /// PEM file of the private key of --ssl-certificate
    #[argh(option)]
    pub ssl_key: Option<String>,
    /// the command to run for each job and its arguments, after `--`
    #[argh(positional, greedy)]
    pub command: Vec<String>,
}

#[derive(FromArgs, Debug, Default, PartialEq)]
/// Submit a job: print its result (or, for background and future jobs, its handle).
#[argh(
    subcommand,
    name = "submit",
    example = "echo hello | gearwheel submit -f up",
    example = "gearwheel submit -f report --in 2h weekly",
    note = "Exit codes: 0 done, 1 the job failed or the server refused it (the text on \
            stderr), 2 bad flags, 3 the server could not be reached."
)]
pub struct SubmitArgs {
    /// function to call
    #[argh(option, short = 'f')]
    pub function: String,
    /// server HOST[:PORT] (repeatable: tried in order; default $GEARMAN_SERVERS, else
    /// $GEARMAN_SERVER, else 127.0.0.1; the port defaults to $GEARMAND_PORT, else 4730)
    #[argh(option, short = 's')]
    pub server: Vec<String>,
    /// queue the job and print its handle instead of waiting for the result
    #[argh(switch, short = 'b')]
    pub background: bool,
    /// high or low (default normal)
    #[argh(option)]
    pub priority: Option<String>,
    /// unique key: a job with the same function and key joins the first ("-": the data is the key)
    #[argh(option, short = 'u')]
    pub unique: Option<String>,
    /// run at this time, RFC 3339 (2030-01-02T03:04:05Z) or unix seconds; prints the handle
    #[argh(option)]
    pub at: Option<String>,
    /// run after this long (10s, 5m, 2h, 1d); prints the handle
    #[argh(option, long = "in")]
    pub in_: Option<String>,
    /// speak TLS to the server (the server's certificate is checked against --ssl-ca-file,
    /// else the system's CA bundle)
    #[argh(switch)]
    pub ssl: bool,
    /// PEM file of the CA that signed the server's certificate (with --ssl)
    #[argh(option)]
    pub ssl_ca_file: Option<String>,
    /// PEM file of this client's certificate, for a server that requires one (with --ssl)
    #[argh(option)]
    pub ssl_certificate: Option<String>,
    /// PEM file of the private key of --ssl-certificate
    #[argh(option)]
    pub ssl_key: Option<String>,
    /// the workload; "-" or none reads standard input
    #[argh(positional)]
    pub data: Option<String>,
}

#[derive(FromArgs, Debug, Default, PartialEq)]
/// Ask a server about its functions, workers and jobs, and print the answer as a table.
#[argh(
    subcommand,
    name = "admin",
    example = "gearwheel admin status",
    example = "gearwheel admin -s jobs.example:4730 --raw workers",
    note = "Commands: status, prioritystatus, workers, jobs, unique, scheduled, schedules, journal, \
            version, getpid, verbose, cancel HANDLE, create FUNC, drop FUNC, \
            maxqueue FUNC [N | HIGH NORMAL LOW], reload, shutdown [graceful]; the admin \
            protocol's own lines (show jobs, cancel job HANDLE, ...) work too, and any other \
            command is sent as it is and its reply printed line by line. Exit codes: 0 done, 1 the server answered ERR, 2 bad flags, 3 the server could \
            not be reached."
)]
pub struct AdminArgs {
    /// server HOST[:PORT] (default the first of $GEARMAN_SERVERS, else $GEARMAN_SERVER, else
    /// 127.0.0.1; the port defaults to $GEARMAND_PORT, else 4730)
    #[argh(option, short = 's')]
    pub server: Option<String>,
    /// print the protocol lines as the server sent them
    #[argh(switch)]
    pub raw: bool,
    /// speak TLS to the server (the server's certificate is checked against --ssl-ca-file,
    /// else the system's CA bundle)
    #[argh(switch)]
    pub ssl: bool,
    /// PEM file of the CA that signed the server's certificate (with --ssl)
    #[argh(option)]
    pub ssl_ca_file: Option<String>,
    /// PEM file of this client's certificate, for a server that requires one (with --ssl)
    #[argh(option)]
    pub ssl_certificate: Option<String>,
    /// PEM file of the private key of --ssl-certificate
    #[argh(option)]
    pub ssl_key: Option<String>,
    /// the admin command and its arguments
    #[argh(positional, greedy)]
    pub command: Vec<String>,
}

/// argh takes a lone `-` for an unknown flag; for `submit` it means "read stdin", which is
/// also what no DATA means, so it is dropped before parsing (up to a `--`); for
/// `import-crontab` it is a file name, spelled `/dev/stdin` for argh. Runs after
/// `config::split_equals`.
pub fn prepare_args(mut args: Vec<String>) -> Vec<String> {
    if args.first().map(String::as_str) == Some("import-crontab") {
        for a in args.iter_mut().filter(|a| *a == "-") {
            *a = "/dev/stdin".into();
        }
    }
    if args.first().map(String::as_str) == Some("submit") {
        let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
        let mut i = 0;
        args.retain(|a| {
            i += 1;
            !(i <= end && a == "-")
        });
    }
    args
}

/// Print a message for one of the commands to stderr.
pub(crate) fn say(cmd: &str, msg: impl std::fmt::Display) {
    eprintln!("gearwheel {cmd}: {msg}");
}

#[cfg(test)]
mod tests {
    use super::args::{Cli, Command};
    use crate::config::split_equals;
    use argh::FromArgs;

    fn parse(args: &[&str]) -> Result<Command, String> {
        let args = super::prepare_args(split_equals(args.iter().map(|s| s.to_string())));
        let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        match Cli::from_args(&["gearwheel"], &refs) {
            Ok(Cli {
                command: Some(c), ..
            }) => Ok(c),
            Ok(_) => Err("no command".into()),
            Err(e) => Err(e.output),
        }
    }

    #[test]
    fn work_takes_everything_after_the_double_dash() {
        let Ok(Command::Work(w)) = parse(&[
            "work",
            "-f",
            "up",
            "--function=down",
            "-s",
            "a:1",
            "-c",
            "2",
            "--timeout=5s",
            "--",
            "tr",
            "-d",
            "--x=y",
            "-c",
        ]) else {
            panic!("work did not parse")
        };
        assert_eq!(w.function, vec!["up", "down"]);
        assert_eq!(w.server, vec!["a:1"]);
        assert_eq!(w.concurrency, 2);
        assert_eq!(w.timeout.as_deref(), Some("5s"));
        assert_eq!(w.command, vec!["tr", "-d", "--x=y", "-c"]);
    }

    #[test]
    fn submit_and_admin_parse() {
        let Ok(Command::Submit(s)) = parse(&[
            "submit",
            "-f",
            "up",
            "--in=2s",
            "--priority",
            "high",
            "-b",
            "--",
            "-data-",
        ]) else {
            panic!("submit did not parse")
        };
        assert_eq!(s.function, "up");
        assert_eq!(s.in_.as_deref(), Some("2s"));
        assert_eq!(s.priority.as_deref(), Some("high"));
        assert!(s.background);
        assert_eq!(s.data.as_deref(), Some("-data-"));

        let Ok(Command::Admin(a)) = parse(&["admin", "-s", "h:1", "--raw", "maxqueue", "f", "3"])
        else {
            panic!("admin did not parse")
        };
        assert_eq!(a.server.as_deref(), Some("h:1"));
        assert!(a.raw);
        assert_eq!(a.command, vec!["maxqueue", "f", "3"]);
        assert!(parse(&["submit", "hello"]).is_err(), "-f is required");

        // A lone "-" (stdin) is the same as no data; after `--` it is data.
        let Ok(Command::Submit(s)) = parse(&["submit", "-f", "up", "-", "-s", "h:1"]) else {
            panic!("submit - did not parse")
        };
        assert_eq!((s.data, s.server), (None, vec!["h:1".to_string()]));
        let Ok(Command::Submit(s)) = parse(&["submit", "-f", "up", "--", "-"]) else {
            panic!("submit -- - did not parse")
        };
        assert_eq!(s.data.as_deref(), Some("-"));
        let Ok(Command::Work(w)) = parse(&["work", "-f", "cat", "--", "cat", "-"]) else {
            panic!("work did not parse")
        };
        assert_eq!(w.command, vec!["cat", "-"]);
    }

    #[test]
    fn ping_takes_its_flags_around_the_id_and_the_command_after_the_double_dash() {
        let Ok(Command::Ping(p)) = parse(&[
            "ping",
            "backup.remote",
            "-s",
            "h:8080",
            "--",
            "rsync",
            "-a",
            "--delete=yes",
        ]) else {
            panic!("ping did not parse")
        };
        assert_eq!(p.server.as_deref(), Some("h:8080"));
        assert_eq!(p.args, vec!["backup.remote", "rsync", "-a", "--delete=yes"]);
    }
}
