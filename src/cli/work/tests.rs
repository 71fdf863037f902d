//! The unit tests of work.rs.

use super::*;

fn spec(cmd: &[&str], timeout: Option<Duration>) -> Arc<Shared> {
    Arc::new(Shared {
        spec: Spec {
            functions: vec!["f".into()],
            servers: vec![],
            concurrency: 1,
            timeout,
            id: "t".into(),
            command: cmd.iter().map(|s| s.to_string()).collect(),
        },
        stop: AtomicBool::new(false),
        free: Mutex::new(1),
        freed: Condvar::new(),
        running: Mutex::new(Vec::new()),
        tls: None,
    })
}

fn job(data: &[u8]) -> Assignment {
    Assignment {
        handle: bytes::Bytes::from_static(b"H:t:1"),
        function: bytes::Bytes::from_static(b"up"),
        unique: bytes::Bytes::from_static(b"u-1"),
        data: bytes::Bytes::copy_from_slice(data),
    }
}

#[test]
fn stdout_is_the_result_and_the_environment_is_set() {
    let s = spec(
        &[
            "sh",
            "-c",
            "tr a-z A-Z; printf ' %s %s %s' \"$GEARMAN_FUNCTION\" \"$GEARMAN_HANDLE\" \"$GEARMAN_UNIQUE\"",
        ],
        None,
    );
    match run_job(&s, &job(b"hello"), &mut |_| {}) {
        Outcome::Done(out) => assert_eq!(out, b"HELLO up H:t:1 u-1"),
        o => panic!("{o:?}"),
    }
    assert!(lock(&s.running).is_empty());
}

#[test]
fn a_failure_reports_the_status_and_the_stderr_tail() {
    let s = spec(&["sh", "-c", "echo first >&2; echo oops >&2; exit 3"], None);
    let o = run_job(&s, &job(b""), &mut |_| {});
    assert_eq!(o.text(), "exit status 3: first\noops");
    assert_eq!(o.short(), "exit:3");
    assert_eq!(o.reply().0, PacketType::WorkException);
    let s = spec(&["sh", "-c", "kill -9 $$"], None);
    let o = run_job(&s, &job(b""), &mut |_| {});
    assert_eq!(
        (o.text().as_str(), o.short().as_str()),
        ("killed by signal 9", "signal:9")
    );
    let s = spec(&["/nonexistent/command"], None);
    let o = run_job(&s, &job(b""), &mut |_| {});
    assert!(
        o.text().starts_with("cannot run /nonexistent/command"),
        "{}",
        o.text()
    );
}

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let s = spec(
        &["sh", "-c", "sleep 10 & sleep 10; echo never"],
        Some(Duration::from_millis(300)),
    );
    let t = Instant::now();
    let o = run_job(&s, &job(b""), &mut |_| {});
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(o.text(), "timed out after 300ms; killed");
    assert_eq!(o.short(), "timeout");
}

#[test]
fn stderr_goes_out_in_lines_while_the_command_runs() {
    let s = spec(
        &[
            "sh",
            "-c",
            "printf 'one\\ntw' >&2; sleep 1; printf 'o\\nthree' >&2; echo result",
        ],
        None,
    );
    let mut sent: Vec<(Vec<u8>, Instant)> = Vec::new();
    let o = run_job(&s, &job(b""), &mut |l| {
        sent.push((l.to_vec(), Instant::now()))
    });
    let ended = Instant::now();
    assert!(
        matches!(o, Outcome::Done(ref out) if out == b"result\n"),
        "{o:?}"
    );
    let texts: Vec<&[u8]> = sent.iter().map(|(l, _)| &l[..]).collect();
    assert_eq!(texts, [&b"one\n"[..], b"two\n", b"three"]);
    // The first line went out while the command still ran, not at its end.
    assert!(ended - sent[0].1 >= Duration::from_millis(500), "{sent:?}");
}

#[test]
fn a_long_line_goes_out_in_pieces() {
    let mut l = Lines::default();
    let mut sent = Vec::new();
    l.push(&vec![b'x'; WARNING_MAX + 10], &mut |p| sent.push(p.len()));
    l.push(b"\nend", &mut |p| sent.push(p.len()));
    l.finish(&mut |p| sent.push(p.len()));
    assert_eq!(sent, [WARNING_MAX, 11, 3]);
}

#[test]
fn a_large_workload_goes_through_without_deadlock() {
    let data = vec![b'a'; 1 << 20];
    let s = spec(&["cat"], None);
    match run_job(&s, &job(&data), &mut |_| {}) {
        Outcome::Done(out) => assert_eq!(out.len(), 1 << 20),
        o => panic!("{o:?}"),
    }
    // A command that ignores its input still finishes.
    let s = spec(&["true"], None);
    assert!(matches!(
        run_job(&s, &job(&data), &mut |_| {}),
        Outcome::Done(_)
    ));
}

#[test]
fn stderr_tail_is_cut_at_a_line() {
    assert_eq!(tail(b"  short\n", 100), "short");
    assert_eq!(tail(b"line one\nline two\nline three\n", 16), "line three");
    assert_eq!(tail("ééé".as_bytes(), 3), "é");
}

#[test]
fn flags_are_checked() {
    let a = |f: &dyn Fn(&mut WorkArgs)| {
        let mut w = WorkArgs {
            function: vec!["f".into()],
            concurrency: 1,
            command: vec!["cat".into()],
            ..Default::default()
        };
        f(&mut w);
        Spec::from_args(w)
    };
    let s = a(&|_| {}).unwrap();
    assert_eq!(s.servers, vec!["127.0.0.1:4730"]);
    assert!(s.id.starts_with("gearwheel-work-"));
    assert_eq!(
        a(&|w| w.timeout = Some("1m".into())).unwrap().timeout,
        Some(Duration::from_secs(60))
    );
    assert!(a(&|w| w.function.clear()).is_err());
    assert!(a(&|w| w.command.clear()).is_err());
    assert!(a(&|w| w.concurrency = 0).is_err());
    assert!(a(&|w| w.timeout = Some("0s".into())).is_err());
    assert!(a(&|w| w.timeout = Some("soon".into())).is_err());
    assert!(a(&|w| w.server = vec!["host:notaport".into()]).is_err());
}
