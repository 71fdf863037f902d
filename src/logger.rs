//! The `log` back end: gearmand-style lines to stderr, a file, or nowhere; the file is
//! reopened on SIGHUP so that logrotate can move it away. gearmand's five levels (ERROR,
//! WARNING, NOTICE, INFO, DEBUG) over `log`'s five (which has no NOTICE): a NOTICE line is an
//! `Info` record with the target `NOTICE` (the `notice!` macro), and `--verbose NOTICE` writes
//! those but no other `Info` record.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use log::{Level, LevelFilter, Log, Metadata, Record};

/// Where log lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogTarget {
    Stderr,
    None,
    File(PathBuf),
}

impl LogTarget {
    pub fn parse(s: &str) -> LogTarget {
        match s {
            "stderr" | "-" => LogTarget::Stderr,
            "none" => LogTarget::None,
            path => LogTarget::File(PathBuf::from(path)),
        }
    }
}

struct Logger {
    target: LogTarget,
    file: Mutex<Option<File>>,
}

static LOGGER: std::sync::OnceLock<Logger> = std::sync::OnceLock::new();

/// The `log` target of NOTICE lines: what an operator reads at the default service level
/// (start-up, reloads, leadership, shutdown), never one line per job or connection.
pub const NOTICE: &str = "NOTICE";

/// `--verbose NOTICE`: `Info` records are written only with the `NOTICE` target.
static NOTICE_ONLY: AtomicBool = AtomicBool::new(false);

/// A NOTICE line: `log::info!` with the `NOTICE` target.
#[macro_export]
macro_rules! notice {
    ($($arg:tt)+) => {
        ::log::info!(target: $crate::logger::NOTICE, $($arg)+)
    };
}

/// The level `--verbose` names, gearmand's five (and TRACE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verbosity {
    Error,
    Warning,
    Notice,
    Info,
    Debug,
    Trace,
}

impl Verbosity {
    /// The `log` filter: NOTICE lets `Info` records through, and `Logger::enabled` keeps
    /// only the NOTICE ones.
    pub fn filter(self) -> LevelFilter {
        match self {
            Verbosity::Error => LevelFilter::Error,
            Verbosity::Warning => LevelFilter::Warn,
            Verbosity::Notice | Verbosity::Info => LevelFilter::Info,
            Verbosity::Debug => LevelFilter::Debug,
            Verbosity::Trace => LevelFilter::Trace,
        }
    }
}

/// Is a record of `level` and `target` written (`notice_only`: at `--verbose NOTICE`)?
fn passes(notice_only: bool, level: Level, target: &str) -> bool {
    !(notice_only && level == Level::Info && target != NOTICE)
}

fn open(path: &PathBuf) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// gearmand's level names (and their synonyms), `--verbose`'s values.
pub fn parse_level(s: &str) -> Option<Verbosity> {
    Some(match s.to_ascii_uppercase().as_str() {
        "FATAL" | "ALERT" | "CRITICAL" | "ERROR" => Verbosity::Error,
        "WARNING" | "WARN" => Verbosity::Warning,
        "NOTICE" => Verbosity::Notice,
        "INFO" => Verbosity::Info,
        "DEBUG" => Verbosity::Debug,
        "TRACE" => Verbosity::Trace,
        _ => return None,
    })
}

/// Install the logger. A file that cannot be opened is an error for the caller to report.
pub fn init(target: LogTarget, level: Verbosity) -> std::io::Result<()> {
    let file = match &target {
        LogTarget::File(p) => Some(open(p)?),
        _ => None,
    };
    let logger = LOGGER.get_or_init(|| Logger {
        target,
        file: Mutex::new(file),
    });
    let _ = log::set_logger(logger);
    NOTICE_ONLY.store(level == Verbosity::Notice, Ordering::Relaxed);
    log::set_max_level(level.filter());
    Ok(())
}

/// Say `msg` on stderr as `gearwheel: MSG` whatever the log level (the listening line, which
/// scripts read, and errors that stop the server), and log it too when the log goes elsewhere:
/// stderr shows it once either way. What is announced is notice-worthy: an `Info` one is a
/// NOTICE line.
pub fn announce(level: Level, msg: &str) {
    eprintln!("gearwheel: {msg}");
    if LOGGER.get().is_some_and(|l| l.target != LogTarget::Stderr) {
        log::log!(target: NOTICE, level, "{msg}");
    }
}

/// True when the log goes to a file, which SIGHUP reopens.
pub fn to_file() -> bool {
    LOGGER
        .get()
        .is_some_and(|l| matches!(l.target, LogTarget::File(_)))
}

/// Reopen the log file (after logrotate moved it). Stderr and none need nothing.
pub fn reopen() {
    let Some(l) = LOGGER.get() else { return };
    if let LogTarget::File(p) = &l.target {
        match open(p) {
            Ok(f) => {
                if let Ok(mut g) = l.file.lock() {
                    *g = Some(f);
                }
            }
            Err(e) => eprintln!("gearwheel: cannot reopen log file {}: {e}", p.display()),
        }
    }
}

fn level_name(l: Level, target: &str) -> &'static str {
    match l {
        Level::Error => "ERROR",
        Level::Warn => "WARNING",
        Level::Info if target == NOTICE => "NOTICE",
        Level::Info => "INFO",
        Level::Debug => "DEBUG",
        Level::Trace => "TRACE",
    }
}

/// One log line, gearmand's layout. The time is UTC and says so, like the times in the
/// messages (RFC 3339, `Z`), so a line and the times it quotes compare at a glance.
fn format_line(
    level: Level,
    target: &str,
    at: chrono::DateTime<chrono::Utc>,
    msg: &std::fmt::Arguments<'_>,
) -> String {
    let ts = at.format("%Y-%m-%d %H:%M:%S%.6fZ");
    format!("{:>7} {ts} [  main ] {msg}\n", level_name(level, target))
}

impl Log for Logger {
    fn enabled(&self, m: &Metadata) -> bool {
        m.level() <= log::max_level()
            && self.target != LogTarget::None
            && passes(NOTICE_ONLY.load(Ordering::Relaxed), m.level(), m.target())
    }

    fn log(&self, r: &Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let line = format_line(r.level(), r.target(), chrono::Utc::now(), r.args());
        match &self.target {
            LogTarget::Stderr => {
                let _ = std::io::stderr().write_all(line.as_bytes());
            }
            LogTarget::File(_) => {
                if let Ok(mut g) = self.file.lock() {
                    if let Some(f) = g.as_mut() {
                        let _ = f.write_all(line.as_bytes());
                    }
                }
            }
            LogTarget::None => {}
        }
    }

    fn flush(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_targets() {
        assert_eq!(parse_level("warning"), Some(Verbosity::Warning));
        assert_eq!(parse_level("NOTICE"), Some(Verbosity::Notice));
        assert_eq!(parse_level("info"), Some(Verbosity::Info));
        assert_eq!(parse_level("DEBUG"), Some(Verbosity::Debug));
        assert_eq!(Verbosity::Notice.filter(), LevelFilter::Info);
        assert_eq!(parse_level("loud"), None);
        assert_eq!(LogTarget::parse("stderr"), LogTarget::Stderr);
        assert_eq!(LogTarget::parse("none"), LogTarget::None);
        assert_eq!(
            LogTarget::parse("/var/log/g.log"),
            LogTarget::File("/var/log/g.log".into())
        );
    }

    #[test]
    fn lines_carry_utc_with_its_offset() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 123_456_000).unwrap();
        assert_eq!(
            format_line(Level::Warn, "x", at, &format_args!("run at {} missed", "x")),
            "WARNING 2027-01-15 08:00:00.123456Z [  main ] run at x missed\n"
        );
        assert_eq!(
            format_line(Level::Info, NOTICE, at, &format_args!("started")),
            " NOTICE 2027-01-15 08:00:00.123456Z [  main ] started\n"
        );
    }

    #[test]
    fn notice_keeps_only_notice_lines_of_info() {
        assert!(passes(true, Level::Info, NOTICE));
        assert!(!passes(true, Level::Info, "gearwheel::engine::jobs"));
        assert!(passes(true, Level::Warn, "gearwheel::engine::jobs"));
        assert!(passes(false, Level::Info, "gearwheel::engine::jobs"));
    }
}
