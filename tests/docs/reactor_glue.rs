//! The reactor's parts own their state and borrow only what they use: `impl Server` (the glue
//! that needs several parts at once, ARCHITECTURE.md under src/reactor) is written in the
//! loop's file and the request paths' only, and a part that was made free of it stays so.
//! Pure file reading; no server.

use std::path::{Path, PathBuf};

/// The files of src/reactor that may hold `impl Server`, relative to it.
const GLUE: &[&str] = &["mod.rs", "gearman.rs", "http/mod.rs"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable folder") {
        let p = e.expect("readable entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn impl_server_is_only_in_the_glue_files() {
    let reactor = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/reactor");
    let mut files = Vec::new();
    rust_files(&reactor, &mut files);
    let mut strays: Vec<String> = files
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).expect("readable file");
            text.lines()
                .any(|l| l.trim_start().starts_with("impl Server"))
        })
        .map(|p| {
            let rel = p.strip_prefix(&reactor).expect("under src/reactor");
            rel.to_string_lossy().replace('\\', "/")
        })
        .filter(|rel| !GLUE.contains(&rel.as_str()))
        .collect();
    strays.sort();
    assert!(
        strays.is_empty(),
        "`impl Server` outside the reactor's glue files {GLUE:?}: {strays:?}; \
         give the part a struct that borrows what it uses"
    );
}
