//! Compaction: the live set exactly, in slices; crashes at every step; leftovers at open;
//! bounded growth under churn.

use super::*;

/// A journal where most records are dead: 30 long-lived jobs among 300 finished ones.
fn churned(dir: &Path, m: &mut Model) -> Journal {
    let (mut j, _) = open(dir, small_opts());
    for i in 0..330u64 {
        let id = m.add(&mut j, 60);
        if i % 11 == 0 {
            m.retry(&mut j, id);
        } else if i % 11 != 5 {
            m.finish(&mut j, id);
        }
        if i % 50 == 0 {
            m.sched(&mut j, "hourly", i, (i / 50 % 6) as u8);
            m.sched(&mut j, "daily", i * 2, 0);
        }
        j.commit(i).unwrap();
    }
    assert_eq!(m.jobs.len(), 60);
    j
}

#[test]
fn compaction_keeps_exactly_the_live_set_in_slices() {
    let d = TempDir::new("compact");
    let mut m = Model::default();
    let mut j = churned(d.path(), &mut m);
    let before = j.stats();
    assert!(j.needs_compaction(), "{before:?}");
    let mut steps = 0;
    while j.compact_step(2048).unwrap() {
        steps += 1;
        assert!(j.is_compacting());
    }
    assert!(steps >= 5, "bounded slices: {steps} steps");
    assert!(!j.is_compacting() && !j.needs_compaction());
    let after = j.stats();
    assert_eq!(after.compactions, 1);
    assert_eq!(after.live_bytes, before.live_bytes);
    assert!(
        after.total_bytes <= after.live_bytes + 2 * FILE_HEADER_LEN,
        "{after:?}"
    );
    assert_eq!(after.total_bytes, dir_bytes(d.path()) + FILE_HEADER_LEN);
    assert_eq!(files(d.path(), "wal-").len(), 0);
    assert_eq!(files(d.path(), "snap-").len(), 1);
    // The journal goes on, and a second compaction reads the snapshot.
    m.add(&mut j, 10);
    j.commit(1000).unwrap();
    drop(j);
    let (mut j, r) = open(d.path(), small_opts());
    m.check(&r);
    let ids: Vec<u64> = m.jobs.keys().copied().collect();
    for id in &ids[..50] {
        m.finish(&mut j, *id);
    }
    j.commit(2000).unwrap();
    while j.compact_step(1000).unwrap() {}
    assert_eq!(j.stats().compactions, 1);
    drop(j);
    let (_, r) = open(d.path(), small_opts());
    m.check(&r);
}

/// Runs a compaction with budget 1500, interleaving appends, finishes and retries, and
/// "crashes" (drops the journal) after `crash_after` steps. Returns the model of what was
/// committed, and whether the compaction had finished.
fn compaction_with_traffic(dir: &Path, crash_after: usize) -> (Model, bool) {
    let mut m = Model::default();
    let mut j = churned(dir, &mut m);
    let mut step = 0;
    let mut now = 10_000;
    loop {
        if step == crash_after {
            return (m, false);
        }
        let more = j.compact_step(1500).unwrap();
        step += 1;
        // Traffic between slices: a new job, and old jobs that may or may not be copied yet.
        now += 1;
        let id = m.add(&mut j, 30);
        let old: Vec<u64> = m.jobs.keys().copied().take(2).collect();
        m.finish(&mut j, old[0]);
        m.retry(&mut j, old[1]);
        if step % 2 == 0 {
            m.finish(&mut j, id);
            m.sched(&mut j, "hourly", now, 9);
        }
        j.commit(now).unwrap();
        if !more {
            return (m, true);
        }
    }
}

#[test]
fn compaction_survives_a_crash_after_every_step() {
    let mut k = 0;
    loop {
        let d = TempDir::new("crashstep");
        let (m, done) = compaction_with_traffic(d.path(), k);
        let (_, r) = open(d.path(), small_opts());
        m.check(&r);
        assert!(
            files(d.path(), "snap-")
                .iter()
                .all(|p| !p.to_string_lossy().ends_with(".tmp"))
        );
        if done {
            assert!(k > 5, "the compaction took {k} slices");
            break;
        }
        k += 1;
    }
}

#[test]
fn compaction_survives_a_crash_inside_its_last_step() {
    for stage in [Stage::TmpSynced, Stage::Renamed, Stage::DeletedOne] {
        let d = TempDir::new("crashstage");
        let mut m = Model::default();
        let mut j = churned(d.path(), &mut m);
        j.faults.crash_at = Some(stage);
        let mut n = 0;
        loop {
            match j.compact_step(4096) {
                Ok(true) => {
                    m.add(&mut j, 20);
                    j.commit(n).unwrap();
                    n += 1;
                }
                Err(StoreError::Crash) => break,
                other => panic!("{stage:?}: {other:?}"),
            }
        }
        drop(j);
        let names = files(d.path(), "");
        match stage {
            Stage::TmpSynced => {
                assert!(names.iter().any(|p| p.to_string_lossy().ends_with(".tmp")))
            }
            _ => assert!(names.iter().any(|p| p.to_string_lossy().ends_with(".snap"))),
        }
        let (j, r) = open(d.path(), small_opts());
        m.check(&r);
        let leftovers = if stage == Stage::TmpSynced { 1 } else { 0 };
        assert!(r.stats.leftovers_removed >= leftovers, "{stage:?}");
        assert!(
            files(d.path(), "")
                .iter()
                .all(|p| !p.to_string_lossy().ends_with(".tmp")),
            "{stage:?}"
        );
        // Whatever the stage, the next compaction works and keeps the live set.
        drop(j);
        let (mut j, _) = open(
            d.path(),
            Options {
                compact_min_bytes: 0,
                ..small_opts()
            },
        );
        while j.compact_step(4096).unwrap() {}
        drop(j);
        let (_, r) = open(d.path(), small_opts());
        m.check(&r);
    }
}

#[test]
fn stray_files_from_a_crash_are_handled_at_open() {
    let d = TempDir::new("stray");
    let mut m = Model::default();
    let mut j = churned(d.path(), &mut m);
    while j.compact_step(1 << 20).unwrap() {}
    m.add(&mut j, 5);
    j.commit(1).unwrap();
    drop(j);
    // A temp snapshot, an older snapshot, a covered log and an old repair temp.
    let snap = files(d.path(), "snap-").pop().unwrap();
    let snap_no: u64 = snap.file_name().unwrap().to_str().unwrap()[5..25]
        .parse()
        .unwrap();
    fs::write(
        d.path()
            .join(file::name(Kind::Snapshot, snap_no + 5) + ".tmp"),
        b"junk",
    )
    .unwrap();
    fs::write(
        d.path().join(file::name(Kind::Snapshot, snap_no - 1)),
        b"old",
    )
    .unwrap();
    fs::write(d.path().join(file::name(Kind::Log, snap_no)), b"covered").unwrap();
    fs::write(
        d.path().join("wal-00000000000000000001.log.repair.tmp"),
        b"x",
    )
    .unwrap();
    let (_, r) = open(d.path(), small_opts());
    m.check(&r);
    assert_eq!(r.stats.leftovers_removed, 4);
    assert_eq!(files(d.path(), "snap-"), vec![snap]);
}

#[test]
fn long_waiting_jobs_do_not_make_the_journal_grow_without_bound() {
    // beanstalkd's failure: a few old jobs pin every segment after them. Here 1,000 future
    // jobs wait the whole time while 60,000 jobs come and go around them.
    let d = TempDir::new("bound");
    let o = Options {
        fsync: FsyncMode::Never,
        segment_bytes: 64 << 10,
        compact_min_bytes: 256 << 10,
        compact_dead_factor: 2.0,
    };
    let (mut j, _) = open(d.path(), o);
    let mut m = Model::default();
    for _ in 0..1000 {
        m.add(&mut j, 200);
    }
    j.commit(0).unwrap();
    let live = j.stats().live_bytes;
    let mut max_disk = 0;
    let mut churn_bytes = 0;
    for i in 0..60_000u64 {
        let id = m.add(&mut j, 200);
        j.commit(i).unwrap();
        m.finish(&mut j, id);
        j.commit(i).unwrap();
        churn_bytes += 300;
        j.compact_step(16 << 10).unwrap();
        if i % 100 == 0 {
            max_disk = max_disk.max(dir_bytes(d.path()));
        }
    }
    let s = j.stats();
    assert!(s.compactions >= 5, "{s:?}");
    // Bound: (1 + factor) x live before a compaction starts, plus the snapshot being written
    // (<= live) and the churn during one compaction.
    let bound = (3 * live).max(o.compact_min_bytes) + live + (256 << 10);
    assert!(
        max_disk <= bound,
        "journal reached {max_disk} bytes, bound {bound}, live {live}, churn {churn_bytes}"
    );
    assert!(churn_bytes > 10 * max_disk, "{churn_bytes} {max_disk}");
    eprintln!(
        "live {live} bytes, largest journal {max_disk} bytes, bound {bound}, written {churn_bytes}"
    );
    drop(j);
    let (_, r) = open(d.path(), o);
    m.check(&r);
    assert_eq!(r.jobs.len(), 1000);
}

#[test]
fn compaction_waits_for_unwritten_records_and_syncs_every_mode() {
    let d = TempDir::new("cwait");
    let o = Options {
        fsync: FsyncMode::Every(1_000_000),
        ..small_opts()
    };
    let (mut j, _) = open(d.path(), o);
    let mut m = Model::default();
    for i in 0..200 {
        let id = m.add(&mut j, 60);
        m.finish(&mut j, id);
        j.commit(i).unwrap();
    }
    m.add(&mut j, 60);
    assert!(j.needs_compaction());
    assert!(j.compact_step(1 << 20).unwrap(), "waits for the commit");
    assert!(!j.is_compacting());
    j.commit(300).unwrap();
    assert!(j.next_fsync_deadline().is_some());
    while j.compact_step(1 << 20).unwrap() {}
    assert_eq!(j.stats().compactions, 1);
    drop(j);
    let (_, r) = open(d.path(), o);
    m.check(&r);
}

#[test]
fn compaction_never_rewrites_its_own_snapshot() {
    // With no minimum and factor 0 every compaction opportunity is taken.
    let d = TempDir::new("eager");
    let o = Options {
        compact_min_bytes: 0,
        compact_dead_factor: 0.0,
        ..opts(FsyncMode::Always)
    };
    let mut m = Model::default();
    let (mut j, _) = open(d.path(), o);
    assert!(!j.needs_compaction(), "nothing written yet");
    assert!(!j.compact_step(1 << 20).unwrap());
    m.add(&mut j, 10);
    j.commit(1).unwrap();
    for round in 0..3 {
        assert!(j.needs_compaction(), "round {round}");
        while j.compact_step(1 << 20).unwrap() {}
        // The snapshot is the newest file: nothing to compact until something is written.
        assert!(!j.needs_compaction(), "round {round}");
        assert!(!j.compact_step(1 << 20).unwrap());
        assert_eq!(files(d.path(), "snap-").len(), 1);
        drop(j);
        let (j2, r) = open(d.path(), o);
        m.check(&r);
        assert!(!j2.needs_compaction());
        j = j2;
        m.add(&mut j, 10);
        j.commit(2).unwrap();
    }
}
