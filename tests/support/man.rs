//! Markdown to roff for the man pages in man/: the subset docs/ is written in (headings,
//! paragraphs, bullet lists, tables, fenced code, inline code, bold and links), so that the
//! man pages are generated from docs/ and cannot drift from them. Pure text in, text out.

use std::path::{Path, PathBuf};

/// One part of a markdown file: the text under a heading, down to the next heading of the
/// same or a higher level (the heading line itself left out).
pub fn section<'a>(md: &'a str, heading: &str) -> &'a str {
    let mut start = None;
    let mut level = 0;
    let mut offset = 0;
    let mut fenced = false;
    for line in md.split_inclusive('\n') {
        let l = line.trim_end();
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let hashes = l.chars().take_while(|&c| c == '#').count();
        if !fenced && hashes > 0 && l[hashes..].starts_with(' ') {
            match start {
                None if l[hashes..].trim() == heading => {
                    start = Some(offset + line.len());
                    level = hashes;
                }
                Some(s) if hashes <= level => return &md[s..offset],
                _ => {}
            }
        }
        offset += line.len();
    }
    match start {
        Some(s) => &md[s..],
        None => panic!("no heading {heading:?}"),
    }
}

/// How links are rendered: the files whose text is in this same page (their links become
/// plain text), and the directory of the markdown being converted (to resolve the others).
pub struct Links<'a> {
    pub in_page: &'a [&'a str],
    pub dir: &'a str,
}

/// Markdown blocks to roff. Headings of level `sh_level` or above become `.SH` (upper case),
/// deeper ones `.SS`.
pub fn blocks(md: &str, sh_level: usize, links: &Links) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim();
        if t.is_empty() {
            i += 1;
            continue;
        }
        if t.starts_with("```") {
            out.push_str(".PP\n.RS 4\n.nf\n");
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                out.push_str(&code_line(lines[i]));
                out.push('\n');
                i += 1;
            }
            out.push_str(".fi\n.RE\n");
            i += 1;
            continue;
        }
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if hashes > 0 && t[hashes..].starts_with(' ') {
            let title = inline(t[hashes..].trim(), links);
            if hashes <= sh_level {
                // Upper case, as man pages title sections, except inside code: `-u` is a flag.
                let upper: Vec<String> = t[hashes..]
                    .trim()
                    .split('`')
                    .enumerate()
                    .map(|(i, s)| {
                        if i % 2 == 0 {
                            s.to_uppercase()
                        } else {
                            s.to_string()
                        }
                    })
                    .collect();
                let title = inline(&upper.join("`"), links);
                out.push_str(&format!(".SH \"{}\"\n", title.replace('"', "")));
            } else {
                out.push_str(&format!(".SS \"{}\"\n", title.replace('"', "")));
            }
            i += 1;
            continue;
        }
        if t.starts_with('|') {
            let mut rows = Vec::new();
            while i < lines.len() && lines[i].trim().starts_with('|') {
                rows.push(cells(lines[i].trim()));
                i += 1;
            }
            out.push_str(&table(&rows, links));
            continue;
        }
        if let Some((mark, first)) = list_item(t) {
            let mut item = vec![first.to_string()];
            i += 1;
            while i < lines.len() && lines[i].starts_with("  ") && !lines[i].trim().is_empty() {
                item.push(lines[i].trim().to_string());
                i += 1;
            }
            out.push_str(&format!(".IP {mark} 4\n"));
            out.push_str(&text_line(&inline(&item.join(" "), links)));
            continue;
        }
        let mut para = vec![t.to_string()];
        i += 1;
        while i < lines.len() {
            let n = lines[i].trim();
            if n.is_empty()
                || n.starts_with("```")
                || n.starts_with('|')
                || list_item(n).is_some()
                || n.starts_with('#')
            {
                break;
            }
            para.push(n.to_string());
            i += 1;
        }
        out.push_str(".PP\n");
        out.push_str(&text_line(&inline(&para.join(" "), links)));
    }
    out
}

/// A list item's mark as roff writes it (a bullet, or `N.`) and its first line.
fn list_item(line: &str) -> Option<(String, &str)> {
    if let Some(rest) = line.strip_prefix("- ") {
        return Some(("\\(bu".to_string(), rest));
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let rest = line[digits..].strip_prefix(". ")?;
    (digits > 0).then(|| (format!("{}.", &line[..digits]), rest))
}

/// A table as tagged paragraphs: the first column is the tag, the last the text, and any
/// columns between become `header: value` lines under it.
fn table(rows: &[Vec<String>], links: &Links) -> String {
    let mut out = String::new();
    let Some(header) = rows.first() else {
        return out;
    };
    for row in rows.iter().skip(2) {
        out.push_str(".TP\n");
        out.push_str(&text_line(&inline(&row[0], links)));
        let last = row.len() - 1;
        let mut body = vec![inline(&row[last], links)];
        for (h, v) in header.iter().zip(row).take(last).skip(1) {
            if !v.trim().is_empty() {
                body.push(format!("{}: {}", inline(h, links), inline(v, links)));
            }
        }
        out.push_str(&text_line(&body.join("\n.br\n")));
    }
    out
}

/// The cells of a table row; `\|` inside a cell is a literal bar.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                out.last_mut().expect("a cell").push('|');
            }
            '|' => out.push(String::new()),
            c => out.last_mut().expect("a cell").push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// One line of filled text: a leading `.` or `'` would be a request.
fn text_line(s: &str) -> String {
    let s = s.trim();
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}\n")
    } else {
        format!("{s}\n")
    }
}

fn code_line(s: &str) -> String {
    let e = escape(s);
    if e.starts_with('.') || e.starts_with('\'') {
        format!("\\&{e}")
    } else {
        e
    }
}

/// Characters roff would read as requests or escapes, and a few it names.
pub fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            '–' => out.push_str("\\(en"),
            '—' => out.push_str("\\(em"),
            '×' => out.push_str("\\(mu"),
            '≤' => out.push_str("\\(<="),
            '≥' => out.push_str("\\(>="),
            'µ' => out.push_str("\\(mc"),
            '→' => out.push_str("\\(->"),
            c => out.push(c),
        }
    }
    out
}

/// Inline markdown: `code` and **bold** in bold, links as their text (and, for a document
/// not in this page, its path after it).
pub fn inline(s: &str, links: &Links) -> String {
    let mut out = String::new();
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('`') {
            if let Some(end) = r.find('`') {
                out.push_str(&format!("\\fB{}\\fR", escape(&r[..end])));
                rest = &r[end + 1..];
                continue;
            }
        }
        if let Some(r) = rest.strip_prefix("**") {
            if let Some(end) = r.find("**") {
                out.push_str(&format!(
                    "\\fB{}\\fR",
                    inline(&r[..end], links).replace("\\fR", "\\fB")
                ));
                rest = &r[end + 2..];
                continue;
            }
        }
        if let Some(r) = rest.strip_prefix('[') {
            if let Some(close) = r.find("](") {
                if let Some(end) = r[close + 2..].find(')') {
                    let text = &r[..close];
                    let target = &r[close + 2..close + 2 + end];
                    out.push_str(&inline(text, links));
                    if let Some(path) = outside_page(target, links) {
                        out.push_str(&format!(" ({})", escape(&path)));
                    }
                    rest = &r[close + 2 + end + 1..];
                    continue;
                }
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push_str(&escape(&c.to_string()));
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The repository path a link points to, unless its text is in this page.
fn outside_page(target: &str, links: &Links) -> Option<String> {
    if target.contains("://") {
        return Some(target.to_string());
    }
    let file = target.split('#').next().unwrap_or("");
    if file.is_empty() {
        return None;
    }
    let mut path = PathBuf::new();
    for c in Path::new(links.dir).join(file).components() {
        match c {
            std::path::Component::ParentDir => {
                path.pop();
            }
            std::path::Component::CurDir => {}
            other => path.push(other),
        }
    }
    let path = path.to_string_lossy().into_owned();
    if links.in_page.contains(&path.as_str()) {
        None
    } else {
        Some(path)
    }
}
