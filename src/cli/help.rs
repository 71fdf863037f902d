//! `--help` as a person reads it: argh's text wrapped to a terminal's 80 columns (argh wraps
//! option descriptions but not the usage line, notes or long descriptions), ending with the
//! man page and the document that say more. Pure text in, text out.

/// The width every help line fits in.
pub const WIDTH: usize = 80;

/// The subcommands and where each is documented: (name, man page, document).
pub const SEE_ALSO: &[(&str, &str, &str)] = &[
    ("serve", "gearwheel(1)", "docs/operations.md"),
    ("work", "gearwheel(1)", "docs/clients.md"),
    ("submit", "gearwheel(1)", "docs/clients.md"),
    ("admin", "gearwheel(1)", "docs/clients.md"),
    ("check", "gearwheel-schedules(5)", "docs/schedules.md"),
    ("schedules", "gearwheel(1)", "docs/cluster.md"),
    (
        "import-crontab",
        "gearwheel(1)",
        "docs/coming-from-crontab.md",
    ),
];

/// argh's help `text` for `subcommand` (None: the top level), fitted to [`WIDTH`] and ending
/// with where to read more.
pub fn finish(text: &str, subcommand: Option<&str>) -> String {
    let (man, doc) = SEE_ALSO
        .iter()
        .find(|(name, _, _)| Some(*name) == subcommand)
        .map_or(("gearwheel(1)", "README.md"), |&(_, man, doc)| (man, doc));
    fit(
        &format!(
            "{}\n\nMore: {man}, and {doc} in the source.",
            text.trim_end()
        ),
        WIDTH,
    )
}

/// Every line of `text` wrapped to `width` columns: the usage line with its arguments
/// aligned under the first one, other lines at their own indentation.
pub fn fit(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if columns(line) <= width {
            out.push_str(line);
            out.push('\n');
        } else if line.starts_with("Usage: ") {
            wrap_usage(line, width, &mut out);
        } else {
            let indent = line.len() - line.trim_start().len();
            wrap(&line[..indent], line.split_whitespace(), width, &mut out);
        }
    }
    out
}

fn columns(s: &str) -> usize {
    s.chars().count()
}

/// Words onto lines of at most `width` columns, each line starting with `indent`; a word
/// longer than a line gets a line of its own.
fn wrap<'a>(
    indent: &str,
    words: impl IntoIterator<Item = &'a str>,
    width: usize,
    out: &mut String,
) {
    wrap_hanging(indent, indent, words, width, out);
}

fn wrap_hanging<'a>(
    first: &str,
    rest: &str,
    words: impl IntoIterator<Item = &'a str>,
    width: usize,
    out: &mut String,
) {
    let mut line = first.to_string();
    let mut empty = first.trim().is_empty();
    for w in words {
        if !empty && columns(&line) + 1 + columns(w) > width {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(w);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
}

/// `Usage: PROGRAM SUB [-a <a>] [--bee <bee>] ...`: the bracketed groups never split, and
/// continuation lines start under the first argument (or 8 columns in, when the program's
/// path is too long for that).
fn wrap_usage(line: &str, width: usize, out: &mut String) {
    let groups = usage_groups(line.trim_start_matches("Usage: "));
    let lead = groups
        .iter()
        .take_while(|g| !g.starts_with(['[', '<', '-']))
        .count();
    let first = format!("Usage: {}", groups[..lead].join(" "));
    let widest = groups[lead..].iter().map(|g| columns(g)).max().unwrap_or(0);
    let hang = if columns(&first) + 1 + widest <= width {
        columns(&first) + 1
    } else {
        8
    };
    let rest = " ".repeat(hang);
    if columns(&first) + 1 >= width || lead == groups.len() {
        out.push_str(&first);
        out.push('\n');
        wrap(&rest, groups[lead..].iter().copied(), width, out);
    } else {
        wrap_hanging(&first, &rest, groups[lead..].iter().copied(), width, out);
    }
}

/// The usage line split at the spaces outside `[...]` and `<...>`.
fn usage_groups(s: &str) -> Vec<&str> {
    let mut groups = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '<' => depth += 1,
            ']' | '>' => depth -= 1,
            ' ' if depth <= 0 => {
                if i > start {
                    groups.push(&s[start..i]);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < s.len() {
        groups.push(&s[start..]);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widest(s: &str) -> usize {
        s.lines().map(columns).max().unwrap_or(0)
    }

    #[test]
    fn short_lines_pass_unchanged() {
        let t = "Usage: gw check <file>\n\nOptions:\n  --next  N\n";
        assert_eq!(fit(t, 80), t);
    }

    #[test]
    fn a_long_usage_line_wraps_between_groups_under_the_first_argument() {
        let mut line = "Usage: gw serve".to_string();
        for i in 0..20 {
            line.push_str(&format!(" [--flag-{i} <flag-{i}>]"));
        }
        let out = fit(&line, 80);
        assert!(widest(&out) <= 80, "{out}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 3);
        assert!(lines[0].starts_with("Usage: gw serve [--flag-0 <flag-0>]"));
        for l in &lines[1..] {
            assert!(l.starts_with("                ["), "{l:?}");
        }
        // Nothing lost, nothing split inside a group.
        let joined: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(joined, line.split_whitespace().collect::<Vec<_>>());
        assert!(
            out.lines()
                .all(|l| l.trim_end().ends_with(']') || l.ends_with("serve"))
        );
    }

    #[test]
    fn a_long_program_path_hangs_eight_columns_in() {
        let prog = format!("/{}/gearwheel", "very-long-directory".repeat(3));
        let line = format!("Usage: {prog} work [-f <function...>] [-s <server...>] [command...]");
        let out = fit(&line, 80);
        assert!(
            out.lines().skip(1).all(|l| l.starts_with("        [")),
            "{out}"
        );
    }

    #[test]
    fn notes_wrap_at_their_own_indentation() {
        let note = format!("  {}", "word ".repeat(60).trim_end());
        let out = fit(&note, 80);
        assert!(widest(&out) <= 80);
        assert!(out.lines().all(|l| l.starts_with("  word")));
        assert_eq!(out.split_whitespace().count(), 60);
    }

    #[test]
    fn finish_names_the_man_page_and_the_doc() {
        let out = finish("Usage: gw check <file>\n", Some("check"));
        assert!(
            out.trim_end()
                .ends_with("More: gearwheel-schedules(5), and docs/schedules.md in the source.")
        );
        let top = finish("Usage: gw [<command>]\n", None);
        assert!(top.contains("gearwheel(1)") && top.contains("README.md"));
    }
}
