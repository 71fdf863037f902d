//! Counts with their noun in the right number, for log lines and reports. Depends on nothing.

/// `1 entry`, `2 entries`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_and_many() {
        assert_eq!(super::count(1, "entry", "entries"), "1 entry");
        assert_eq!(super::count(0, "entry", "entries"), "0 entries");
        assert_eq!(super::count(2, "job", "jobs"), "2 jobs");
    }
}
