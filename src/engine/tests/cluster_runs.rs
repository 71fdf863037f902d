//! A clustered engine: due runs become claims, only granted ones queue jobs, and a takeover
//! makes up one missed run of a catchup=last entry, never two.

use super::*;
use crate::schedule::file::parse;

/// 2026-11-22T06:37:30Z
const T0: u64 = 1_795_329_450_000;

fn clustered(text: &str) -> World {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        ..EngineConfig::default()
    });
    w.now = T0 - 5_000;
    w.e.set_clustered(true);
    let file = parse(text, &Zone::Utc).unwrap();
    w.e.load_schedules(file, w.now, true, &mut w.out);
    w.out.replies.clear();
    w
}

fn queued(w: &mut World, f: &str) -> u32 {
    let c = w.conn();
    let status = w.admin(c, "status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{f}\t")))
        .and_then(|rest| rest.split('\t').next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_due_run_is_claimed_and_queued_only_when_granted() {
    let mut w = clustered("@every 10s beat id=hb overlap=allow -- {time}\n");
    w.now = T0;
    w.e.on_time(w.now, &mut w.out);
    let claims = std::mem::take(&mut w.out.claims);
    assert_eq!(claims.len(), 1);
    assert_eq!(&*claims[0].entry, "hb");
    assert_eq!(claims[0].nominal_ms, T0);
    assert_eq!(queued(&mut w, "beat"), 0, "nothing queued before the claim");
    w.e.claim_refused("hb", T0, "this server is not the leader", true, false);
    assert_eq!(queued(&mut w, "beat"), 0);
    w.now = T0 + 10_000;
    w.e.on_time(w.now, &mut w.out);
    let claims = std::mem::take(&mut w.out.claims);
    w.e.claim_granted("hb", claims[0].nominal_ms, false, w.now, &mut w.out);
    assert_eq!(queued(&mut w, "beat"), 1);
    // A grant for an entry a reload removed queues nothing.
    w.e.claim_granted("gone", T0, false, w.now, &mut w.out);
    assert_eq!(queued(&mut w, "beat"), 1);
}

#[test]
fn a_takeover_makes_up_one_missed_run_of_catchup_last_and_counts_the_others() {
    let mut w = clustered(
        "@every 10s beat id=last catchup=last overlap=allow -- {time}\n\
         @every 10s beat id=none overlap=allow -- {time}\n\
         @every 10s beat id=new catchup=last overlap=allow -- {time}\n",
    );
    // The file was loaded at T0 - 5 s; the last leader claimed T0 - 40 s of two entries;
    // this server takes over at T0 + 5 s.
    w.now = T0 + 5_000;
    let records = vec![
        ("last".to_string(), T0 - 40_000),
        ("none".to_string(), T0 - 40_000),
    ];
    w.e.cluster_takeover(&records, w.now, &mut w.out);
    let claims = std::mem::take(&mut w.out.claims);
    assert_eq!(claims.len(), 2, "{claims:?}");
    assert_eq!(&*claims[0].entry, "last");
    assert_eq!(claims[0].nominal_ms, T0, "the latest missed time, once");
    // `new` never ran in the cluster: its time since the load (T0) is made up too.
    assert_eq!(&*claims[1].entry, "new");
    assert_eq!(claims[1].nominal_ms, T0);
    let c = w.conn();
    let listing = w.admin(c, "show schedules");
    let none = listing.lines().find(|l| l.starts_with("none\t")).unwrap();
    let skips: u64 = none.split('\t').nth(9).unwrap().parse().unwrap();
    assert_eq!(skips, 4, "T0-30 s .. T0 missed: {none}");
}

#[test]
fn an_overlap_skip_run_is_reported_ended_when_all_its_jobs_end_for_good() {
    let mut w = clustered(
        "@every 10s sync id=sync overlap=skip fanout=2 -- {time}\n\
         @every 10s beat id=hb overlap=allow -- {time}\n",
    );
    w.now = T0;
    w.e.on_time(w.now, &mut w.out);
    for c in std::mem::take(&mut w.out.claims) {
        w.e.claim_granted(&c.entry, c.nominal_ms, false, w.now, &mut w.out);
    }
    assert_eq!(queued(&mut w, "sync"), 2);
    assert!(w.out.runs_ended.is_empty(), "its jobs are queued");
    let wk = w.conn();
    w.can_do(wk, "sync");
    let (h1, _) = w.grab(wk).unwrap();
    let (h2, _) = w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkComplete {
            handle: h1,
            data: b("ok"),
        },
    );
    assert!(w.out.runs_ended.is_empty(), "one of its two jobs goes on");
    // The next run starts job #0 again; #1 is skipped (still going): the entry's claimed
    // run ends when every job of it here has ended.
    w.now = T0 + 10_000;
    w.e.on_time(w.now, &mut w.out);
    for c in std::mem::take(&mut w.out.claims) {
        w.e.claim_granted(&c.entry, c.nominal_ms, false, w.now, &mut w.out);
    }
    assert!(w.out.runs_ended.is_empty());
    w.req(
        wk,
        Request::WorkFail {
            handle: h2,
            after_handle: b(""),
        },
    );
    assert!(w.out.runs_ended.is_empty(), "the new job #0 is queued");
    let (h3, _) = w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkComplete {
            handle: h3,
            data: b("ok"),
        },
    );
    let ended: Vec<(String, u64)> = w
        .out
        .runs_ended
        .drain(..)
        .map(|(e, n)| (e.to_string(), n))
        .collect();
    assert_eq!(ended, vec![("sync".to_string(), T0 + 10_000)]);
}

/// A server that starts in a cluster is never the leader: the runs that fell while it was
/// down were the leader's, so it counts none as missed (one server alone does).
#[test]
fn a_clustered_server_that_starts_counts_no_runs_missed_while_it_was_down() {
    let skips_after_start = |clustered: bool| {
        let mut w = World::with(EngineConfig {
            handle_prefix: "H:t".into(),
            zone: Zone::Utc,
            ..EngineConfig::default()
        });
        w.now = T0;
        w.e.set_clustered(clustered);
        w.e.restore_schedule_counters("none", Some(T0 - 60_000), [5, 0, 0]);
        let file = parse(
            "@every 10s beat id=none overlap=allow -- {time}\n",
            &Zone::Utc,
        )
        .unwrap();
        w.e.load_schedules(file, w.now, true, &mut w.out);
        let c = w.conn();
        let listing = w.admin(c, "show schedules");
        let row = listing.lines().find(|l| l.starts_with("none\t")).unwrap();
        row.split('\t').nth(9).unwrap().parse::<u64>().unwrap()
    };
    assert_eq!(skips_after_start(false), 6, "alone: T0-50 s .. T0 missed");
    assert_eq!(
        skips_after_start(true),
        0,
        "in a cluster: the leader's to make"
    );
}

/// An operation asked of a clustered server is handed to the cluster, not acted on here, and
/// refused while etcd cannot be reached; its answer waits for the cluster's, and the lines
/// sent behind it wait for it too.
#[test]
fn an_operation_on_a_clustered_server_is_the_clusters() {
    let mut w = clustered("@every 10s beat id=hb overlap=allow -- {time}\n");
    let c = w.conn();
    assert!(
        w.admin(c, "pause schedule hb")
            .starts_with("ERR CLUSTER_UNREACHABLE ")
    );
    w.e.set_cluster_standing(false, true);
    w.e.admin(
        c,
        AdminCommand::parse(&b("pause schedule hb")),
        w.now,
        &mut w.out,
    );
    assert!(w.out.replies.is_empty(), "no answer before the cluster's");
    assert!(w.e.input_paused(c), "its later lines wait");
    let asked = w.e.take_cluster_ops();
    assert_eq!(asked.len(), 1);
    let ticket = asked[0].0;
    let listing = w.admin(c, "show schedules");
    assert!(listing.contains("\tactive\t"), "not paused here: {listing}");
    // The cluster's record says paused: every server shows it; then etcd's answer comes.
    w.e.cluster_ops_seen("hb", true, false, w.now);
    w.e.cluster_op_done(ticket, Ok(()), &mut w.out);
    assert_eq!(std::mem::take(&mut w.out.resumed), vec![c]);
    assert!(!w.e.input_paused(c));
    let replies = std::mem::take(&mut w.out.replies);
    assert_eq!(replies, vec![(c, Response::text("OK\r\n"))]);
    let listing = w.admin(c, "show schedules");
    assert!(listing.contains("\tpaused\t"), "{listing}");
    // An ask etcd did not take is answered with why; one whose asker left, with nothing.
    w.e.admin(
        c,
        AdminCommand::parse(&b("skip schedule hb")),
        w.now,
        &mut w.out,
    );
    let ticket = w.e.take_cluster_ops()[0].0;
    w.e.cluster_op_done(ticket, Err("etcd refused it".into()), &mut w.out);
    let replies = std::mem::take(&mut w.out.replies);
    let reply = format!("{replies:?}");
    assert!(
        reply.contains("ERR CLUSTER_UNREACHABLE etcd+refused+it"),
        "{reply}"
    );
    w.out.resumed.clear();
    w.e.admin(
        c,
        AdminCommand::parse(&b("resume schedule hb")),
        w.now,
        &mut w.out,
    );
    let ticket = w.e.take_cluster_ops()[0].0;
    w.e.disconnect(c, w.now, &mut w.out);
    w.e.cluster_op_done(ticket, Ok(()), &mut w.out);
    assert!(w.out.replies.is_empty() && w.out.resumed.is_empty());
}

#[test]
fn two_servers_sets_of_an_after_child_merge_and_the_leader_runs_it() {
    let mut w =
        clustered("@every 1d pa id=a\n@every 1d pb id=b\n@after a,b child id=c -- {after}\n");
    let run = |id: &str, ended: u64| {
        format!(
            r#"{{"id":"{id}","handle":"H:x:{ended}","scheduled":{ended},"ended":{ended},"ok":true}}"#
        )
    };
    // The set as this server knows it: a ran (on the leader before a failover).
    let mine = format!("[{}]", run("a", T0));
    w.e.cluster_after_seen("c", mine.as_bytes(), w.now, &mut w.out);
    w.e.set_cluster_standing(true, true);
    // This server, leading now, wrote its set and met another: b's run, and an older a.
    let theirs = format!("[{},{}]", run("a", T0 - 60_000), run("b", T0 + 1_000));
    w.e.cluster_after_conflict("c", theirs.as_bytes(), w.now, &mut w.out);
    // Both parents ran: the child is claimed, made from a's newest run and b's.
    let claims = std::mem::take(&mut w.out.claims);
    assert_eq!(claims.len(), 1, "the child's run is claimed");
    assert_eq!(&*claims[0].entry, "c");
    w.e.claim_granted("c", claims[0].nominal_ms, false, w.now, &mut w.out);
    assert_eq!(queued(&mut w, "child"), 1);
    let sets = w.e.take_cluster_after_sets();
    assert_eq!(sets, vec![("c".to_string(), b"[]".to_vec())], "spent");

    // Met again later with the set it was made from: nothing comes back from it.
    w.e.cluster_after_conflict("c", theirs.as_bytes(), w.now, &mut w.out);
    assert!(
        w.out.claims.is_empty(),
        "no second run from the same parents' runs"
    );
}

/// A backfill asked of a clustered server is handed to the cluster, and its `OK N` waits for
/// the cluster's answer, as an operation's (the lines sent behind it wait too); an answer
/// that etcd did not take it is the error; a dry run is answered at once.
#[test]
fn a_backfill_on_a_clustered_server_is_answered_when_the_cluster_answers() {
    let mut w = clustered("17 3 * * * beat id=b -- {time}\n");
    let c = w.conn();
    let range = "2026-11-20T00:00:00Z 2026-11-22T04:00:00Z";
    w.e.set_cluster_standing(false, true);
    let dry = w.admin(c, &format!("backfill schedule b {range} dry-run"));
    assert_eq!(dry.lines().count(), 4, "{dry}");
    assert!(
        w.e.take_cluster_backfills().is_empty(),
        "a dry run asks nothing"
    );
    let line = format!("backfill schedule b {range}");
    w.e.admin(c, AdminCommand::parse(&b(&line)), w.now, &mut w.out);
    assert!(w.out.replies.is_empty(), "no answer before the cluster's");
    assert!(w.e.input_paused(c), "its later lines wait");
    let asked = w.e.take_cluster_backfills();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].2.left, 3);
    w.e.cluster_op_done(asked[0].0, Ok(()), &mut w.out);
    assert_eq!(std::mem::take(&mut w.out.resumed), vec![c]);
    assert!(!w.e.input_paused(c));
    let replies = std::mem::take(&mut w.out.replies);
    assert_eq!(replies, vec![(c, Response::text("OK 3\n"))]);
    // Not taken: the error, with why.
    w.e.admin(c, AdminCommand::parse(&b(&line)), w.now, &mut w.out);
    let ticket = w.e.take_cluster_backfills()[0].0;
    w.e.cluster_op_done(ticket, Err("etcd refused it".into()), &mut w.out);
    let reply = format!("{:?}", std::mem::take(&mut w.out.replies));
    assert!(
        reply.contains("ERR CLUSTER_UNREACHABLE etcd+refused+it"),
        "{reply}"
    );
}

#[test]
fn a_new_leader_claims_one_backfilled_time_at_a_time_and_keeps_a_grant_the_entry_is_busy_for() {
    use crate::store::PendingSpan;
    let mut w = clustered("17 3 * * * beat id=b -- {time}\n");
    // etcd holds a backfill of three daily times from 2026-11-19T03:17:00Z.
    let first = 1_795_058_220_000;
    let day = 86_400_000;
    let span = |after_ms, left| PendingSpan {
        after_ms,
        to_ms: first + 2 * day,
        left,
        backfill: true,
    };
    w.e.cluster_backfill_seen("b", vec![span(first - 1, 3)]);
    w.e.set_cluster_standing(true, true);
    w.e.cluster_release(w.now, &mut w.out);
    let asked = w.e.take_cluster_backfill_runs();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].2, Some(first));
    // The takeover's records come a turn later, and etcd's watch shows the time taken off
    // before the claim's answer: still no second claim while the first is out (it could be
    // granted the next time while the first runs).
    w.e.cluster_takeover(&[], w.now, &mut w.out);
    w.e.cluster_backfill_seen("b", vec![span(first, 2)]);
    w.e.cluster_release(w.now, &mut w.out);
    assert!(w.e.take_cluster_backfill_runs().is_empty());
    w.e.cluster_backfill_ran("b", Ok(Some(first)), w.now, &mut w.out);
    assert_eq!(queued(&mut w, "beat"), 1);
    w.e.cluster_release(w.now, &mut w.out);
    assert!(
        w.e.take_cluster_backfill_runs().is_empty(),
        "the next waits for the run to end"
    );
    // A grant that finds the entry's previous run still going is this server's to run (etcd
    // took it off the record): it waits, then starts when that run ends.
    w.e.cluster_backfill_ran("b", Ok(Some(first + day)), w.now, &mut w.out);
    assert_eq!(queued(&mut w, "beat"), 1);
    let wk = w.conn();
    w.can_do(wk, "beat");
    let (h, data) = w.grab(wk).unwrap();
    assert!(data.starts_with(b"2026-11-19"), "{data:?}");
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    let (_, data) = w
        .grab(wk)
        .expect("the granted run started when the first ended");
    assert!(data.starts_with(b"2026-11-20"), "{data:?}");
    assert!(w.e.take_cluster_backfill_runs().is_empty());
}
