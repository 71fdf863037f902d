//! Group commit and the fsync modes: one write and one fsync per commit, deadlines, and
//! recovery from failed writes and fsyncs; segment rotation.

use super::*;

#[test]
fn group_commit_is_one_write_and_one_fsync() {
    let d = TempDir::new("group");
    let (mut j, _) = open(d.path(), opts(FsyncMode::Always));
    let s0 = j.stats();
    for id in 1..=1000 {
        j.append(&Record::JobAdded(job(id, 64))).unwrap();
    }
    assert!(j.has_pending());
    assert_eq!(j.stats().writes, s0.writes, "append does no I/O");
    let out = j.commit(10).unwrap();
    let s1 = j.stats();
    assert_eq!(s1.writes, s0.writes + 1);
    assert_eq!(s1.fsyncs, s0.fsyncs + 1);
    assert_eq!(out.records, 1000);
    assert!(out.fsynced);
    assert_eq!(
        out.bytes_written, s1.total_bytes,
        "header and records in one write"
    );
    assert_eq!(s1.total_bytes, dir_bytes(d.path()));
    // An empty commit is a no-op.
    assert_eq!(j.commit(11).unwrap(), CommitOutcome::default());
    assert_eq!(j.stats().writes, s1.writes);
    assert_eq!(j.stats().fsyncs, s1.fsyncs);
    assert_eq!(j.next_fsync_deadline(), None);
}

#[test]
fn fsync_every_gives_the_right_next_deadline() {
    let d = TempDir::new("every");
    let (mut j, _) = open(d.path(), opts(FsyncMode::Every(100)));
    assert_eq!(j.next_fsync_deadline(), None);
    j.append(&Record::JobAdded(job(1, 8))).unwrap();
    let o = j.commit(1000).unwrap();
    assert!(
        o.fsynced,
        "the first commit after a quiet spell syncs at once"
    );
    assert_eq!(j.next_fsync_deadline(), None);

    j.append(&Record::JobAdded(job(2, 8))).unwrap();
    let o = j.commit(1050).unwrap();
    assert!(o.bytes_written > 0 && !o.fsynced);
    assert_eq!(j.next_fsync_deadline(), Some(1100));
    j.append(&Record::JobAdded(job(3, 8))).unwrap();
    assert!(!j.commit(1070).unwrap().fsynced);
    assert_eq!(j.next_fsync_deadline(), Some(1100));
    assert_eq!(j.commit(1099).unwrap(), CommitOutcome::default());
    let o = j.commit(1100).unwrap();
    assert_eq!((o.fsynced, o.bytes_written, o.records), (true, 0, 0));
    assert_eq!(j.next_fsync_deadline(), None);
    assert_eq!(j.stats().fsyncs, 2);

    // A clock set back does not postpone the fsync.
    j.append(&Record::JobAdded(job(4, 8))).unwrap();
    assert!(j.commit(500).unwrap().fsynced);
    drop(j);
    let (_, r) = open(d.path(), opts(FsyncMode::Never));
    assert_eq!(r.jobs.len(), 4);
}

#[test]
fn fsync_never_syncs_only_on_close() {
    let d = TempDir::new("never");
    let (mut j, _) = open(d.path(), opts(FsyncMode::Never));
    j.append(&Record::JobAdded(job(1, 8))).unwrap();
    let o = j.commit(1).unwrap();
    assert!(o.bytes_written > 0 && !o.fsynced);
    assert_eq!(j.next_fsync_deadline(), None);
    assert_eq!(j.stats().fsyncs, 0);
    assert!(j.sync(2).unwrap().fsynced);
    j.close(3).unwrap();
}

#[test]
fn a_write_error_cuts_the_file_back_and_the_batch_is_retried() {
    let d = TempDir::new("wfail");
    let (mut j, _) = open(d.path(), opts(FsyncMode::Always));
    j.append(&Record::JobAdded(job(1, 8))).unwrap();
    j.commit(1).unwrap();
    let path = files(d.path(), "wal-").pop().unwrap();
    let good = fs::metadata(&path).unwrap().len();
    j.append(&Record::JobAdded(job(2, 5000))).unwrap();
    j.faults.fail_write = true;
    let e = j.commit(2).unwrap_err();
    assert!(e.is_disk_full(), "{e}");
    assert!(e.to_string().contains("wal-"), "{e}");
    assert_eq!(
        fs::metadata(&path).unwrap().len(),
        good,
        "no half batch left"
    );
    assert_eq!(j.stats().write_errors, 1);
    assert!(j.has_pending());
    // Meanwhile the caller gives up on job 2 and accepts job 3.
    j.append(&Record::JobFinished {
        id: 2,
        reason: FinishReason::Fail,
    })
    .unwrap();
    j.append(&Record::JobAdded(job(3, 8))).unwrap();
    let o = j.commit(3).unwrap();
    assert_eq!(o.records, 3);
    drop(j);
    let (_, r) = open(d.path(), opts(FsyncMode::Always));
    assert_eq!(
        r.jobs.iter().map(|x| x.job.id).collect::<Vec<_>>(),
        vec![1, 3]
    );
}

#[test]
fn an_fsync_error_rewrites_the_unsynced_bytes() {
    for mode in [FsyncMode::Always, FsyncMode::Every(50)] {
        let d = TempDir::new("sfail");
        let mut m = Model::default();
        let (mut j, _) = open(d.path(), opts(mode));
        m.add(&mut j, 8);
        j.commit(1000).unwrap();
        m.add(&mut j, 8);
        j.commit(1010).unwrap();
        m.add(&mut j, 8);
        j.faults.fail_fsync = true;
        assert!(j.sync(1020).is_err());
        m.add(&mut j, 8);
        let o = j.sync(1030).unwrap();
        assert!(o.fsynced);
        drop(j);
        let (_, r) = open(d.path(), opts(mode));
        m.check(&r);
        assert_eq!(r.stats.torn_tail, None);
    }
}

#[test]
fn segments_rotate_and_replay_in_order() {
    let d = TempDir::new("rotate");
    let o = Options {
        segment_bytes: 2048,
        ..opts(FsyncMode::Never)
    };
    let mut m = Model::default();
    {
        let (mut j, _) = open(d.path(), o);
        for i in 0..200 {
            let id = m.add(&mut j, 50);
            if i % 7 == 1 {
                m.retry(&mut j, id);
            }
            if i % 3 == 0 {
                m.finish(&mut j, id);
            }
            j.commit(i).unwrap();
        }
        assert_eq!(j.stats().total_bytes, dir_bytes(d.path()));
        j.close(1000).unwrap();
    }
    assert!(files(d.path(), "wal-").len() > 5);
    let (_, r) = open(d.path(), o);
    m.check(&r);
}
