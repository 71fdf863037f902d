//! `gearwheel --help` and every subcommand's `--help`, from the real binary: each fits an
//! 80-column terminal and ends by naming the man page and the document to read, both of
//! which exist in the repository.

use crate::support;

use std::path::Path;

use support::*;

fn help(args: &[&str]) -> String {
    let mut a = args.to_vec();
    a.push("--help");
    let out = gw(&a, None, 10);
    assert_eq!(out.code(), Some(0), "gearwheel {a:?}: {}", out.stderr);
    out.stdout
}

/// The subcommands the top-level help lists.
fn subcommands() -> Vec<String> {
    help(&[])
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.len() > 2 && !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn every_help_fits_80_columns_and_ends_with_where_to_read_more() {
    let subs = subcommands();
    assert!(subs.len() >= 5, "subcommands: {subs:?}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cases: Vec<Vec<&str>> = vec![vec![]];
    cases.extend(subs.iter().map(|s| vec![s.as_str()]));
    for args in cases {
        let text = help(&args);
        for line in text.lines() {
            assert!(
                line.chars().count() <= 80,
                "gearwheel {args:?} --help: a line of {} columns: {line:?}",
                line.chars().count()
            );
        }
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let more = last
            .strip_prefix("More: ")
            .and_then(|m| m.strip_suffix(" in the source."))
            .unwrap_or_else(|| panic!("gearwheel {args:?} --help ends with {last:?}"));
        let (man, doc) = more.split_once(", and ").expect("a man page and a doc");
        let (name, section) = man
            .strip_suffix(')')
            .and_then(|m| m.split_once('('))
            .unwrap_or_else(|| panic!("not a man page: {man:?}"));
        let page = format!("man/{name}.{section}");
        assert!(
            root.join(&page).is_file(),
            "{args:?}: {page} does not exist"
        );
        assert!(root.join(doc).is_file(), "{args:?}: {doc} does not exist");
    }
}

#[test]
fn the_serve_usage_line_wraps_between_its_flags() {
    let text = help(&["serve"]);
    let usage: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
    assert!(usage.len() > 5, "{usage:?}");
    for l in &usage[1..] {
        assert!(
            l.trim_start().starts_with('['),
            "split inside a flag: {l:?}"
        );
    }
}
