//! Digests of a schedules file, so that the servers of a cluster can tell whether they run
//! the same one: one per entry (what it does, not where it sits in the file) and one for the
//! whole file. FNV-1a over a fixed text form: stable across processes and versions that keep
//! the form, and not a security boundary (only a comparison between friends).

use crate::schedule::file::Entry;

fn fnv(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The digest of one entry: its timing, zone, function, options and workload.
pub fn entry(e: &Entry) -> String {
    // Every field named, so that a new schedules-file option does not compile until it is
    // either in the digest or left out here on purpose: the line (moving an entry changes
    // nothing) and the timing (read from `spec`, which is in).
    let Entry {
        id,
        line: _,
        spec,
        timing: _,
        zone,
        function,
        priority,
        overlap,
        catchup,
        deadline_ms,
        jitter_ms,
        fanout,
        on_failure,
        on_success,
        alert_format,
        timeout_ms,
        retry,
        expect_ping,
        grace_ms,
        max_duration_ms,
        min_duration_ms,
        workload,
        group,
        after,
    } = e;
    let form = format!(
        "{}\n{}\n{:?}\n{}\n{:?}\n{:?}\n{:?}\n{:?}\n{}\n{}\n{:?}\n{:?}\n{:?}\n{:?}\n{}",
        id,
        spec,
        zone,
        function,
        priority,
        overlap,
        catchup,
        deadline_ms,
        jitter_ms,
        fanout,
        on_failure,
        on_success,
        timeout_ms,
        retry,
        workload
    );
    // The watch options are added only when set, so that the digest of an entry without
    // them stays what servers of an older version compute.
    let watch = (*expect_ping, *max_duration_ms, *min_duration_ms) != (false, None, None)
        || *grace_ms != crate::schedule::file::DEFAULT_GRACE_MS;
    let form = if watch {
        format!("{form}\nwatch {expect_ping} {grace_ms} {max_duration_ms:?} {min_duration_ms:?}")
    } else {
        form
    };
    // The alert body's format too, only when not the default.
    let form = match alert_format {
        crate::schedule::webhook::AlertFormat::Generic => form,
        f => format!("{form}\nalert_format={}", f.name()),
    };
    // The group too, only when set.
    let form = match group {
        Some(g) => format!("{form}\ngroup={g}"),
        None => form,
    };
    // `@after`'s options too, only when not the defaults (its parents are in `spec`).
    let form = if *after == crate::schedule::after::AfterRule::default() {
        form
    } else {
        format!("{form}\nafter {:?} {:?}", after.when, after.within_ms)
    };
    format!("{:016x}", fnv(&form))
}

/// The file's digest and its per-entry digests (`id=digest` joined by spaces).
pub fn file(entries: &[Entry]) -> (String, String) {
    let per: Vec<String> = entries
        .iter()
        .map(|e| format!("{}={}", e.id, entry(e)))
        .collect();
    let joined = per.join(" ");
    (format!("{:016x}", fnv(&joined)), joined)
}

/// The entry ids whose digest differs between two per-entry lists (present in one only, or
/// different), sorted.
pub fn differing(mine: &str, theirs: &str) -> Vec<String> {
    let parse = |s: &str| -> std::collections::BTreeMap<String, String> {
        s.split_whitespace()
            .filter_map(|p| p.rsplit_once('='))
            .map(|(id, d)| (id.to_string(), d.to_string()))
            .collect()
    };
    let (a, b) = (parse(mine), parse(theirs));
    let mut out: Vec<String> = a
        .iter()
        .filter(|(id, d)| b.get(*id) != Some(d))
        .map(|(id, _)| id.clone())
        .chain(b.keys().filter(|id| !a.contains_key(*id)).cloned())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Zone;
    use crate::schedule::file::parse;

    #[test]
    fn differing_entries_are_named() {
        let a = parse("@every 1s tick -- a\n@every 5s tock -- b\n", &Zone::Utc).unwrap();
        let b = parse(
            "@every 1s tick -- a\n@every 6s tock -- b\n@daily x\n",
            &Zone::Utc,
        )
        .unwrap();
        let (da, ea) = file(&a.entries);
        let (db, eb) = file(&b.entries);
        assert_ne!(da, db);
        assert_eq!(file(&a.entries).0, da, "stable");
        let ids: Vec<String> = b.entries.iter().skip(1).map(|e| e.id.clone()).collect();
        assert_eq!(differing(&ea, &eb), {
            let mut v = ids;
            v.sort();
            v
        });
        assert!(differing(&ea, &ea).is_empty());
    }
}
