//! `@after ID[,ID...]`: an entry that runs when its parents have run, as the schedules file
//! says it (the parents, `when=`, `within=`) and the file-wide checks of the graph they make
//! (unknown ids, an entry after itself, cycles), each an error with line and column.

use std::collections::HashMap;

use super::cron::FieldError;
use super::file::{Entry, ScheduleError};

/// The parents named by `@after a,b`, in the order written, with where each is on its line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parents {
    pub ids: Vec<String>,
    /// Each id's byte offset in the timing text, then (once `place`d) its 1-based column
    /// on the line, for the graph's errors.
    at: Vec<usize>,
}

impl Parents {
    /// The list after `@after ` (`text` starts at byte `base` of the timing text).
    pub fn parse(text: &str, base: usize) -> Result<Parents, FieldError> {
        let mut ids: Vec<String> = Vec::new();
        let mut at = Vec::new();
        let mut offset = base;
        if text.is_empty() {
            return Err(FieldError {
                offset: base.saturating_sub(1),
                message: "@after needs the ids of the entries it follows: @after ID[,ID...]".into(),
            });
        }
        for id in text.split(',') {
            if id.is_empty() || id.contains(char::is_whitespace) {
                return Err(FieldError {
                    offset,
                    message: "@after ID[,ID...]: an empty id (ids are separated by commas, \
                              without spaces)"
                        .into(),
                });
            }
            if ids.iter().any(|p| p == id) {
                return Err(FieldError {
                    offset,
                    message: format!("@after names {id:?} twice"),
                });
            }
            ids.push(id.to_string());
            at.push(offset);
            offset += id.len() + 1;
        }
        Ok(Parents { ids, at })
    }

    /// Turn the offsets into columns of the line (the file's parser knows the line).
    pub fn place(&mut self, column: impl Fn(usize) -> usize) {
        for a in &mut self.at {
            *a = column(*a);
        }
    }

    fn column(&self, i: usize) -> usize {
        self.at.get(i).copied().unwrap_or(1)
    }
}

/// `when=`: which of a parent's runs count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum When {
    /// Only a run that completed (WORK_COMPLETE).
    #[default]
    Success,
    /// Any run that ended: complete, failed (for good, after its retries) or cancelled.
    Always,
}

/// The options of an `@after` entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AfterRule {
    pub when: When,
    /// `within=DURATION`: every parent must have run within this span of the first one's run
    /// of the set; otherwise the child's run is missed.
    pub within_ms: Option<u64>,
}

impl AfterRule {
    /// Whether a parent's run that ended so counts.
    pub fn counts(&self, ok: bool) -> bool {
        ok || self.when == When::Always
    }
}

/// The errors of a file's `@after` graph: a parent no entry has, an entry after itself, and
/// each cycle (named `a -> b -> a`, at the entry of the cycle that comes first in the file).
pub fn check_graph(entries: &[Entry]) -> Vec<ScheduleError> {
    let index: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let parents = |e: &Entry| match &e.timing {
        super::cron::Timing::After(p) => Some(p.clone()),
        _ => None,
    };
    let mut errors = Vec::new();
    let mut edges: Vec<Vec<(usize, usize)>> = vec![Vec::new(); entries.len()];
    for (i, e) in entries.iter().enumerate() {
        let Some(p) = parents(e) else { continue };
        for (k, id) in p.ids.iter().enumerate() {
            let err = |message: String| ScheduleError {
                line: e.line,
                column: p.column(k),
                message,
            };
            match index.get(id.as_str()) {
                Some(&j) if j == i => errors.push(err(format!(
                    "@after {id}: an entry cannot run after itself"
                ))),
                Some(&j) => edges[i].push((j, p.column(k))),
                None => errors.push(err(format!(
                    "@after {id}: no entry of this file has the id {id:?}"
                ))),
            }
        }
    }
    // Depth-first search; a back edge closes a cycle, reported once with its path.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut mark = vec![Mark::New; entries.len()];
    for root in 0..entries.len() {
        if mark[root] != Mark::New {
            continue;
        }
        // (node, next edge to try); `path` mirrors the stack's nodes.
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        mark[root] = Mark::OnPath;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let Some(&(child, column)) = edges[node].get(*next) else {
                mark[node] = Mark::Done;
                stack.pop();
                continue;
            };
            *next += 1;
            match mark[child] {
                Mark::New => {
                    mark[child] = Mark::OnPath;
                    stack.push((child, 0));
                }
                Mark::OnPath => {
                    let from = stack.iter().position(|&(n, _)| n == child).unwrap_or(0);
                    let mut names: Vec<&str> = stack[from..]
                        .iter()
                        .map(|&(n, _)| entries[n].id.as_str())
                        .collect();
                    names.push(entries[child].id.as_str());
                    errors.push(ScheduleError {
                        line: entries[node].line,
                        column,
                        message: format!("@after makes a cycle: {}", names.join(" -> ")),
                    });
                }
                Mark::Done => {}
            }
        }
    }
    errors.sort_by_key(|e| (e.line, e.column));
    errors
}

#[cfg(test)]
mod tests {
    use crate::schedule::Zone;
    use crate::schedule::file::parse;

    fn errs(text: &str) -> Vec<String> {
        match parse(text, &Zone::Utc) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn parents_when_and_within_parse() {
        let f = parse(
            "@daily a\n@daily b\n@after a,b  c  when=always within=1h -- {after}\n",
            &Zone::Utc,
        )
        .unwrap();
        let c = &f.entries[2];
        let crate::schedule::cron::Timing::After(p) = &c.timing else {
            panic!("{:?}", c.timing)
        };
        assert_eq!(p.ids, ["a", "b"]);
        assert_eq!(c.spec, "@after a,b");
        assert_eq!(c.after.when, super::When::Always);
        assert_eq!(c.after.within_ms, Some(3_600_000));
    }

    #[test]
    fn unknown_self_and_cycles_are_errors_with_their_columns() {
        assert_eq!(
            errs("@daily a\n@after a,zz b\n"),
            ["2:10: @after zz: no entry of this file has the id \"zz\""]
        );
        assert_eq!(
            errs("@after a a\n"),
            ["1:8: @after a: an entry cannot run after itself"]
        );
        assert_eq!(
            errs("@after b a\n@after a b\n"),
            ["2:8: @after makes a cycle: a -> b -> a"]
        );
        assert_eq!(
            errs("@daily x\n@after x,c a\n@after a b\n@after b c\n"),
            ["3:8: @after makes a cycle: a -> c -> b -> a"]
        );
        assert_eq!(
            errs("@after a,a b\n@daily a\n"),
            ["1:10: @after names \"a\" twice"]
        );
        assert_eq!(
            errs("@after  b\n"),
            [
                "1:10: a function name is missing (expected: @macro FUNCTION [key=value ...] [-- workload])"
            ]
        );
    }

    #[test]
    fn when_and_within_need_after_and_a_job() {
        let f = parse("@daily a when=always\n", &Zone::Utc).unwrap();
        assert_eq!(
            f.warnings[0].to_string(),
            "1:10: when= has no effect without @after"
        );
        assert_eq!(
            errs("@daily a\n@after a b expect=ping\n"),
            [
                "2:1: @after with expect=ping: a ping entry submits no job, so it has nothing to run after its parents"
            ]
        );
        assert_eq!(
            errs("@daily a\n@after a b within=0s\n"),
            ["2:19: within=\"0s\": a span of 0 would miss every run; leave it out"]
        );
    }
}
