//! Denials counted for `/metrics` by identity and operation. Identities come from peers
//! (addresses, certificate names), so the number counted by name is capped
//! (`--acl-metric-identities`); denials of identities past the cap count as `other`, and a
//! name is cut short so that one label cannot be large.

use std::collections::BTreeMap;

/// The longest identity label kept, in bytes.
const LABEL_MAX: usize = 100;
/// The label of identities past the cap.
pub const OTHER: &str = "other";

#[derive(Debug, Default)]
pub struct DenialCounts {
    cap: usize,
    /// (identity, operation) -> denials.
    counts: BTreeMap<(String, &'static str), u64>,
    /// Identities counted by name so far (at most `cap`).
    named: usize,
}

impl DenialCounts {
    pub fn new(cap: usize) -> DenialCounts {
        DenialCounts {
            cap,
            ..DenialCounts::default()
        }
    }

    /// Count one denial of `operation` to `identity` (as shown, `addr:10.0.0.5`).
    pub fn count(&mut self, identity: &str, operation: &'static str) {
        let mut label = identity;
        if label.len() > LABEL_MAX {
            let mut end = LABEL_MAX;
            while !label.is_char_boundary(end) {
                end -= 1;
            }
            label = &label[..end];
        }
        let known = self.counts.keys().any(|(i, _)| i == label);
        if !known {
            if self.named >= self.cap {
                label = OTHER;
            } else {
                self.named += 1;
            }
        }
        *self
            .counts
            .entry((label.to_string(), operation))
            .or_default() += 1;
    }

    /// (identity, operation, denials), sorted.
    pub fn rows(&self) -> Vec<(String, &'static str, u64)> {
        self.counts
            .iter()
            .map(|((i, o), n)| (i.clone(), *o, *n))
            .collect()
    }
}

/// The denial lines the whole server may log per second, so that a flood of connections,
/// each under its own per-connection cap, cannot fill the log either
/// (`--acl-denials-logged-per-second`). The lines held back are counted and said in one line
/// with the next second's first.
#[derive(Debug, Default)]
pub struct LogWindow {
    max: u32,
    second: u64,
    logged: u32,
    held: u64,
}

impl LogWindow {
    pub fn new(max: u32) -> LogWindow {
        LogWindow {
            max,
            ..LogWindow::default()
        }
    }

    /// May a denial line be logged at `now_ms`? `Some(n)`: yes, and `n` lines held back in the
    /// seconds before are to be said first (0: none); `None`: no, it is counted.
    pub fn admit(&mut self, now_ms: u64) -> Option<u64> {
        let second = now_ms / 1000;
        if second != self.second {
            self.second = second;
            self.logged = 0;
        }
        if self.logged >= self.max {
            self.held += 1;
            return None;
        }
        self.logged += 1;
        Some(std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_window_holds_back_past_its_rate_and_says_how_many() {
        let mut w = LogWindow::new(2);
        assert_eq!(w.admit(5_000), Some(0));
        assert_eq!(w.admit(5_100), Some(0));
        assert_eq!(w.admit(5_200), None);
        assert_eq!(w.admit(5_999), None);
        assert_eq!(w.admit(6_000), Some(2));
        assert_eq!(w.admit(6_001), Some(0));
        assert_eq!(w.admit(6_002), None);
        assert_eq!(w.admit(9_000), Some(1));
    }

    #[test]
    fn identities_past_the_cap_count_as_other() {
        let mut d = DenialCounts::new(2);
        d.count("addr:10.0.0.1", "submit");
        d.count("addr:10.0.0.1", "work");
        d.count("addr:10.0.0.2", "submit");
        d.count("addr:10.0.0.3", "submit");
        d.count("addr:10.0.0.4", "submit");
        d.count("addr:10.0.0.1", "submit");
        assert_eq!(
            d.rows(),
            vec![
                ("addr:10.0.0.1".to_string(), "submit", 2),
                ("addr:10.0.0.1".to_string(), "work", 1),
                ("addr:10.0.0.2".to_string(), "submit", 1),
                ("other".to_string(), "submit", 2),
            ]
        );
    }

    #[test]
    fn a_long_name_is_cut_short() {
        let mut d = DenialCounts::new(5);
        let long = format!("cn:{}", "é".repeat(100));
        d.count(&long, "admin");
        let rows = d.rows();
        assert!(rows[0].0.len() <= LABEL_MAX);
        assert!(long.starts_with(&rows[0].0));
    }
}
