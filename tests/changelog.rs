//! The Debian package's changelog (packaging/debian/changelog) is made from CHANGELOG.md, so
//! that the two cannot disagree: this test makes it again and fails when the file differs
//! (`GEARWHEEL_BLESS=1 cargo test --test changelog` rewrites it). It also checks that the
//! newest release in CHANGELOG.md is the version Cargo.toml builds.

use std::path::PathBuf;

use chrono::NaiveDate;

/// One released version of CHANGELOG.md: `## 0.2.0 (2026-11-28)`, its summary line and its
/// bullets (continuation lines joined).
struct Release {
    version: String,
    date: NaiveDate,
    items: Vec<String>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The released versions, newest first; `## Unreleased` is not a release and is left out.
fn releases(md: &str) -> Vec<Release> {
    let mut out: Vec<Release> = Vec::new();
    let mut inside = false;
    for line in md.lines() {
        if let Some(head) = line.strip_prefix("## ") {
            inside = false;
            let Some((version, rest)) = head.split_once(" (") else {
                continue;
            };
            let date = rest.trim_end_matches(')');
            let date = NaiveDate::parse_from_str(date, "%Y-%m-%d")
                .unwrap_or_else(|e| panic!("CHANGELOG.md: `{line}`: the date: {e}"));
            out.push(Release {
                version: version.to_string(),
                date,
                items: Vec::new(),
            });
            inside = true;
            continue;
        }
        let Some(release) = out.last_mut().filter(|_| inside) else {
            continue;
        };
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        match text.strip_prefix("- ") {
            Some(item) => release.items.push(item.to_string()),
            // A continuation of the last bullet, or the release's summary line.
            None if line.starts_with("  ") && !release.items.is_empty() => {
                let last = release.items.last_mut().expect("checked not empty");
                last.push(' ');
                last.push_str(text);
            }
            None => release.items.push(text.to_string()),
        }
    }
    out
}

/// `text` wrapped at 78 columns, the first line behind `first`, the rest behind `rest`.
fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.len() + 1 + word.len() > 78 {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// The maintainer line of Cargo.toml's `[package.metadata.deb]`.
fn maintainer(cargo_toml: &str) -> String {
    cargo_toml
        .lines()
        .find_map(|l| l.strip_prefix("maintainer = \""))
        .map(|m| m.trim_end_matches('"').to_string())
        .expect("Cargo.toml: [package.metadata.deb] maintainer")
}

fn debian_changelog(releases: &[Release], maintainer: &str) -> String {
    let mut out = String::new();
    for (i, r) in releases.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "gearwheel ({}-1) unstable; urgency=medium\n\n",
            r.version
        ));
        for item in &r.items {
            // Markdown's code marks mean nothing in a Debian changelog.
            out.push_str(&wrap(&item.replace('`', ""), "  * ", "    "));
        }
        out.push_str(&format!(
            "\n -- {maintainer}  {}\n",
            r.date.format("%a, %d %b %Y 00:00:00 +0000")
        ));
    }
    out
}

#[test]
fn the_debian_changelog_is_made_from_changelog_md() {
    let md = std::fs::read_to_string(root().join("CHANGELOG.md")).expect("CHANGELOG.md");
    let cargo = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let releases = releases(&md);
    let newest = releases.first().expect("CHANGELOG.md lists no release");
    assert_eq!(
        newest.version,
        env!("CARGO_PKG_VERSION"),
        "the newest release in CHANGELOG.md is not the version Cargo.toml builds"
    );
    for pair in releases.windows(2) {
        assert!(
            pair[0].date >= pair[1].date,
            "CHANGELOG.md: {} is listed above the later {}",
            pair[0].version,
            pair[1].version
        );
    }
    let made = debian_changelog(&releases, &maintainer(&cargo));
    let path = root().join("packaging/debian/changelog");
    if std::env::var("GEARWHEEL_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &made).expect("write packaging/debian/changelog");
        return;
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == made,
        "packaging/debian/changelog is not made from CHANGELOG.md: run \
         `GEARWHEEL_BLESS=1 cargo test --test changelog`"
    );
}

#[test]
fn wrapping_keeps_every_word_and_the_width() {
    let text = "one two three ".repeat(20);
    let wrapped = wrap(&text, "  * ", "    ");
    assert!(wrapped.lines().all(|l| l.len() <= 78), "{wrapped}");
    assert_eq!(
        wrapped.split_whitespace().filter(|w| *w != "*").count(),
        60,
        "{wrapped}"
    );
    assert!(wrapped.starts_with("  * one two"));
    assert!(wrapped.lines().skip(1).all(|l| l.starts_with("    ")));
}
