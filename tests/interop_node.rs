//! Interop with the node Gearman libraries users run, each as worker
//! and client of a real gearwheel: gearmanode 0.9.2, abraxas 2.1.10, node-gearman 0.2.2 and
//! gearman-node 2.0.13, installed by `npm ci` in tests/interop/node (pinned by its lock file).
//! The programs are tests/interop/node/LIBRARY.js (their one command line in main.js); what
//! each library sends, and its quirks, are written at the top of each.
//!
//! Against gearmand 1.1.20 the same programs give the same answers except for abraxas: its
//! worker follows a WORK_EXCEPTION with a WORK_FAIL for the same job, which gearmand answers
//! with ERROR JOB_NOT_FOUND, and the worker process dies of the unhandled error. gearwheel
//! drops that WORK_FAIL, as it does Perl's (the job has ended), so the worker goes on. And
//! gearmand refuses abraxas's submitJobSched (`ERROR INVALID_COMMAND`).

mod support;

use support::*;

const GEARMANODE: LibProgram = LibProgram {
    program: "node",
    before_port: &["node/gearmanode.js"],
};
const ABRAXAS: LibProgram = LibProgram {
    program: "node",
    before_port: &["node/abraxas.js"],
};
const NODE_GEARMAN: LibProgram = LibProgram {
    program: "node",
    before_port: &["node/node-gearman.js"],
};
const GEARMAN_NODE: LibProgram = LibProgram {
    program: "node",
    before_port: &["node/gearman-node.js"],
};

/// Background jobs of three priorities queued before any worker runs: High first, Low last.
fn background_order(lib: &LibProgram, names: [&str; 3]) {
    let s = Server::start(&[]);
    lib.client(&s, "background", "");
    queued_jobs_run_by_priority(&s, 1, |s| lib.worker(s), &names);
}

#[test]
fn gearmanode_worker_and_client() {
    if !need("node with the npm package gearmanode") {
        return;
    }
    let s = Server::start(&[]);
    let _w = GEARMANODE.worker(&s);
    assert_eq!(
        GEARMANODE.client(&s, "do", ""),
        "option exceptions\n\
         normal complete:olleh\n\
         high complete:hgih\n\
         low complete:wol\n\
         progress status:1/2 data:chunk warning:careful status:2/2 complete:done:p\n\
         fail failed\n\
         throw exception:boom\n"
    );
}

#[test]
fn gearmanode_background_priorities() {
    if !need("node with the npm package gearmanode") {
        return;
    }
    background_order(&GEARMANODE, ["H1", "N1", "L1"]);
}

/// abraxas asks for exceptions on every connection; its worker's `task.error()` and a thrown
/// error are each a WORK_EXCEPTION followed by a WORK_FAIL.
#[test]
fn abraxas_worker_and_client() {
    if !need("node with the npm package abraxas") {
        return;
    }
    let s = Server::start(&[]);
    let mut w = ABRAXAS.worker(&s);
    assert_eq!(
        ABRAXAS.client(&s, "do", ""),
        "echo ping\n\
         normal complete:olleh\n\
         high complete:hgih\n\
         low complete:wol\n\
         progress status:0.5 status:1 warnings:careful complete:done:p\n\
         fail error:nope\n\
         throw error:Error: boom\n"
    );
    // The WORK_FAIL after each WORK_EXCEPTION got no ERROR: the worker is still serving.
    assert!(w.running(), "{}", w.describe());
    assert_eq!(ABRAXAS.client(&s, "do", "").lines().count(), 7);
}

#[test]
fn abraxas_background_priorities() {
    if !need("node with the npm package abraxas") {
        return;
    }
    background_order(&ABRAXAS, ["H1", "N1", "L1"]);
}

/// GET_STATUS, and the `status` and `workers` admin commands abraxas sends on the same
/// connection as its binary packets, while a job is held.
#[test]
fn abraxas_status_and_admin() {
    if !need("node with the npm package abraxas") {
        return;
    }
    let s = Server::start(&[]);
    let _w = ABRAXAS.worker(&s);
    let dir = TempDir::new("abraxas");
    let flag = dir.path("release");
    assert_eq!(
        ABRAXAS.client(&s, "admin", flag.to_str().unwrap()),
        "get_status 1 1 0.42\n\
         status hold {\"function\":\"hold\",\"inqueue\":1,\"running\":1,\"workers\":1}\n\
         workers 1 fail,hold,log,progress,reverse,throw\n\
         hold released\n"
    );
}

/// submitJobAt (SUBMIT_JOB_EPOCH) runs on time; submitJobSched (SUBMIT_JOB_SCHED, which
/// gearmand refuses) is accepted and waits in `show scheduled`.
#[test]
fn abraxas_epoch_and_sched() {
    if !need("node with the npm package abraxas") {
        return;
    }
    let s = Server::start(&[]);
    let mut w = ABRAXAS.worker(&s);
    let before = now_f64();
    assert_eq!(ABRAXAS.client(&s, "epoch", "2"), "epoch submitted true\n");
    w.wait_stdout("job log at\n", 10);
    assert!(now_f64() - before >= 1.0, "the epoch job ran early");
    assert_eq!(
        ABRAXAS.client(&s, "sched", "*,*,*,*,*"),
        "sched submitted true\n"
    );
    let mut admin = s.connect();
    let scheduled = admin.admin("show scheduled", true);
    assert_eq!(scheduled.lines().count(), 2, "{scheduled:?}");
    assert!(scheduled.contains("\tlog\t"), "{scheduled:?}");
}

/// node-gearman keeps one GRAB_JOB outstanding per registered function, and runs several
/// foreground jobs at once on one client connection.
#[test]
fn node_gearman_worker_and_client() {
    if !need("node with the npm package node-gearman") {
        return;
    }
    let s = Server::start(&[]);
    let _w = NODE_GEARMAN.worker(&s);
    assert_eq!(
        NODE_GEARMAN.client(&s, "do", ""),
        "normal end [\"olleh\"]\n\
         high end [\"hgih\"]\n\
         low end [\"wol\"]\n\
         chunks end [\"a-\",\"b-\",\"c:x\"]\n\
         fail error Job failed []\n\
         parallel end [\"eno\"] | end [\"owt\"] | end [\"eerht\"]\n"
    );
}

#[test]
fn node_gearman_background_priorities() {
    if !need("node with the npm package node-gearman") {
        return;
    }
    // The library sends one more (empty) argument after a background job's data.
    background_order(
        &NODE_GEARMAN,
        ["\"H1\\u0000\"", "\"N1\\u0000\"", "\"L1\\u0000\""],
    );
}

/// gearman-node: one connection per function on the worker side.
#[test]
fn gearman_node_worker_and_client() {
    if !need("node with the npm package gearman-node") {
        return;
    }
    let s = Server::start(&[]);
    let _w = GEARMAN_NODE.worker(&s);
    assert_eq!(
        GEARMAN_NODE.client(&s, "do", ""),
        "normal complete:olleh\n\
         progress status:1/2 data:chunk warning:careful status:2/2 complete:done:p\n\
         fail warning:nope fail\n\
         parallel complete:eno | complete:owt | complete:eerht\n"
    );
}
