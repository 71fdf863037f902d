//! The man pages man/gearwheel.1 and man/gearwheel-schedules.5 are generated from docs/ and
//! from the command's own help, so they cannot drift: this test regenerates them and fails
//! when the files differ (`GEARWHEEL_BLESS=1 cargo test --test docs` rewrites them). It
//! also checks that every `serve` flag in the code is in docs/operations.md's table with the
//! default the code really uses, and that groff renders both pages without a warning.

use crate::support;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use argh::FromArgs;
use gearwheel::cli::args::Cli;
use gearwheel::config::{Config, ServeArgs};
use support::man::{Links, blocks, escape, inline, section};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// argh's help text for `gearwheel ARGS... --help`, in process.
fn help(args: &[&str]) -> String {
    let mut a = args.to_vec();
    a.push("--help");
    match Cli::from_args(&["gearwheel"], &a) {
        Err(e) if e.status.is_ok() => e.output,
        other => panic!("gearwheel {args:?} --help: {other:?}"),
    }
}

/// The entries of one `Name:` block of argh's help (`Options:`, `Commands:`): the name column
/// and the description, continuation lines joined.
fn help_entries(text: &str, block: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line == block {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if line.trim().is_empty() {
            break;
        }
        let body = &line[2.min(line.len())..];
        if !body.starts_with(' ') {
            let (name, desc) = body.split_once("  ").unwrap_or((body, ""));
            out.push((name.trim().to_string(), desc.trim().to_string()));
        } else if let Some(last) = out.last_mut() {
            if !last.1.is_empty() {
                last.1.push(' ');
            }
            last.1.push_str(line.trim());
        }
    }
    out
}

fn usage(args: &[&str]) -> String {
    let h = help(args);
    let line = h.lines().next().expect("a usage line");
    line.trim_start_matches("Usage: ").to_string()
}

/// `gearwheel serve ...` as a roff synopsis line: the command in bold, its arguments as argh
/// prints them.
fn synopsis(args: &[&str]) -> String {
    let u = usage(args);
    let cmd = format!("gearwheel {}", args.join(" "));
    let rest = u.strip_prefix(&cmd).unwrap_or(&u).trim();
    format!(".PP\n.B {}\n{}\n", cmd, escape(rest))
}

fn options_list(text: &str) -> String {
    let mut out = String::new();
    for (name, desc) in help_entries(text, "Options:") {
        if name.starts_with("--help") {
            continue;
        }
        out.push_str(&format!(".TP\n.B {}\n{}\n", escape(&name), escape(&desc)));
    }
    out
}

const HEADER: &str = ".\\\" Generated from docs/ and the command's help by tests/docs/man_pages.rs: do not edit.\n\
.\\\" After changing docs/, run: GEARWHEEL_BLESS=1 cargo test --test docs\n";

/// gearwheel(1): the commands, the serve flags and operations, the client commands.
fn gearwheel_1() -> String {
    let ops = read("docs/operations.md");
    let clients = read("docs/clients.md");
    let crontab = read("docs/coming-from-crontab.md");
    let readme = read("README.md");
    let links = |dir: &'static str| Links {
        in_page: &["docs/operations.md", "docs/clients.md"],
        dir,
    };
    let mut m = String::from(HEADER);
    m.push_str(&format!(
        ".TH GEARWHEEL 1 \"\" \"gearwheel {VERSION}\" \"gearwheel manual\"\n"
    ));
    // Flags and paths read better unhyphenated and ragged right.
    m.push_str(".nh\n.ad l\n");
    let description = env!("CARGO_PKG_DESCRIPTION");
    let (first, rest) = description.split_at(1);
    m.push_str(&format!(
        ".SH NAME\ngearwheel \\- {}{}\n",
        first.to_lowercase(),
        escape(rest)
    ));
    m.push_str(".SH SYNOPSIS\n");
    let commands = help_entries(&help(&[]), "Commands:");
    for (name, _) in &commands {
        m.push_str(&synopsis(&[name]));
    }
    m.push_str(".SH DESCRIPTION\n");
    let intro = readme.split("\n## ").next().expect("the README's opening");
    let intro = intro.split_once('\n').map_or("", |(_, rest)| rest);
    m.push_str(&blocks(intro, 2, &links("")));
    m.push_str(".SH COMMANDS\n");
    for (name, desc) in &commands {
        m.push_str(&format!(".TP\n.B {}\n{}\n", escape(name), escape(desc)));
    }
    // Every section of the two documents, whatever they hold today; their openings only
    // point to other documents.
    for doc in [&ops, &clients] {
        m.push_str(&blocks(sections(doc), 2, &links("docs")));
    }
    let check = help(&["check"]);
    m.push_str(".SH CHECK\n.PP\n");
    let what = check.lines().nth(2).unwrap_or("").trim();
    m.push_str(&format!(
        "{}\nThe file's format is in\n.BR gearwheel\\-schedules (5).\n",
        escape(what)
    ));
    m.push_str(&options_list(&check));
    m.push_str(".SH \"IMPORT\\-CRONTAB\"\n");
    m.push_str(&blocks(
        section(
            &crontab,
            "A whole crontab, moved: `gearwheel import-crontab`",
        ),
        2,
        &links("docs"),
    ));
    m.push_str(
        ".SH \"SEE ALSO\"\n.BR gearwheel\\-schedules (5),\n.BR gearmand (8),\n\
         .BR gearadmin (1),\n.BR crontab (5)\n.PP\n",
    );
    m.push_str(&format!(
        "{}\n",
        inline(
            "The full manual is in the gearwheel source: `README.md` and `docs/` (protocol and \
             compatibility with gearmand, future jobs, the journal, HTTP and metrics, \
             performance, coming from gearmand, coming from crontab).",
            &links("")
        )
    ));
    m
}

/// A document from its first `##` heading on.
fn sections(md: &str) -> &str {
    md.find("\n## ").map_or("", |i| &md[i + 1..])
}

/// gearwheel-schedules(5): docs/schedules.md as it stands.
fn gearwheel_schedules_5() -> String {
    let md = read("docs/schedules.md");
    let links = Links {
        in_page: &["docs/schedules.md"],
        dir: "docs",
    };
    let body = md.split_once('\n').map_or("", |(_, rest)| rest);
    let (opening, rest) = match body.find("\n## ") {
        Some(i) => body.split_at(i),
        None => (body, ""),
    };
    let mut m = String::from(HEADER);
    m.push_str(&format!(
        ".TH GEARWHEEL\\-SCHEDULES 5 \"\" \"gearwheel {VERSION}\" \"gearwheel manual\"\n"
    ));
    // Flags and paths read better unhyphenated and ragged right.
    m.push_str(".nh\n.ad l\n");
    m.push_str(
        ".SH NAME\ngearwheel\\-schedules \\- the schedules file of gearwheel serve: \
         crontab lines that inject Gearman jobs on time\n",
    );
    m.push_str(".SH SYNOPSIS\n.B gearwheel serve \\-\\-schedules\n.I FILE\n.PP\n");
    m.push_str(".B gearwheel check\n.I FILE\n[\\-\\-next N] [\\-\\-from TIME] [\\-\\-tz ZONE]\n");
    m.push_str(".SH DESCRIPTION\n");
    m.push_str(&blocks(opening, 2, &links));
    m.push_str(&blocks(rest, 2, &links));
    m.push_str(
        ".SH \"SEE ALSO\"\n.BR gearwheel (1),\n.BR crontab (5)\n.PP\n\
         docs/coming\\-from\\-crontab.md in the gearwheel source.\n",
    );
    m
}

fn pages() -> [(&'static str, String); 2] {
    [
        ("man/gearwheel.1", gearwheel_1()),
        ("man/gearwheel-schedules.5", gearwheel_schedules_5()),
    ]
}

#[test]
fn man_pages_are_generated_from_docs() {
    let bless = std::env::var("GEARWHEEL_BLESS").as_deref() == Ok("1");
    let mut stale = Vec::new();
    for (path, want) in pages() {
        let have = std::fs::read_to_string(root().join(path)).unwrap_or_default();
        if have == want {
            continue;
        }
        if bless {
            std::fs::create_dir_all(root().join("man")).expect("man/");
            std::fs::write(root().join(path), &want).expect("write the man page");
        } else {
            stale.push(path);
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} differ from what docs/ and the help say; run \
         `GEARWHEEL_BLESS=1 cargo test --test docs` and commit man/"
    );
}

#[test]
fn groff_renders_the_pages_without_warnings() {
    if !support::require(support::have("groff"), "groff (apt-get install groff-base)") {
        return;
    }
    // The pages as generated (the files are compared with them above), so that a run with
    // GEARWHEEL_BLESS=1 never reads a file while it is being rewritten.
    for (path, page) in pages() {
        let mut child = Command::new("groff")
            .args(["-man", "-ww", "-z", "-Tutf8"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run groff");
        child
            .stdin
            .take()
            .expect("groff's stdin")
            .write_all(page.as_bytes())
            .expect("feed groff");
        let out = child.wait_with_output().expect("groff's result");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.is_empty(), "{path}: {err}");
    }
}

/// The long flags named in a piece of text.
fn long_flags(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("--") {
        let name: String = rest[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if !name.is_empty() {
            out.push(format!("--{name}"));
        }
        rest = &rest[i + 2 + name.len()..];
    }
    out
}

/// The rows of docs/operations.md's serve-flags table: (flags, default cell).
fn flag_rows() -> Vec<(Vec<String>, String)> {
    let ops = read("docs/operations.md");
    section(&ops, "Serve flags")
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            (long_flags(cells[0]), cells[1].trim().to_string())
        })
        .collect()
}

#[test]
fn every_serve_flag_is_in_the_docs_table_and_the_man_page() {
    let in_code: Vec<String> = help_entries(&help(&["serve"]), "Options:")
        .iter()
        .flat_map(|(name, _)| long_flags(name))
        .filter(|f| f != "--help")
        .collect();
    assert!(
        in_code.len() > 30,
        "parsed {} flags from serve --help",
        in_code.len()
    );
    let documented: Vec<String> = flag_rows().into_iter().flat_map(|(f, _)| f).collect();
    let man = gearwheel_1();
    for flag in &in_code {
        assert!(
            documented.contains(flag),
            "{flag} is a serve flag but has no row in docs/operations.md's table"
        );
        assert!(
            man.contains(&escape(flag)),
            "{flag} is not in man/gearwheel.1"
        );
    }
    for flag in &documented {
        assert!(
            in_code.contains(flag),
            "docs/operations.md documents {flag}, which `serve` does not have"
        );
    }
}

/// A documented default as the flag's value: `64 MiB` in bytes, backticks and the
/// explanation in brackets dropped; None when it is not a value (`none`, `the ... addresses`).
fn default_value(cell: &str) -> Option<String> {
    let v = cell.replace('`', "");
    let v = v.split(" (").next().unwrap_or("").trim();
    let v = v.split(", or ").next().unwrap_or("").trim();
    if let Some(n) = v.strip_suffix(" MiB") {
        return Some((n.parse::<u64>().ok()? << 20).to_string());
    }
    if let Some(n) = v.strip_suffix(" KiB") {
        return Some((n.parse::<u64>().ok()? << 10).to_string());
    }
    if v.is_empty() || v.contains(' ') || v.contains('<') || v == "none" {
        return None;
    }
    Some(v.to_string())
}

fn config(args: &[&str]) -> Result<String, String> {
    let a = ServeArgs::from_args(&["serve"], args).map_err(|e| e.output)?;
    Config::from_args(a, None).map(|c| format!("{c:?}"))
}

#[test]
fn documented_defaults_are_the_code_defaults() {
    let mut checked = 0;
    for (flags, cell) in flag_rows() {
        let values: Vec<&str> = cell.split(", ").collect();
        for (i, flag) in flags.iter().enumerate() {
            // `--http-*` settings exist only with an HTTP listener, `--cluster` and `--etcd-*`
            // only with `--etcd`.
            let base: Vec<&str> = if flag.starts_with("--http-") && flag != "--http-port" {
                vec!["--http-port", "8080"]
            } else if flag == "--cluster" || flag.starts_with("--etcd-") {
                // The cluster's settings exist only with `--etcd`.
                vec!["--etcd", "http://127.0.0.1:2379"]
            } else {
                vec![]
            };
            let plain = config(&base).expect("the defaults are valid");
            let mut with = base.clone();
            with.push(flag);
            let cell = if flags.len() == values.len() {
                values[i]
            } else {
                cell.as_str()
            };
            // A switch documented off changes something when given, one documented on does
            // not, and its `--no-` twin does.
            let negated = flag.starts_with("--no-");
            match cell {
                "off" | "on" if (cell == "on") == negated => {
                    assert_ne!(config(&with).ok(), Some(plain), "{flag}: documented {cell}")
                }
                "off" | "on" => {
                    assert_eq!(config(&with).ok(), Some(plain), "{flag}: documented {cell}")
                }
                _ => {
                    let Some(v) = default_value(cell) else {
                        continue;
                    };
                    with.push(&v);
                    assert_eq!(
                        config(&with),
                        Ok(plain),
                        "{flag} {v}, its documented default, is not what the code does without it"
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 25, "only {checked} defaults checked");
}

#[test]
fn default_values_are_read_as_documented() {
    assert_eq!(default_value("64 MiB"), Some("67108864".into()));
    assert_eq!(
        default_value("4730, or `$GEARMAND_PORT`"),
        Some("4730".into())
    );
    assert_eq!(default_value("0 (unlimited)"), Some("0".into()));
    assert_eq!(default_value("`H:<hostname>`"), None);
    assert_eq!(default_value("none (in memory)"), None);
    assert_eq!(default_value("the `--listen` addresses"), None);
    assert_eq!(
        long_flags("`--keepalive` / `--no-keepalive`"),
        ["--keepalive", "--no-keepalive"]
    );
}
