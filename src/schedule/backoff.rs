//! Retries with backoff: `retry=N backoff=DURATION[..MAX]` on a schedule entry, `retry
//! FUNCTION N BACKOFF[..MAX]` and `--retry N --retry-backoff ...` for a function. The delay
//! before retry k is DURATION doubled k-1 times, capped at MAX (1h unless given). Pure.

use super::duration::parse_duration;
use super::duration::show_duration as show;

/// MAX when `backoff=` names none.
pub const DEFAULT_MAX_MS: u64 = 3_600_000;
/// DURATION when only `retry=` is given.
pub const DEFAULT_BASE_MS: u64 = 30_000;
/// The most retries one job may have: a bound, so a typo cannot retry forever.
pub const MAX_RETRIES: u32 = 1000;

/// How long to wait before each retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub base_ms: u64,
    pub max_ms: u64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base_ms: DEFAULT_BASE_MS,
            max_ms: DEFAULT_MAX_MS,
        }
    }
}

impl Backoff {
    /// `30s` or `30s..10m`. MAX below DURATION is an error, as is a zero DURATION (a retry
    /// at once would hammer a failing worker).
    pub fn parse(s: &str) -> Result<Backoff, String> {
        let (base, max) = match s.split_once("..") {
            Some((b, m)) => (b, Some(m)),
            None => (s, None),
        };
        let base_ms = parse_duration(base)?;
        if base_ms == 0 {
            return Err(format!("{s:?}: the first backoff must be longer than 0"));
        }
        let max_ms = match max {
            Some(m) => parse_duration(m)?,
            None => DEFAULT_MAX_MS.max(base_ms),
        };
        if max_ms < base_ms {
            return Err(format!(
                "{s:?}: the cap after `..` is shorter than the first backoff"
            ));
        }
        Ok(Backoff { base_ms, max_ms })
    }

    /// The wait before retry `k` (1 for the first): base * 2^(k-1), capped at max.
    pub fn delay_ms(&self, k: u32) -> u64 {
        let doublings = k.saturating_sub(1).min(63);
        self.base_ms
            .checked_mul(1u64 << doublings)
            .map_or(self.max_ms, |d| d.min(self.max_ms))
    }

    /// As written back: `30s..10m`.
    pub fn text(&self) -> String {
        format!("{}..{}", show(self.base_ms), show(self.max_ms))
    }
}

/// How often a failed job is queued again, and when.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: none, as gearmand).
    pub retries: u32,
    pub backoff: Backoff,
}

/// A retry count: 0 to `MAX_RETRIES`.
pub fn parse_retries(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n <= MAX_RETRIES => Ok(n),
        _ => Err(format!(
            "{s:?}: use a number of retries from 0 to {MAX_RETRIES}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_from_the_first_delay_up_to_the_cap() {
        let b = Backoff::parse("30s..10m").unwrap();
        let d: Vec<u64> = (1..=7).map(|k| b.delay_ms(k) / 1000).collect();
        assert_eq!(d, [30, 60, 120, 240, 480, 600, 600]);
        // Huge retry numbers neither overflow nor pass the cap.
        assert_eq!(b.delay_ms(64), 600_000);
        assert_eq!(b.delay_ms(u32::MAX), 600_000);
        assert_eq!(b.text(), "30s..10m");
    }

    #[test]
    fn the_cap_defaults_to_an_hour() {
        let b = Backoff::parse("1m").unwrap();
        assert_eq!(b.max_ms, 3_600_000);
        assert_eq!(b.delay_ms(7), 3_600_000);
        assert_eq!(b.delay_ms(6), 32 * 60_000);
        // A first delay above an hour is its own cap.
        assert_eq!(Backoff::parse("2h").unwrap().delay_ms(3), 7_200_000);
    }

    #[test]
    fn bad_backoffs_and_counts_are_refused() {
        for bad in ["", "0s", "10m..1m", "30", "30s..", "..1m", "x"] {
            assert!(Backoff::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_retries("3"), Ok(3));
        assert!(parse_retries("-1").is_err());
        assert!(parse_retries("1001").is_err());
    }
}
