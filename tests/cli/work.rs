//! `gearwheel work` and `gearwheel submit` as real processes against the real server: results,
//! failures, timeouts, concurrency, graceful stop, requeue after a worker dies, reconnecting,
//! and the PHP client against a `gearwheel work` worker.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use gearwheel::client::SubmitKind;
use gearwheel::proto::PacketType;
use support::*;

fn submit(s: &Server, args: &[&str], stdin: Option<&[u8]>) -> Out {
    let addr = s.addr.to_string();
    let mut a = vec!["submit", "-s", &addr];
    a.extend_from_slice(args);
    gw(&a, stdin, 20)
}

#[test]
fn tr_worker_serves_submit() {
    let s = Server::start(&[]);
    let w = work_process(&s, "up", &[], &["tr", "a-z", "A-Z"]);
    let o = submit(&s, &["-f", "up", "hello"], None);
    assert_eq!((o.code(), o.stdout.as_str()), (Some(0), "HELLO"), "{o:?}");
    // "-" and no data both read stdin.
    let o = submit(&s, &["-f", "up", "-"], Some(b"from stdin\n"));
    assert_eq!(o.stdout, "FROM STDIN\n");
    let o = submit(&s, &["-f", "up", "--priority", "high"], Some(b"piped"));
    assert_eq!(o.stdout, "PIPED");
    // The worker logs one line per job: function, handle, exit status, duration.
    w.wait_log("status=exit:0", 5);
    let line = w
        .stderr()
        .lines()
        .find(|l| l.contains("function=up"))
        .unwrap()
        .to_string();
    assert!(
        line.contains("handle=H:") && line.contains("duration="),
        "{line}"
    );
}

#[test]
fn the_environment_names_the_job() {
    let s = Server::start(&[]);
    let _w = work_process(
        &s,
        "env",
        &[],
        &[
            "sh",
            "-c",
            "printf '%s|%s|%s' \"$GEARMAN_FUNCTION\" \"$GEARMAN_UNIQUE\" \"$GEARMAN_HANDLE\"",
        ],
    );
    let o = submit(&s, &["-f", "env", "--unique", "u-42", "x"], None);
    let parts: Vec<&str> = o.stdout.split('|').collect();
    assert_eq!(&parts[..2], &["env", "u-42"], "{o:?}");
    assert!(parts[2].starts_with("H:"), "{o:?}");
}

#[test]
fn a_failing_command_is_an_exception_with_its_status() {
    let s = Server::start(&[]);
    let w = work_process(
        &s,
        "bad",
        &[],
        &["sh", "-c", "cat >/dev/null; echo 'bad input' >&2; exit 3"],
    );
    let o = submit(&s, &["-f", "bad", "x"], None);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.stderr.contains("failed: exit status 3: bad input"),
        "{}",
        o.stderr
    );
    assert_eq!(o.stdout, "");
    w.wait_log("status=exit:3", 5);

    // A client that did not ask for exceptions gets WORK_FAIL instead, after the stderr
    // as WORK_WARNING.
    let mut c = client(&s);
    let h = c.submit(SubmitKind::Normal, b"bad", b"", b"x").unwrap();
    let f = c.recv().unwrap();
    let mut warning = h.to_vec();
    warning.extend_from_slice(b"\0bad input\n");
    assert_eq!(
        (f.ptype, f.body.to_vec()),
        (PacketType::WorkWarning, warning)
    );
    let f = c.recv().unwrap();
    assert_eq!((f.ptype, f.body), (PacketType::WorkFail, h));
}

#[test]
fn a_command_past_the_timeout_is_killed_and_reported() {
    let s = Server::start(&[]);
    let w = work_process(&s, "slow", &["--timeout", "1s"], &["sleep", "10"]);
    let start = Instant::now();
    let o = submit(&s, &["-f", "slow", "x"], None);
    let took = start.elapsed();
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.stderr.contains("timed out after 1s; killed"),
        "{}",
        o.stderr
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    w.wait_log("status=timeout", 5);
    // The worker takes the next job at once.
    let o = submit(&s, &["-f", "slow", "y"], None);
    assert!(o.stderr.contains("timed out"), "{o:?}");
}

#[test]
fn concurrency_runs_jobs_at_the_same_time() {
    let s = Server::start(&[]);
    let dir = TempDir::new("overlap");
    let log = dir.join("times");
    let log_s = log.to_str().unwrap().to_string();
    let _w = work_process_env(
        &s,
        "par",
        &["-c", "2"],
        &[
            "sh",
            "-c",
            "echo \"start $(date +%s%N)\" >> \"$LOG\"; sleep 1; echo \"end $(date +%s%N)\" >> \"$LOG\"; cat",
        ],
        &[("LOG", &log_s)],
    );
    wait_workers(&s, "par", 2);
    let addr = s.addr.to_string();
    let clients: Vec<_> = ["a", "b"]
        .iter()
        .map(|d| Proc::gearwheel(&["submit", "-s", &addr, "-f", "par", d], &[]))
        .collect();
    let mut outs = Vec::new();
    for mut c in clients {
        assert_eq!(c.wait_exit(10).map(|s| s.success()), Some(true));
        outs.push(c.stdout());
    }
    outs.sort();
    assert_eq!(outs, vec!["a", "b"]);
    let text = std::fs::read_to_string(&log).unwrap();
    let times = |kind: &str| -> Vec<u128> {
        text.lines()
            .filter_map(|l| l.strip_prefix(kind)?.trim().parse().ok())
            .collect()
    };
    let (starts, ends) = (times("start"), times("end"));
    assert_eq!((starts.len(), ends.len()), (2, 2), "{text}");
    // Both started before either ended: they overlapped.
    assert!(
        starts.iter().max() < ends.iter().min(),
        "no overlap: {text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn one_slot_runs_one_job_at_a_time_over_two_servers() {
    let s1 = Server::start(&[]);
    let s2 = Server::start(&[]);
    let dir = TempDir::new("serial");
    let log = dir.join("times");
    let log_s = log.to_str().unwrap().to_string();
    let (a1, a2) = (s1.addr.to_string(), s2.addr.to_string());
    let _w = Proc::gearwheel(
        &[
            "work",
            "-s",
            &a1,
            "-s",
            &a2,
            "-f",
            "one",
            "--",
            "sh",
            "-c",
            "echo \"start $(date +%s%N)\" >> \"$LOG\"; sleep 0.5; echo \"end $(date +%s%N)\" >> \"$LOG\"",
        ],
        &[("LOG", &log_s)],
    );
    wait_workers(&s1, "one", 1);
    wait_workers(&s2, "one", 1);
    let c1 = Proc::gearwheel(&["submit", "-s", &a1, "-f", "one", "x"], &[]);
    let c2 = Proc::gearwheel(&["submit", "-s", &a2, "-f", "one", "y"], &[]);
    for mut c in [c1, c2] {
        assert_eq!(c.wait_exit(10).map(|s| s.success()), Some(true));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let kinds: Vec<&str> = text.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(kinds, vec!["start", "end", "start", "end"], "{text}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sigterm_lets_the_running_job_finish_and_takes_no_more() {
    let s = Server::start(&[]);
    let mut w = work_process(&s, "job", &[], &["sh", "-c", "sleep 1; cat"]);
    let addr = s.addr.to_string();
    let mut submitter = Proc::gearwheel(&["submit", "-s", &addr, "-f", "job", "payload"], &[]);
    wait_until(5, "the job to run", || {
        status_of(&s, "job").is_some_and(|(_, running, _)| running == 1)
    });
    w.signal(libc::SIGTERM);
    w.wait_log("stopping", 5);
    // A job submitted now is not taken by the stopping worker.
    let h = client(&s)
        .submit(SubmitKind::NormalBg, b"job", b"", b"later")
        .unwrap();
    let h = String::from_utf8_lossy(&h).into_owned();
    assert_eq!(submitter.wait_exit(10).map(|s| s.success()), Some(true));
    assert_eq!(submitter.stdout(), "payload");
    let st = w.wait_exit(10).expect("worker exits");
    assert!(st.success(), "{st:?}\n{}", w.stderr());
    assert_eq!(status_of(&s, "job"), Some((1, 0, 0)), "{h} stays queued");
}

#[test]
fn a_worker_killed_mid_job_leads_to_a_requeue() {
    let s = Server::start(&[]);
    let dir = TempDir::new("requeue");
    let pidfile = dir.join("pid");
    let pid_s = pidfile.to_str().unwrap().to_string();
    let mut first = work_process_env(
        &s,
        "rq",
        &[],
        &["sh", "-c", "echo $$ > \"$PIDFILE\"; exec sleep 30"],
        &[("PIDFILE", &pid_s)],
    );
    let addr = s.addr.to_string();
    let mut client = Proc::gearwheel(&["submit", "-s", &addr, "-f", "rq", "again"], &[]);
    wait_until(5, "the first worker to start the job", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|p| p.ends_with('\n'))
    });
    let _second = work_process(&s, "rq", &[], &["sh", "-c", "printf 'second:'; cat"]);
    wait_workers(&s, "rq", 2);
    first.signal(libc::SIGKILL);
    first.wait_exit(5).expect("killed");
    assert_eq!(client.wait_exit(10).map(|s| s.success()), Some(true));
    assert_eq!(client.stdout(), "second:again");
    let orphan: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill(2) on the `sleep` the killed worker left behind.
    unsafe {
        libc::kill(orphan, libc::SIGKILL);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_worker_reconnects_when_the_server_comes_back() {
    let s = Server::start(&[]);
    let port = s.port().to_string();
    let addr = s.addr.to_string();
    let w = work_process(&s, "rc", &[], &["tr", "a-z", "A-Z"]);
    drop(s);
    w.wait_log(&format!("{addr}: the server closed the connection"), 5);
    let s = Server::start_args(&["serve", "-p", &port, "--verbose", "INFO"]);
    wait_workers(&s, "rc", 1);
    let o = submit(&s, &["-f", "rc", "back"], None);
    assert_eq!(o.stdout, "BACK", "{o:?}");
    // Waited for, not read once: the line may still be on its way through the pipe.
    w.wait_log(&format!("connected to {addr}"), 5);
}

#[test]
fn background_submit_prints_the_handle_and_the_job_runs() {
    let s = Server::start(&[]);
    let dir = TempDir::new("bg");
    let out = dir.join("out");
    let out_s = out.to_str().unwrap().to_string();
    let _w = work_process_env(
        &s,
        "bg",
        &[],
        &["sh", "-c", "cat > \"$OUT\""],
        &[("OUT", &out_s)],
    );
    let o = submit(
        &s,
        &["-f", "bg", "--background", "--priority", "low", "queued"],
        None,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let handle = o.stdout.trim();
    assert!(
        handle.starts_with("H:") && !handle.contains(' '),
        "{handle}"
    );
    wait_until(5, "the background job", || {
        std::fs::read_to_string(&out).is_ok_and(|s| s == "queued")
    });
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn submit_reports_bad_flags_and_unreachable_servers() {
    let o = gw(&["submit", "-f", "x", "--priority", "urgent", "d"], None, 5);
    assert_eq!(o.code(), Some(2), "{o:?}");
    assert!(o.stderr.contains("urgent"));
    let o = gw(
        &["submit", "-f", "x", "--at", "5", "--in", "5s", "d"],
        None,
        5,
    );
    assert_eq!(o.code(), Some(2), "{o:?}");
    // Port 1 on loopback: nothing listens there.
    let o = gw(&["submit", "-s", "127.0.0.1:1", "-f", "x", "d"], None, 10);
    assert_eq!(o.code(), Some(3), "{o:?}");
    assert!(
        o.stderr.contains("cannot connect to 127.0.0.1:1"),
        "{}",
        o.stderr
    );
    let o = gw(&["work", "-f", "x"], None, 5);
    assert_eq!(o.code(), Some(2), "{o:?}");
    assert!(o.stderr.contains("after `--`"), "{}", o.stderr);
}

#[test]
fn ports_that_are_not_ports_are_bad_flags_in_words() {
    for cmd in [
        &["submit", "-s", "127.0.0.1:abc", "-f", "x", "d"][..],
        &["submit", "-s", "127.0.0.1:70000", "-f", "x", "d"],
        &["admin", "-s", "127.0.0.1:70000", "status"],
        &["admin", "-s", "[::1]:abc", "status"],
        &["work", "-s", "127.0.0.1:0", "-f", "x", "--", "cat"],
    ] {
        let o = gw(cmd, None, 10);
        assert_eq!(o.code(), Some(2), "{cmd:?}: {o:?}");
        let port = cmd[2].rsplit(':').next().unwrap();
        let want = format!("{port} is not a port (1-65535)");
        assert!(o.stderr.contains(&want), "{cmd:?}: {}", o.stderr);
    }
    for (env, cmd) in [
        ("GEARMAN_SERVERS", &["submit", "-f", "x", "d"][..]),
        ("GEARMAN_SERVER", &["admin", "status"]),
    ] {
        let o = gw_env(cmd, &[(env, "127.0.0.1:4730,box:99999")]);
        assert_eq!(o.code(), Some(2), "{cmd:?}: {o:?}");
        assert!(
            o.stderr.contains("99999 is not a port (1-65535)"),
            "{}",
            o.stderr
        );
    }
    // The server's own port flags: 0 picks a free port, so it is one.
    for args in [
        &["serve", "-p", "70000"][..],
        &["serve", "--http-port", "65536"],
        &["serve", "-L", "127.0.0.1:99999"],
    ] {
        let o = gw(args, None, 10);
        assert_eq!(o.code(), Some(2), "{args:?}: {o:?}");
        assert!(
            o.stderr
                .contains("is not a port (1-65535, or 0 for any free port)"),
            "{args:?}: {}",
            o.stderr
        );
    }
}

/// `gw` with these environment variables set.
fn gw_env(args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gearwheel"));
    c.args(args).envs(env.iter().copied());
    run_out(&mut c, None, 10)
}

#[test]
fn submit_shows_the_servers_refusal_and_exits_1() {
    // Protected mode: a peer beyond loopback gets one ERROR, which says what to do, and the
    // close; the submitter must show that text, not the close.
    if !support::netns::inside(
        module_path!(),
        "submit_shows_the_servers_refusal_and_exits_1",
    ) {
        return;
    }
    let s = Server::start(&["-L", "0.0.0.0"]);
    let far = format!("{}:{}", support::netns::FAR, s.port());
    for cmd in [
        &["submit", "-s", &far, "-f", "f", "x"][..],
        &["submit", "-s", &far, "-b", "-f", "f", "x"],
        &["admin", "-s", &far, "status"],
    ] {
        let o = gw(cmd, None, 20);
        assert_eq!(o.code(), Some(1), "{cmd:?}: {o:?}");
        assert!(
            o.stderr.contains("PROTECTED_MODE") && o.stderr.contains("--acl FILE"),
            "{cmd:?}: {}",
            o.stderr
        );
    }
    // An access list that lets this peer read but not submit.
    let dir = TempDir::new("cli-acl");
    let acl = dir.path("acl");
    std::fs::write(&acl, "addr:127.0.0.1 status *\n").unwrap();
    let s = Server::start(&["--acl", acl.to_str().unwrap()]);
    for bg in [false, true] {
        let mut args = vec!["-f", "f", "x"];
        if bg {
            args.push("-b");
        }
        let o = submit(&s, &args, None);
        assert_eq!(o.code(), Some(1), "{o:?}");
        assert!(
            o.stderr.contains(
                "PERMISSION_DENIED: submit on function f is not granted to addr:127.0.0.1"
            ),
            "{}",
            o.stderr
        );
    }
}

#[test]
fn php_client_against_a_gearwheel_worker() {
    if !need("php-cli with the gearman extension (php-gearman)") {
        return;
    }
    let s = Server::start(&[]);
    let _up = work_process(&s, "up", &[], &["tr", "a-z", "A-Z"]);
    let _bad = work_process(&s, "bad", &[], &["sh", "-c", "echo nope >&2; exit 4"]);
    let code = format!(
        r#"
        $c = new GearmanClient();
        $c->addServer('127.0.0.1', {port});
        $c->setTimeout(8000);
        $r = $c->doNormal('up', 'hello php');
        echo 'up ', $r, ' ', $c->returnCode() == GEARMAN_SUCCESS ? 'SUCCESS' : $c->returnCode(), "\n";
        $r = @$c->doNormal('bad', 'x');
        $rc = $c->returnCode();
        echo 'bad ', $rc == GEARMAN_WORK_EXCEPTION ? 'WORK_EXCEPTION' : ($rc == GEARMAN_WORK_FAIL ? 'WORK_FAIL' : $rc), "\n";
        "#,
        port = s.port()
    );
    let o = run_out(Command::new("php").arg("-r").arg(code), None, 20);
    assert!(o.status.success(), "{o:?}");
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines[0], "up HELLO PHP SUCCESS", "{o:?}");
    assert!(
        lines[1] == "bad WORK_EXCEPTION" || lines[1] == "bad WORK_FAIL",
        "{o:?}"
    );
}

/// `gearwheel admin output HANDLE` against `s`.
fn output_of(s: &Server, handle: &str) -> Out {
    let addr = s.addr.to_string();
    gw(&["admin", "-s", &addr, "output", handle], None, 10)
}

#[test]
fn stderr_can_be_watched_while_the_command_runs_and_is_kept_after() {
    let s = Server::start(&[]);
    let dir = TempDir::new("watch");
    let go = dir.join("go");
    let go_s = go.to_str().unwrap().to_string();
    let _w = work_process_env(
        &s,
        "backup",
        &[],
        &[
            "sh",
            "-c",
            "echo 'step 1' >&2; while [ ! -e \"$GO\" ]; do sleep 0.05; done; \
             echo 'step 2' >&2; echo done",
        ],
        &[("GO", &go_s)],
    );
    let o = submit(&s, &["-f", "backup", "--background", "x"], None);
    let handle = o.stdout.trim().to_string();
    assert!(handle.starts_with("H:"), "{o:?}");
    // While it runs: the first line is there, the command waits for us.
    wait_until(10, "the first stderr line, live", || {
        output_of(&s, &handle).stdout == "step 1\n"
    });
    std::fs::write(&go, b"").unwrap();
    // Once it ended: stderr then stdout, the result, kept by its handle.
    wait_until(10, "the whole output, kept", || {
        output_of(&s, &handle).stdout == "step 1\nstep 2\ndone\n"
    });
    let o = output_of(&s, &handle);
    assert_eq!((o.code(), o.stderr.as_str()), (Some(0), ""), "{o:?}");
    // A handle nothing is kept of is an error.
    let o = output_of(&s, "H:nothing:1");
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("NOT_FOUND"), "{o:?}");
    let _ = std::fs::remove_dir_all(dir);
}
