//! The documentation's links: every relative link and anchor in README.md, ARCHITECTURE.md and
//! docs/*.md resolves, and the README's map names every file in docs/. Pure file reading; no
//! server, no network.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files this test covers, relative to the repository root.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md"), PathBuf::from("ARCHITECTURE.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("readable docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| {
            p.strip_prefix(root())
                .expect("under the root")
                .to_path_buf()
        })
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The lines outside fenced code blocks, with their line numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((n + 1, line));
        }
    }
    out
}

/// The line without its inline code spans, which may hold brackets that are not links.
fn strip_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let fence = "`".repeat(ticks);
        let after = &rest[start + ticks..];
        match after.find(&fence) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                rest = after;
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of inline links `[text](target)` on one line of prose.
fn link_targets(line: &str) -> Vec<String> {
    let line = strip_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let end = after.find(')').unwrap_or(after.len());
        // A title after the target (`[x](y "title")`) is not part of it.
        let target = after[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.to_string());
        rest = &after[end.min(after.len())..];
    }
    targets
}

/// GitHub's anchor for a heading: lower case, inline markup and punctuation dropped (except
/// `-` and `_`), spaces turned into `-`.
fn slug(heading: &str) -> String {
    // A link in a heading keeps only its text.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(i) = rest.find("](") {
        text.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        rest = &after[after.find(')').map_or(after.len(), |e| e + 1)..];
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a Markdown file defines, numbered as GitHub numbers repeated headings.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

fn read(rel: &Path) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{}: {e}", rel.display()))
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut anchor_cache: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        let text = read(&file);
        let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
        for (n, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let dest = if path.is_empty() {
                    file.clone()
                } else {
                    normalize(&dir.join(path))
                };
                if !root().join(&dest).exists() {
                    broken.push(format!("{}:{n}: {target}: no such file", file.display()));
                    continue;
                }
                if let Some(anchor) = anchor {
                    let list = anchor_cache
                        .entry(dest.clone())
                        .or_insert_with(|| anchors(&read(&dest)));
                    if !list.iter().any(|a| a == anchor) {
                        broken.push(format!(
                            "{}:{n}: {target}: no heading with anchor #{anchor} in {}",
                            file.display(),
                            dest.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} relative links found: is the parser broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `a/../b` to `b`, so that a link out of docs/ names a path under the root.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                assert!(out.pop(), "{} leaves the repository", p.display());
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn the_readme_maps_every_doc() {
    let readme = read(Path::new("README.md"));
    let linked: Vec<String> = prose_lines(&readme)
        .into_iter()
        .flat_map(|(_, l)| link_targets(l))
        .collect();
    for file in doc_files().into_iter().skip(2) {
        let name = file.to_string_lossy().into_owned();
        assert!(
            linked.iter().any(|t| t == &name),
            "README.md's map of docs/ does not link {name}"
        );
    }
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug(" Daemon mode and `-u`"), "daemon-mode-and--u");
    assert_eq!(
        slug(" `gearwheel work`: any command as a worker"),
        "gearwheel-work-any-command-as-a-worker"
    );
    assert_eq!(
        slug(" Why 127.0.0.1 and not all interfaces"),
        "why-127001-and-not-all-interfaces"
    );
    assert_eq!(
        slug(" Differences from gearmand's HTTP plugin"),
        "differences-from-gearmands-http-plugin"
    );
    assert_eq!(
        slug(" See [the journal](journal.md) now"),
        "see-the-journal-now"
    );
    assert_eq!(
        anchors("# A\n## A\n```\n# not a heading\n```\n## A\n"),
        ["a", "a-1", "a-2"]
    );
    assert_eq!(
        link_targets("a [x](y.md#z) `[not](a link)` [w](v \"t\")"),
        ["y.md#z", "v"]
    );
}
