//! `gearwheel schedules backfill ID --from --to [--dry-run]` against the real server: a dry
//! run lists the entry's times of a whole day, a backfill queues them, and a server's refusal
//! and bad flags have their exit codes.

use crate::support;

use support::*;

fn backfill(s: &Server, args: &[&str]) -> Out {
    let addr = s.addr.to_string();
    gw(
        &[&["schedules", "backfill", "-s", &addr][..], args].concat(),
        None,
        10,
    )
}

#[test]
fn a_dry_run_lists_the_times_and_a_backfill_queues_them() {
    let dir = TempDir::new("cli-backfill");
    let file = dir.path("s.cron");
    std::fs::write(&file, "0 */6 * * * report -- for {time}\n").unwrap();
    let s = Server::start(&["--schedules", file.to_str().unwrap()]);

    let o = backfill(
        &s,
        &[
            "report",
            "--from",
            "2026-01-01",
            "--to",
            "2026-01-01",
            "--dry-run",
        ],
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert_eq!(
        o.stdout,
        "2026-01-01T00:00:00Z\n2026-01-01T06:00:00Z\n2026-01-01T12:00:00Z\n2026-01-01T18:00:00Z\n"
    );

    let o = backfill(
        &s,
        &[
            "report",
            "--from",
            "2026-01-01T06:00:00Z",
            "--to",
            "2026-01-01",
        ],
    );
    assert_eq!((o.code(), o.stdout.as_str()), (Some(0), "OK 3\n"), "{o:?}");
    let mut w = s.connect();
    w.can_do(&["report"]);
    let (h, _, _, data) = w.grab_uniq().expect("the first of them is queued");
    assert_eq!(data, b"for 2026-01-01T06:00:00Z");
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);

    let o = backfill(&s, &["nope", "--from", "2026-01-01", "--to", "2026-01-01"]);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("UNKNOWN_SCHEDULE"), "{o:?}");
    let o = backfill(&s, &["report", "--from", "2026-01-01"]);
    assert_eq!(o.code(), Some(2), "{o:?}");
}
