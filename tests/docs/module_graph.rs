//! The layers stay layers: no module of src/ imports a module that imports it back, directly
//! or round a longer loop (ARCHITECTURE.md, 'Dependencies point one way', under the layers:
//! the loop rule is that paragraph's, not a numbered rule). A parent and its own children may name
//! each other (that is how Rust modules share a parent's types); two modules that are not one
//! inside the other may not. Two siblings that need the same types get them from a third
//! (as http/endpoint.rs holds the routes that http/route.rs and its sub-routers share).
//! A name a module re-exports (`pub use`) counts as its defining module's: importing
//! `crate::config::EtcdTls` when config.rs re-exports it from a child depends on that child.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Every module of src/ by its path (`reactor::conn`), with its source minus comments and
/// its inline `#[cfg(test)] mod tests`. Test-only modules in their own files are left out.
fn modules() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&root).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            let name = parts.join("::");
            if name == "lib" || name == "main" || name.ends_with("tests") {
                continue;
            }
            out.insert(name, strip(&fs::read_to_string(&path).unwrap()));
        }
    }
    out
}

/// The source without `//` comments and without an inline test module (always a file's
/// last item here).
fn strip(src: &str) -> String {
    let code: Vec<&str> = src.lines().map(|l| l.split("//").next().unwrap()).collect();
    let code = code.join("\n");
    match code.find("#[cfg(test)]\nmod tests") {
        Some(at) => code[..at].to_string(),
        None => code,
    }
}

/// The paths that follow `prefix` in `code`: `crate::engine::Outbox` gives `engine::Outbox`,
/// and a group is spread: `crate::config::{A, b::C}` gives `config::A` and `config::b::C`.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at + prefix.len()..];
        let end = path_end(tail);
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            found.extend(use_tree(&tail[..end]).into_iter().map(|(_, p)| p));
        }
        rest = &tail[end..];
    }
    found
}

/// Where a path (or a use tree: `a::{b, c::{d, e as f}}`) that starts `s` ends.
fn path_end(s: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            c if c.is_alphanumeric() || c == '_' || c == ':' => {}
            ' ' | '\n' | ',' if depth > 0 => {}
            _ => return i,
        }
    }
    s.len()
}

/// A use tree's leaves: (the name it brings in, its path). `a::{b, c as d, self}` gives
/// (b, a::b), (d, a::c), (a, a).
fn use_tree(tree: &str) -> Vec<(String, String)> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree.trim().trim_end_matches(':');
    let Some(open) = tree.find('{') else {
        let (path, alias) = match tree.split_once(" as ") {
            Some((p, a)) => (p.trim(), Some(a.trim())),
            None => (tree, None),
        };
        let path = path.trim_end_matches(':');
        let name = alias.unwrap_or_else(|| path.rsplit("::").next().unwrap_or(path));
        return vec![(name.to_string(), path.to_string())];
    };
    let base = tree[..open].trim_end_matches(':');
    let inner = tree[open + 1..].trim_end_matches('}');
    let mut out = Vec::new();
    let (mut depth, mut from) = (0usize, 0);
    let mut items = Vec::new();
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&inner[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[from..]);
    for item in items.into_iter().map(str::trim).filter(|i| !i.is_empty()) {
        if item == "self" {
            let name = base.rsplit("::").next().unwrap_or(base);
            out.push((name.to_string(), base.to_string()));
            continue;
        }
        for (name, path) in use_tree(item) {
            out.push((name, format!("{base}::{path}")));
        }
    }
    out
}

/// The names module `m` re-exports (`pub use`, also `pub(crate)` and `pub(super)`), with
/// the full paths (from the crate root) of what they name. A path that does not start at the
/// crate, `self`, `super` or a child module is another crate's and left out.
fn reexports(mods: &BTreeMap<String, String>, m: &str) -> Vec<(String, Vec<String>)> {
    let code = &mods[m];
    let here: Vec<&str> = m.split("::").collect();
    let mut out = Vec::new();
    for kw in ["pub use ", "pub(crate) use ", "pub(super) use "] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(kw) {
            let tail = &rest[at + kw.len()..];
            let end = tail.find(';').unwrap_or(tail.len());
            for (name, path) in use_tree(&tail[..end]) {
                let mut parts: Vec<String> = Vec::new();
                let mut segs = path.split("::").peekable();
                match segs.peek().copied() {
                    Some("crate") => {
                        segs.next();
                    }
                    Some("self") => {
                        segs.next();
                        parts.extend(here.iter().map(|s| s.to_string()));
                    }
                    Some("super") => {
                        parts.extend(here.iter().map(|s| s.to_string()));
                        while segs.next_if_eq(&"super").is_some() {
                            parts.pop();
                        }
                    }
                    Some(child) if mods.contains_key(&format!("{m}::{child}")) => {
                        parts.extend(here.iter().map(|s| s.to_string()));
                    }
                    _ => continue,
                }
                parts.extend(segs.map(str::to_string));
                out.push((name, parts));
            }
            rest = &tail[end..];
        }
    }
    out
}

/// The module that defines what `parts` names: the longest prefix that is a module, or, when
/// the name after it is that module's `pub use`, the module it comes from (followed on:
/// `crate::config::EtcdTls` is config/cluster.rs's when config.rs re-exports it from there).
fn resolve(mods: &BTreeMap<String, String>, parts: &[&str]) -> Option<String> {
    let mut parts: Vec<String> = parts.iter().map(|s| s.to_string()).collect();
    for _ in 0..16 {
        let n = (1..=parts.len())
            .rev()
            .find(|&n| mods.contains_key(&parts[..n].join("::")))?;
        let m = parts[..n].join("::");
        let Some(name) = parts.get(n) else {
            return Some(m);
        };
        let Some((_, to)) = reexports(mods, &m).into_iter().find(|(r, _)| r == name) else {
            return Some(m);
        };
        let rest = parts[n + 1..].to_vec();
        parts = to;
        parts.extend(rest);
    }
    None
}

fn nested(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"))
}

/// Module -> the modules it names, leaving out its ancestors and descendants.
fn imports(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges = BTreeMap::new();
    for (name, code) in mods {
        let here: Vec<&str> = name.split("::").collect();
        let parent = &here[..here.len() - 1];
        let mut targets = BTreeSet::new();
        for p in paths_after(code, "crate::") {
            let parts: Vec<&str> = p.split("::").collect();
            targets.extend(resolve(mods, &parts));
        }
        for p in paths_after(code, "super::") {
            let mut parts = parent.to_vec();
            parts.extend(p.split("::"));
            targets.extend(resolve(mods, &parts));
        }
        targets.retain(|t| !nested(name, t));
        edges.insert(name.clone(), targets);
    }
    edges
}

/// The modules reachable from `from`.
fn reachable(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(m) = todo.pop() {
        for t in edges.get(&m).into_iter().flatten() {
            if seen.insert(t.clone()) {
                todo.push(t.clone());
            }
        }
    }
    seen
}

#[test]
fn no_module_imports_its_importer() {
    let mods = modules();
    assert!(mods.contains_key("reactor::conn") && mods.contains_key("engine"));
    let edges = imports(&mods);
    let mut loops = Vec::new();
    for (name, targets) in &edges {
        for t in targets {
            if reachable(&edges, t).contains(name) {
                loops.push(format!("{name} -> {t} -> ... -> {name}"));
            }
        }
    }
    assert!(
        loops.is_empty(),
        "modules that import their importer:\n{}",
        loops.join("\n")
    );
}

#[test]
fn the_finder_sees_a_loop_it_is_shown() {
    let mut mods = BTreeMap::new();
    mods.insert("a::x".to_string(), "use super::y::Thing;".to_string());
    mods.insert(
        "a::y".to_string(),
        "fn f() { crate::a::x::g() }".to_string(),
    );
    mods.insert(
        "a".to_string(),
        "use self::x::Other; use crate::b;".to_string(),
    );
    mods.insert(
        "b".to_string(),
        "// crate::a::x is only a comment here".to_string(),
    );
    let mods: BTreeMap<String, String> = mods.into_iter().map(|(k, v)| (k, strip(&v))).collect();
    let edges = imports(&mods);
    assert_eq!(edges["a::x"], BTreeSet::from(["a::y".to_string()]));
    assert!(reachable(&edges, "a::y").contains("a::y"));
    assert!(edges["b"].is_empty(), "comments are not imports");
    assert!(edges["a"].contains("b") && !edges["a"].contains("a::x"));
}

#[test]
fn the_finder_follows_pub_use_to_where_a_name_is_defined() {
    // The loop this test was blind to: client/etcd.rs named `crate::config::EtcdTls`, which
    // config.rs re-exported from config/cluster.rs, which called back into client::etcd.
    // The edge to `config` alone closed no loop (a parent and its child are one).
    let mut mods = BTreeMap::new();
    mods.insert(
        "config".to_string(),
        "mod cluster;\npub use cluster::{ClusterConfig, EtcdTls as Files, etcd_tls};".to_string(),
    );
    mods.insert(
        "config::cluster".to_string(),
        "pub struct EtcdTls; fn f() { crate::client::etcd::client_tls() }".to_string(),
    );
    mods.insert("client".to_string(), "pub mod etcd;".to_string());
    mods.insert(
        "client::etcd".to_string(),
        "use crate::config::{Files, Other};\nuse crate::tls::{self, X};".to_string(),
    );
    mods.insert("tls".to_string(), "pub use crate::client::Y;".to_string());
    let mods: BTreeMap<String, String> = mods.into_iter().map(|(k, v)| (k, strip(&v))).collect();
    let edges = imports(&mods);
    assert_eq!(
        edges["client::etcd"],
        BTreeSet::from(["config".into(), "config::cluster".into(), "tls".into()]),
        "a re-exported name is its defining module's; another name stays the parent's"
    );
    assert!(reachable(&edges, "client::etcd").contains("client::etcd"));
    assert_eq!(
        reexports(&mods, "tls"),
        [("Y".to_string(), vec!["client".to_string(), "Y".to_string()])]
    );
}
