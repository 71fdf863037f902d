//! `gearwheel check` on `@after` entries, as a process: a cycle is named with its path, an
//! unknown parent and an entry after itself are errors at their line and column (exit 1),
//! and `--next` says what a child waits for.

use crate::support;

use support::*;

#[test]
fn check_names_the_cycle_and_points_at_unknown_and_self_references() {
    let dir = TempDir::new("check-after");
    let bad = dir.path("bad.cron");
    std::fs::write(
        &bad,
        "@daily backup.db\n@after backup.db,verify report\n@after report verify\n@after nope,x x\n",
    )
    .unwrap();
    let bad = bad.to_str().unwrap();
    let o = gw(&["check", bad], None, 30);
    assert_eq!(o.code(), Some(1), "{o:?}");
    let errors = format!("{}{}", o.stdout, o.stderr);
    for want in [
        format!("{bad}:3:8: @after makes a cycle: report -> verify -> report"),
        format!("{bad}:4:8: @after nope: no entry of this file has the id \"nope\""),
        format!("{bad}:4:13: @after x: an entry cannot run after itself"),
    ] {
        assert!(errors.contains(&want), "{want}\nnot in:\n{errors}");
    }

    let good = dir.path("good.cron");
    std::fs::write(
        &good,
        "@daily backup.db\n@daily backup.files\n@after backup.db,backup.files verify.backups within=2h\n",
    )
    .unwrap();
    let o = gw(&["check", good.to_str().unwrap(), "--next", "1"], None, 30);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert!(
        o.stdout
            .contains("verify.backups  [@after backup.db,backup.files]")
            && o.stdout
                .contains("after each run of backup.db and backup.files"),
        "{}",
        o.stdout
    );
}
