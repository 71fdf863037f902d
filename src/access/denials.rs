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

#[cfg(test)]
mod tests {
    use super::*;

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
