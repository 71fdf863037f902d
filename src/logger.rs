//! The `log` back end: gearmand-style lines to stderr, a file, or nowhere; the file is
//! reopened on SIGHUP so that logrotate can move it away.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

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

fn open(path: &PathBuf) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// gearmand's level names, mapped onto `log`'s five levels.
pub fn parse_level(s: &str) -> Option<LevelFilter> {
    Some(match s.to_ascii_uppercase().as_str() {
        "FATAL" | "ALERT" | "CRITICAL" | "ERROR" => LevelFilter::Error,
        "WARNING" | "WARN" => LevelFilter::Warn,
        "NOTICE" | "INFO" => LevelFilter::Info,
        "DEBUG" => LevelFilter::Debug,
        "TRACE" => LevelFilter::Trace,
        _ => return None,
    })
}

/// Install the logger. A file that cannot be opened is an error for the caller to report.
pub fn init(target: LogTarget, level: LevelFilter) -> std::io::Result<()> {
    let file = match &target {
        LogTarget::File(p) => Some(open(p)?),
        _ => None,
    };
    let logger = LOGGER.get_or_init(|| Logger {
        target,
        file: Mutex::new(file),
    });
    let _ = log::set_logger(logger);
    log::set_max_level(level);
    Ok(())
}

/// Say `msg` on stderr as `gearwheel: MSG` whatever the log level (the listening line, which
/// scripts read, and errors that stop the server), and log it too when the log goes elsewhere:
/// stderr shows it once either way.
pub fn announce(level: Level, msg: &str) {
    eprintln!("gearwheel: {msg}");
    if LOGGER.get().is_some_and(|l| l.target != LogTarget::Stderr) {
        log::log!(level, "{msg}");
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

fn level_name(l: Level) -> &'static str {
    match l {
        Level::Error => "ERROR",
        Level::Warn => "WARNING",
        Level::Info => "INFO",
        Level::Debug => "DEBUG",
        Level::Trace => "TRACE",
    }
}

/// One log line, gearmand's layout. The time is UTC and says so, like the times in the
/// messages (RFC 3339, `Z`), so a line and the times it quotes compare at a glance.
fn format_line(
    level: Level,
    at: chrono::DateTime<chrono::Utc>,
    msg: &std::fmt::Arguments<'_>,
) -> String {
    let ts = at.format("%Y-%m-%d %H:%M:%S%.6fZ");
    format!("{:>7} {ts} [  main ] {msg}\n", level_name(level))
}

impl Log for Logger {
    fn enabled(&self, m: &Metadata) -> bool {
        m.level() <= log::max_level() && self.target != LogTarget::None
    }

    fn log(&self, r: &Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let line = format_line(r.level(), chrono::Utc::now(), r.args());
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
        assert_eq!(parse_level("warning"), Some(LevelFilter::Warn));
        assert_eq!(parse_level("NOTICE"), Some(LevelFilter::Info));
        assert_eq!(parse_level("DEBUG"), Some(LevelFilter::Debug));
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
            format_line(Level::Warn, at, &format_args!("run at {} missed", "x")),
            "WARNING 2027-01-15 08:00:00.123456Z [  main ] run at x missed\n"
        );
    }
}
