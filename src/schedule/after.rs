//! `@after ID[,ID...]`: an entry that runs when its parents have run, as the schedules file
//! says it (the parents, `when=`, `within=`) and the file-wide checks of the graph they make
//! (unknown ids, an entry after itself, cycles), each an error with line and column.

use std::collections::HashMap;

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
    /// An error is its offset in the timing text and its message.
    pub fn parse(text: &str, base: usize) -> Result<Parents, (usize, String)> {
        let mut ids: Vec<String> = Vec::new();
        let mut at = Vec::new();
        let mut offset = base;
        if text.is_empty() {
            return Err((
                base.saturating_sub(1),
                "@after needs the ids of the entries it follows: @after ID[,ID...]".into(),
            ));
        }
        for id in text.split(',') {
            if id.is_empty() || id.contains(char::is_whitespace) {
                return Err((
                    offset,
                    "@after ID[,ID...]: an empty id (ids are separated by commas, without \
                     spaces)"
                        .into(),
                ));
            }
            if ids.iter().any(|p| p == id) {
                return Err((offset, format!("@after names {id:?} twice")));
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

/// One entry of a file, as the graph sees it: its id, its line, and its parents if it is an
/// `@after` entry.
pub struct Node<'a> {
    pub id: &'a str,
    pub line: usize,
    pub parents: Option<&'a Parents>,
}

/// The errors of a file's `@after` graph, as (line, column, message): a parent no entry has,
/// an entry after itself, and each cycle (named `a -> b -> a`, at the edge that closes it).
pub fn check_graph(nodes: &[Node<'_>]) -> Vec<(usize, usize, String)> {
    let index: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    let mut errors = Vec::new();
    let mut edges: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        let Some(p) = n.parents else { continue };
        for (k, id) in p.ids.iter().enumerate() {
            let column = p.column(k);
            match index.get(id.as_str()) {
                Some(&j) if j == i => errors.push((
                    n.line,
                    column,
                    format!("@after {id}: an entry cannot run after itself"),
                )),
                Some(&j) => edges[i].push((j, column)),
                None => errors.push((
                    n.line,
                    column,
                    format!("@after {id}: no entry of this file has the id {id:?}"),
                )),
            }
        }
    }
    // Depth-first search; an edge back into the path closes a cycle, reported once.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut mark = vec![Mark::New; nodes.len()];
    for root in 0..nodes.len() {
        if mark[root] != Mark::New {
            continue;
        }
        // (node, next edge to try): the path from the root.
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
                    let mut names: Vec<&str> =
                        stack[from..].iter().map(|&(n, _)| nodes[n].id).collect();
                    names.push(nodes[child].id);
                    errors.push((
                        nodes[node].line,
                        column,
                        format!("@after makes a cycle: {}", names.join(" -> ")),
                    ));
                }
                Mark::Done => {}
            }
        }
    }
    errors.sort();
    errors
}
