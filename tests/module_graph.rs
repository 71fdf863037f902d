//! The layers stay layers: no module of src/ imports a module that imports it back, directly
//! or round a longer loop (ARCHITECTURE.md, 'Dependencies point one way', under the layers:
//! the loop rule is that paragraph's, not a numbered rule). A parent and its own children may name
//! each other (that is how Rust modules share a parent's types); two modules that are not one
//! inside the other may not. Two siblings that need the same types get them from a third
//! (as http/endpoint.rs holds the routes that http/route.rs and its sub-routers share).

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

/// The paths that follow `prefix` in `code`: `crate::engine::Outbox` gives `engine::Outbox`.
fn paths_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at + prefix.len()..];
        let end = tail
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            found.push(tail[..end].trim_end_matches(':'));
        }
        rest = &tail[end..];
    }
    found
}

/// The longest prefix of `parts` that is a module.
fn resolve(mods: &BTreeMap<String, String>, parts: &[&str]) -> Option<String> {
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| mods.contains_key(m))
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
