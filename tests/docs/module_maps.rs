//! The module maps: each folder of src/ with a mod.rs opens with a file -> "owns" map (the
//! `//! - `name`: what it owns` lines of its opening comment), and the map lists every module
//! in the folder (each .rs file and each subfolder with a mod.rs) and names none that is not
//! there. Pure file reading; no server.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Folders left out, with the reason.
const SKIPPED: &[(&str, &str)] = &[];

/// Every folder under src/ with a mod.rs, relative to src/. Folders named `tests` hold unit
/// tests named after the module they test, so their names are the map.
fn folders(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("readable folder")
        .map(|e| e.expect("readable entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.join("mod.rs").is_file() && p.file_name().is_some_and(|n| n != "tests") {
                out.push(p.strip_prefix(src()).expect("under src").to_path_buf());
            }
            folders(&p, out);
        }
    }
}

/// The modules of a folder: its .rs files but mod.rs, and its subfolders with a mod.rs.
fn modules(dir: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for e in std::fs::read_dir(dir).expect("readable folder") {
        let p = e.expect("readable entry").path();
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some(stem) = name.strip_suffix(".rs") {
            if stem != "mod" {
                names.insert(stem.to_string());
            }
        } else if p.join("mod.rs").is_file() {
            names.insert(name.to_string());
        }
    }
    names
}

/// The map of a mod.rs: the text of each item of its opening comment that starts with a
/// name (`//! - `name`...`), with the item's indented continuation lines.
fn map_items(mod_rs: &str) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    let mut in_item = false;
    for line in mod_rs.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            break;
        };
        let doc = doc.strip_prefix(' ').unwrap_or(doc);
        if let Some(item) = doc.strip_prefix("- ").filter(|i| i.starts_with('`')) {
            items.push(item.to_string());
            in_item = true;
        } else if in_item && doc.starts_with("  ") {
            let last = items.last_mut().expect("an item before its continuation");
            last.push(' ');
            last.push_str(doc.trim());
        } else {
            in_item = false;
        }
    }
    items
}

/// The names in backticks, a trailing `/` (a folder) taken off.
fn ticked(text: &str) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    let mut parts = text.split('`');
    parts.next();
    while let (Some(inside), Some(after)) = (parts.next(), parts.next()) {
        out.push((inside.trim_end_matches('/').to_string(), after));
    }
    out
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What is wrong with one folder's map.
fn problems(dir: &Path) -> Vec<String> {
    let mod_rs = std::fs::read_to_string(dir.join("mod.rs")).expect("readable mod.rs");
    let have = modules(dir);
    let items = map_items(&mod_rs);
    let mut named = BTreeSet::new();
    let mut out = Vec::new();
    for item in &items {
        for (i, (name, after)) in ticked(item).into_iter().enumerate() {
            named.insert(name.clone());
            // An entry of the map: the name an item starts with, or one followed by a colon.
            let entry = i == 0 || after.starts_with(':');
            if entry && is_ident(&name) && !have.contains(&name) {
                out.push(format!("names `{name}`, which is not a module here"));
            }
        }
    }
    for m in &have {
        if !named.contains(m) {
            out.push(format!("does not list `{m}`"));
        }
    }
    out
}

#[test]
fn every_folder_map_lists_its_files() {
    let mut dirs = Vec::new();
    folders(&src(), &mut dirs);
    assert!(dirs.iter().any(|d| d == Path::new("engine/schedules")));
    let mut wrong = Vec::new();
    for d in &dirs {
        let key = d.to_str().expect("UTF-8 path");
        if SKIPPED.iter().any(|(s, _)| *s == key) {
            continue;
        }
        for p in problems(&src().join(d)) {
            wrong.push(format!("src/{key}/mod.rs {p}"));
        }
    }
    assert!(wrong.is_empty(), "module maps:\n{}", wrong.join("\n"));
}

#[test]
fn the_check_sees_a_missing_and_a_stale_entry() {
    let tmp = std::env::temp_dir().join(format!("gearwheel-module-maps-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("sub")).expect("temp folder");
    std::fs::write(tmp.join("sub/mod.rs"), "").expect("write");
    std::fs::write(tmp.join("a.rs"), "").expect("write");
    std::fs::write(tmp.join("b.rs"), "").expect("write");
    std::fs::write(tmp.join("c.rs"), "").expect("write");
    std::fs::write(
        tmp.join("mod.rs"),
        "//! Owns it all.\n//!\n//! - `a`: one thing; `gone`: a file since removed.\n\
         //! - `sub/`: the\n//!   rest, with `b` named on a continuation line.\n",
    )
    .expect("write");
    let found = problems(&tmp);
    std::fs::remove_dir_all(&tmp).expect("clean up");
    assert_eq!(
        found,
        vec![
            "names `gone`, which is not a module here".to_string(),
            "does not list `c`".to_string(),
        ]
    );
}
