//! One function's gate: its settings (`limit`, `rate`, `pause function`, `expire`) and what
//! they count (the handouts of the rate's window), asked at each handout whether the next job
//! may go. Pure: time is passed in, nothing here knows the engine.

use std::collections::VecDeque;

/// `rate FUNCTION N/DURATION`: at most `count` handouts in any window of `window_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub count: u32,
    pub window_ms: u64,
}

impl Rate {
    /// `N/DURATION`, N from 1, DURATION above 0 (`500ms`, `1s`, `1m`). The gate keeps the time
    /// of each of the last N handouts, so the engine bounds N (`--max-rate-count`).
    pub fn parse(text: &str) -> Result<Rate, String> {
        let (n, d) = text
            .split_once('/')
            .ok_or_else(|| format!("a rate is N/DURATION such as 100/1m, not {text:?}"))?;
        let count = match n.parse::<u32>() {
            Ok(c) if c >= 1 && !n.starts_with('+') => c,
            _ => return Err(format!("N is a number of jobs above 0, not {n:?}")),
        };
        match parse_window(d) {
            Ok(ms) if ms > 0 => Ok(Rate {
                count,
                window_ms: ms,
            }),
            _ => Err(format!("a duration such as 1s or 1m, not {d:?}")),
        }
    }

    /// As `rate` takes it back: `N/MSms`.
    pub fn text(self) -> String {
        format!("{}/{}ms", self.count, self.window_ms)
    }
}

/// A duration as the schedules file writes one (`1s`, `1m`), or whole milliseconds (`500ms`):
/// a rate's window is often under a second.
pub fn parse_window(text: &str) -> Result<u64, String> {
    match text.strip_suffix("ms") {
        Some(n) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
            n.parse().map_err(|_| format!("{text:?} is too long"))
        }
        _ => crate::schedule::duration::parse_duration(text),
    }
}

/// Why a gate holds a function's jobs back (the `reason` of the held metric).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    Paused,
    /// `limit`: as many jobs run as the cap allows.
    Limit,
    /// `rate`: the window is full until this time.
    Rate(u64),
}

impl Hold {
    pub fn reason(self) -> &'static str {
        match self {
            Hold::Paused => "paused",
            Hold::Limit => "limit",
            Hold::Rate(_) => "rate",
        }
    }
}

/// The settings a function may have; all `None`/false is no setting at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub limit: Option<u32>,
    pub rate: Option<Rate>,
    pub paused: bool,
    pub expire_ms: Option<u64>,
}

impl Settings {
    pub fn is_empty(&self) -> bool {
        *self == Settings::default()
    }
}

/// A function's settings and their state.
#[derive(Debug, Default)]
pub struct Gate {
    pub settings: Settings,
    /// The times of the last handouts, oldest first, at most the rate's count (empty without
    /// a rate).
    handouts: VecDeque<u64>,
    /// When `expire` was set (or read back): a job with no submission time counts from here.
    pub expire_since_ms: u64,
    /// Times the gate closed, by reason (paused, limit, rate), for `/metrics`.
    pub holds: [u64; 3],
    /// The rate's reopening in the engine's timer wheel, while one is armed.
    pub timer: Option<crate::timer::TimerKey>,
}

impl Gate {
    /// Whether the next job may be handed out at `now` with `running` jobs running; if not,
    /// why (the first reason found: a pause, then the cap, then the rate).
    pub fn check(&self, running: u32, now: u64) -> Option<Hold> {
        let s = &self.settings;
        if s.paused {
            return Some(Hold::Paused);
        }
        if s.limit.is_some_and(|n| running >= n) {
            return Some(Hold::Limit);
        }
        let rate = s.rate?;
        if self.handouts.len() < rate.count as usize {
            return None;
        }
        let reopens = self.handouts.front()?.saturating_add(rate.window_ms);
        (now < reopens).then_some(Hold::Rate(reopens))
    }

    /// A job was handed out at `now`.
    pub fn handed_out(&mut self, now: u64) {
        let Some(rate) = self.settings.rate else {
            return;
        };
        while self.handouts.len() >= rate.count as usize {
            self.handouts.pop_front();
        }
        self.handouts.push_back(now);
    }

    /// Handouts in the window that ends at `now` (`show limits`' WINDOW).
    pub fn window_use(&self, now: u64) -> usize {
        let Some(rate) = self.settings.rate else {
            return 0;
        };
        let start = now.saturating_sub(rate.window_ms);
        self.handouts.iter().filter(|&&t| t > start).count()
    }

    /// A new rate (or none): handouts already made count against it, the newest first.
    pub fn set_rate(&mut self, rate: Option<Rate>) {
        self.settings.rate = rate;
        let keep = rate.map_or(0, |r| r.count as usize);
        while self.handouts.len() > keep {
            self.handouts.pop_front();
        }
        if self.handouts.capacity() > 4 * keep.max(4) {
            self.handouts.shrink_to_fit();
        }
    }

    /// Count a close of the gate for `hold`.
    pub fn count_hold(&mut self, hold: Hold) {
        let i = match hold {
            Hold::Paused => 0,
            Hold::Limit => 1,
            Hold::Rate(_) => 2,
        };
        self.holds[i] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(s: Settings) -> Gate {
        Gate {
            settings: s,
            ..Gate::default()
        }
    }

    #[test]
    fn rate_parses_and_refuses() {
        assert_eq!(
            Rate::parse("100/1m"),
            Ok(Rate {
                count: 100,
                window_ms: 60_000
            })
        );
        assert_eq!(Rate::parse("5/500ms").map(|r| r.window_ms), Ok(500));
        for bad in [
            "100",
            "0/1s",
            "4294967296/1s",
            "+1/1s",
            "1/0s",
            "1/x",
            "/1s",
            "-1/1s",
        ] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn no_setting_never_holds() {
        let g = gate(Settings::default());
        assert_eq!(g.check(u32::MAX, 0), None);
    }

    #[test]
    fn limit_holds_at_the_cap() {
        let g = gate(Settings {
            limit: Some(2),
            ..Settings::default()
        });
        assert_eq!(g.check(1, 0), None);
        assert_eq!(g.check(2, 0), Some(Hold::Limit));
        assert_eq!(g.check(3, 0), Some(Hold::Limit));
    }

    #[test]
    fn pause_comes_first() {
        let g = gate(Settings {
            paused: true,
            limit: Some(1),
            ..Settings::default()
        });
        assert_eq!(g.check(5, 0), Some(Hold::Paused));
    }

    /// A sliding window: never more than N in any window, wherever it starts; a bucket that
    /// starts full would let 2N-1 through around a window's edge.
    #[test]
    fn rate_is_a_sliding_window() {
        let rate = Rate {
            count: 3,
            window_ms: 1000,
        };
        let mut g = gate(Settings {
            rate: Some(rate),
            ..Settings::default()
        });
        let mut given = Vec::new();
        // A worker asks every 10 ms for 5 s.
        for now in (0..5000).step_by(10) {
            if g.check(0, now).is_none() {
                g.handed_out(now);
                given.push(now);
            }
        }
        for (i, &t) in given.iter().enumerate() {
            let in_window = given[i..].iter().take_while(|&&u| u < t + 1000).count();
            assert!(in_window <= 3, "{in_window} handouts from {t}: {given:?}");
        }
        assert_eq!(&given[..6], &[0, 10, 20, 1000, 1010, 1020]);
        assert_eq!(g.check(0, 4020), Some(Hold::Rate(5000)));
        assert_eq!(g.window_use(4500), 3);
        assert_eq!(g.window_use(5005), 2);
    }

    #[test]
    fn a_lower_rate_keeps_the_newest_handouts() {
        let mut g = gate(Settings {
            rate: Some(Rate {
                count: 5,
                window_ms: 1000,
            }),
            ..Settings::default()
        });
        for t in [0, 100, 200, 300] {
            g.handed_out(t);
        }
        g.set_rate(Some(Rate {
            count: 2,
            window_ms: 1000,
        }));
        assert_eq!(g.check(0, 500), Some(Hold::Rate(1200)));
        assert_eq!(g.check(0, 1200), None);
        g.set_rate(None);
        assert_eq!(g.check(0, 500), None);
        assert_eq!(g.window_use(500), 0);
    }
}
