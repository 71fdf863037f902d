//! The far-future check: a SUBMIT_JOB_SCHED or SUBMIT_JOB_EPOCH job due further ahead than
//! `--future-horizon` is accepted, and logged at WARNING with its due time, because a field
//! read in another convention (weekdays counted from Sunday, an epoch in milliseconds) gives
//! a job that waits months or years in silence.

use super::rfc3339;
use crate::peer_text::shown;

/// The warning for a job due at `due` (ms) when it is more than `horizon` ms after `now`;
/// `None` when it is not, or when `horizon` is 0 (never warn).
pub(super) fn message(
    handle: &dyn std::fmt::Display,
    func: &[u8],
    due: u64,
    now: u64,
    horizon: u64,
) -> Option<String> {
    let ahead = due.checked_sub(now)?;
    if horizon == 0 || ahead <= horizon {
        return None;
    }
    Some(format!(
        "future job {} ({}) is due {}, {} ahead, beyond --future-horizon {}: was a time field \
         misread? (SUBMIT_JOB_SCHED matches all five fields and numbers weekdays 0 = Monday to \
         6 = Sunday; SUBMIT_JOB_EPOCH is in seconds)",
        handle,
        shown(func),
        rfc3339(due),
        short(ahead),
        short(horizon)
    ))
}

/// A span as the largest whole unit that fits: `400d`, `12h`, `90s`.
fn short(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        s if s >= 86_400 => format!("{}d", s / 86_400),
        s if s >= 3_600 => format!("{}h", s / 3_600),
        s if s >= 60 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = 86_400_000;
    /// 2026-11-22T06:37:30Z
    const NOW: u64 = 1_795_329_450_000;

    #[test]
    fn only_beyond_the_horizon_and_never_with_zero() {
        assert_eq!(message(&"H:x:1", b"f", NOW + 30 * DAY, NOW, 31 * DAY), None);
        assert_eq!(message(&"H:x:1", b"f", NOW + 400 * DAY, NOW, 0), None);
        assert_eq!(message(&"H:x:1", b"f", NOW - DAY, NOW, 31 * DAY), None);
        let m = message(&"H:x:1", b"report", NOW + 365 * DAY, NOW, 31 * DAY).unwrap();
        assert!(
            m.starts_with(
                "future job H:x:1 (report) is due 2027-11-22T06:37:30Z, 365d ahead, beyond \
                 --future-horizon 31d"
            ),
            "{m}"
        );
        assert!(m.contains("0 = Monday"), "{m}");
        assert_eq!(short(12 * 3_600_000), "12h");
        assert_eq!(short(90_000), "1m");
    }
}
