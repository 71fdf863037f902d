//! How an unreachable etcd is told in the log: one ERROR when the first attempt fails, one
//! summary a minute while it lasts (how long, how many attempts), a NOTICE when etcd answers
//! again; the failed attempts in between are DEBUG. Pure: the machine feeds it its monotonic
//! `now` and logs what it says.

/// How often an outage that goes on is summed up.
pub const SUMMARY_EVERY_MS: u64 = 60_000;

/// A line to log, at its level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Say {
    Error(String),
    Notice(String),
    Debug(String),
}

impl Say {
    pub fn log(self) {
        match self {
            Say::Error(s) => log::error!("{s}"),
            Say::Notice(s) => crate::notice!("{s}"),
            Say::Debug(s) => log::debug!("{s}"),
        }
    }
}

struct Spell {
    since: u64,
    attempts: u64,
    next_summary: u64,
    last_why: String,
}

/// The current outage, if etcd is unreachable.
#[derive(Default)]
pub struct Outage {
    spell: Option<Spell>,
}

impl Outage {
    /// An attempt to reach etcd failed (a connect refused or timed out, a request unanswered).
    pub fn failed(&mut self, now: u64, why: &str) -> Say {
        match &mut self.spell {
            Some(s) => {
                s.attempts += 1;
                s.last_why = why.to_string();
                Say::Debug(format!("cluster: etcd is still unreachable: {why}"))
            }
            None => {
                self.spell = Some(Spell {
                    since: now,
                    attempts: 1,
                    next_summary: now + SUMMARY_EVERY_MS,
                    last_why: why.to_string(),
                });
                Say::Error(format!(
                    "cluster: etcd is unreachable: {why}; retrying (a summary every minute while it lasts)"
                ))
            }
        }
    }

    /// etcd answered: the end of an outage, if there was one.
    pub fn answered(&mut self, now: u64) -> Option<Say> {
        let s = self.spell.take()?;
        Some(Say::Notice(format!(
            "cluster: etcd is reachable again after {} ({} failed)",
            secs(now.saturating_sub(s.since)),
            crate::plural::count(s.attempts, "attempt", "attempts")
        )))
    }

    /// The summary line, once a minute while the outage lasts.
    pub fn tick(&mut self, now: u64) -> Option<Say> {
        let s = self.spell.as_mut()?;
        if now < s.next_summary {
            return None;
        }
        s.next_summary = now + SUMMARY_EVERY_MS;
        Some(Say::Error(format!(
            "cluster: etcd has been unreachable for {} ({} failed; the last: {})",
            secs(now.saturating_sub(s.since)),
            crate::plural::count(s.attempts, "attempt", "attempts"),
            s.last_why
        )))
    }

    /// When the next summary is due, during an outage.
    pub fn next_summary(&self) -> Option<u64> {
        self.spell.as_ref().map(|s| s.next_summary)
    }
}

fn secs(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, ms % 1000 / 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_error_a_summary_a_minute_and_a_notice_when_it_is_back() {
        let mut o = Outage::default();
        assert_eq!(o.answered(5), None, "no outage, nothing to say");
        assert!(
            matches!(o.failed(1_000, "connection refused"), Say::Error(s)
            if s.contains("etcd is unreachable: connection refused"))
        );
        assert_eq!(o.next_summary(), Some(61_000));
        for t in 1..=59 {
            assert!(matches!(
                o.failed(1_000 + t * 1_000, "refused"),
                Say::Debug(_)
            ));
            assert_eq!(o.tick(1_000 + t * 1_000), None);
        }
        assert_eq!(
            o.tick(61_000),
            Some(Say::Error(
                "cluster: etcd has been unreachable for 60.0 s (60 attempts failed; the last: refused)"
                    .into()
            ))
        );
        assert_eq!(o.tick(61_001), None, "one summary a minute");
        assert_eq!(o.next_summary(), Some(121_000));
        assert!(o.tick(121_000).is_some());
        assert_eq!(
            o.answered(125_500),
            Some(Say::Notice(
                "cluster: etcd is reachable again after 124.5 s (60 attempts failed)".into()
            ))
        );
        assert_eq!(o.next_summary(), None);
        assert_eq!(o.tick(200_000), None);
        assert!(
            matches!(o.failed(300_000, "timeout"), Say::Error(_)),
            "a new outage is an ERROR again"
        );
    }
}
