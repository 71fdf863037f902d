//! Aligned text tables for the `admin` command: a header row, columns padded to their widest
//! cell, numbers right-aligned, no trailing spaces. Pure.

/// Render `rows` under `headers`. A column whose cells are all numbers is right-aligned.
/// Rows may be shorter or longer than the header; missing cells are empty and extra columns
/// get an empty header.
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let ncols = rows
        .iter()
        .map(Vec::len)
        .chain(std::iter::once(headers.len()))
        .max()
        .unwrap_or(0);
    fn cell(row: &[String], i: usize) -> &str {
        row.get(i).map(String::as_str).unwrap_or("")
    }
    let head: Vec<String> = (0..ncols)
        .map(|i| headers.get(i).copied().unwrap_or("").to_string())
        .collect();
    let width: Vec<usize> = (0..ncols)
        .map(|i| {
            rows.iter()
                .map(|r| cell(r, i).chars().count())
                .chain(std::iter::once(head[i].chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let numeric: Vec<bool> = (0..ncols)
        .map(|i| {
            !rows.is_empty()
                && rows.iter().all(|r| {
                    let c = cell(r, i);
                    !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit())
                })
        })
        .collect();
    let mut out = String::new();
    let mut line = |cells: &dyn Fn(usize) -> String| {
        let mut s = String::new();
        for i in 0..ncols {
            let c = cells(i);
            let pad = width[i].saturating_sub(c.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if numeric[i] {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(&c);
            } else {
                s.push_str(&c);
                s.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&|i| head[i].clone());
    for r in rows {
        line(&|i| cell(r, i).to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[&[&str]]) -> Vec<Vec<String>> {
        v.iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn columns_align_and_numbers_go_right() {
        let t = render(
            &["FUNCTION", "TOTAL", "RUNNING", "WORKERS"],
            &rows(&[&["resize", "12", "2", "3"], &["up", "0", "0", "10"]]),
        );
        assert_eq!(
            t,
            "FUNCTION  TOTAL  RUNNING  WORKERS\n\
             resize       12        2        3\n\
             up            0        0       10\n"
        );
    }

    #[test]
    fn header_only_when_empty_and_no_trailing_spaces() {
        assert_eq!(render(&["HANDLE", "UNIQUE"], &[]), "HANDLE  UNIQUE\n");
        let t = render(&["A", "B"], &rows(&[&["x", ""], &["longer", "y"]]));
        assert_eq!(t, "A       B\nx\nlonger  y\n");
    }

    #[test]
    fn ragged_rows_and_wide_characters() {
        let t = render(&["A"], &rows(&[&["x", "extra"], &["ü"]]));
        assert_eq!(t, "A\nx  extra\nü\n");
        let t = render(&["NAME", "N"], &rows(&[&["größe", "1"], &["a", "x"]]));
        assert_eq!(t, "NAME   N\ngröße  1\na      x\n");
    }
}
