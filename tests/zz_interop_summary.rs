//! The one-line account of skipped interop tests at the end of `cargo test`.
//!
//! A test whose client is missing passes with a `SKIP:` line, but libtest hides what a passing
//! test prints, so a plain `cargo test` looked the same with every client or none. This file's
//! name starts with `zz` because cargo runs test targets in name order: its line comes after
//! every other test binary (only the doc tests follow). It writes to the stderr handle itself,
//! which libtest does not capture (it captures the print macros), so the line shows without
//! `--nocapture`. With GEARWHEEL_REQUIRE_INTEROP=1 (CI) a missing component fails here too,
//! all of them named at once.

mod support;

use std::io::Write;

use support::*;

#[test]
fn interop_skips_are_named() {
    let missing: Vec<&str> = COMPONENTS
        .iter()
        .filter(|(_, present)| !present())
        .map(|(what, _)| *what)
        .collect();
    let line = if missing.is_empty() {
        format!(
            "interop: all {} components installed, no interop test skipped",
            COMPONENTS.len()
        )
    } else {
        format!(
            "interop: SKIPPED the tests of {} of {} components, not installed: {} \
             (GEARWHEEL_REQUIRE_INTEROP=1 makes that a failure)",
            missing.len(),
            COMPONENTS.len(),
            missing.join("; ")
        )
    };
    let _ = writeln!(std::io::stderr(), "{line}");
    if std::env::var("GEARWHEEL_REQUIRE_INTEROP").as_deref() == Ok("1") {
        assert!(missing.is_empty(), "{line}");
    }
}

/// The string literals at the top level of the call that starts at `s` (just past its `(`).
fn call_literals(s: &str) -> Vec<String> {
    let (mut depth, mut out, mut chars) = (1, Vec::new(), s.chars());
    while let Some(c) = chars.next() {
        match c {
            '(' => depth += 1,
            ')' if depth == 1 => break,
            ')' => depth -= 1,
            '"' => {
                let mut lit = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => lit.extend(chars.next()),
                        '"' => break,
                        c => lit.push(c),
                    }
                }
                if depth == 1 {
                    out.push(lit);
                }
            }
            _ => {}
        }
    }
    out
}

/// Every `require(.., "what")` and `need("what")` in tests/ names a component of COMPONENTS,
/// so that the line above cannot leave out a skip.
#[test]
fn every_skippable_component_is_listed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = vec![];
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                files.push(e.unwrap().path());
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push(p);
        }
    }
    let mut seen = 0;
    for f in files
        .iter()
        .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "rs"))
    {
        let text = std::fs::read_to_string(f).unwrap();
        for call in ["require(", "need("] {
            for (i, _) in text.match_indices(call) {
                let before = &text[..i];
                let line = &before[before.rfind('\n').map_or(0, |n| n + 1)..];
                if line.contains("//")
                    || before.ends_with("fn ")
                    || before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '"')
                {
                    continue;
                }
                let lits = call_literals(&text[i + call.len()..]);
                // require's description is its last argument, need's its only one.
                let Some(what) = lits.last() else { continue };
                seen += 1;
                assert!(
                    COMPONENTS.iter().any(|(w, _)| w == what),
                    "{}: {what:?} is not in support::COMPONENTS",
                    f.display()
                );
            }
        }
    }
    assert!(seen >= COMPONENTS.len(), "only {seen} calls found");
}
