//! Running as a service: `serve -d` detaches and writes the daemon's pid, a start failure
//! still reaches the caller's exit code, `-u` drops privileges after binding (as root; skipped
//! otherwise), and READY=1 reaches $NOTIFY_SOCKET.

mod support;

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::*;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `Uid:` or `Gid:` of /proc/PID/status: real, effective, saved, filesystem.
fn ids(pid: i32, key: &str) -> Vec<u32> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    st.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap()
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect()
}

fn stat_field(pid: i32, n: usize) -> String {
    let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = st.rsplit_once(')').unwrap();
    // Fields after the name start at 3 (state).
    rest.split_whitespace().nth(n - 3).unwrap().to_string()
}

/// A detached server: killed at the end.
struct Daemon(i32);

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the daemon this test started.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
        }
    }
}

fn listening_addr(stderr: &str) -> std::net::SocketAddr {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("gearwheel: Listening on "))
        .unwrap_or_else(|| panic!("no Listening line in {stderr:?}"))
        .trim()
        .parse()
        .unwrap()
}

fn getpid(addr: std::net::SocketAddr) -> String {
    let mut c = gearwheel::client::Conn::connect(&addr.to_string(), Duration::from_secs(5))
        .expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.admin("getpid", false).unwrap().remove(0)
}

fn pid_from(path: &std::path::Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn daemon_detaches_and_writes_its_own_pid() {
    let dir = TempDir::new("daemon");
    let pid_file = dir.join("gearwheel.pid");
    let log = dir.join("server.log");
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "-d", "-p", "0", "--verbose", "INFO"])
        .arg("--pid-file")
        .arg(&pid_file)
        .arg("-l")
        .arg(&log);
    let o = run_out(&mut cmd, None, 10);
    // The started process returns once the daemon listens.
    assert!(o.status.success(), "{o:?}");
    let addr = listening_addr(&o.stderr);
    let pid = pid_from(&pid_file);
    let _kill = Daemon(pid);
    assert!(alive(pid), "daemon {pid} is not running");
    // The daemon is a new process in a new session, in /.
    assert_ne!(stat_field(pid, 4), std::process::id().to_string(), "parent");
    assert_eq!(stat_field(pid, 6), pid.to_string(), "session id");
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
        std::path::PathBuf::from("/")
    );
    // Nothing inherited stays open but stdio (on /dev/null), the listener, the poll and
    // signal descriptors and the log file.
    let fd0 = std::fs::read_link(format!("/proc/{pid}/fd/0")).unwrap();
    assert_eq!(fd0, std::path::PathBuf::from("/dev/null"));
    assert_eq!(getpid(addr), format!("OK {pid}"));
    // The log file (opened before the chdir) got the start lines.
    wait_until(5, "the log file", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("Listening on"))
    });
    // SIGTERM stops it and the pid file goes away.
    // SAFETY: kill(2) on the daemon this test started.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    wait_until(5, "the daemon to exit", || !alive(pid));
    assert!(!pid_file.exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn daemon_start_failure_is_the_callers_exit_code() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let o = gw(&["serve", "-d", "-p", &port, "-l", "none"], None, 10);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("cannot listen"), "{}", o.stderr);
    let o = gw(&["serve", "-d", "-u", "no-such-user-gearwheel"], None, 10);
    assert_eq!(o.code(), Some(2), "{o:?}");
    assert!(o.stderr.contains("no such user"), "{}", o.stderr);
}

#[test]
fn user_flag_drops_privileges_after_binding() {
    if !is_root() {
        eprintln!("SKIP: -u needs root to switch users");
        return;
    }
    let s = support::Server::start_args(&[
        "serve",
        "-L",
        "127.0.0.1:0",
        "-u",
        "nobody",
        "--verbose",
        "INFO",
    ]);
    let pid = s.child.id() as i32;
    let nobody = ids_of_user("nobody");
    wait_until(5, "the switch to nobody", || {
        ids(pid, "Uid:") == vec![nobody.0; 4]
    });
    assert_eq!(ids(pid, "Gid:"), vec![nobody.1; 4]);
    assert_eq!(admin_text(&s, "getpid", false), format!("OK {pid}\n"));
    assert!(s.log().contains("running as user nobody"), "{}", s.log());
}

#[test]
fn daemon_as_nobody_on_a_privileged_port() {
    if !is_root() {
        eprintln!("SKIP: -u needs root to switch users");
        return;
    }
    let dir = TempDir::new("daemon-user");
    let pid_file = dir.join("pid");
    // A free port below 1024: only root could bind it.
    let port = (600..1000)
        .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free privileged port")
        .to_string();
    let mut cmd = Command::new(BIN);
    cmd.args([
        "serve",
        "-d",
        "-p",
        &port,
        "-u",
        "nobody",
        "-l",
        "none",
        "--pid-file",
    ])
    .arg(&pid_file);
    let o = run_out(&mut cmd, None, 10);
    assert!(o.status.success(), "{o:?}");
    let pid = pid_from(&pid_file);
    let _kill = Daemon(pid);
    let nobody = ids_of_user("nobody");
    assert_eq!(ids(pid, "Uid:"), vec![nobody.0; 4]);
    assert_eq!(getpid(listening_addr(&o.stderr)), format!("OK {pid}"));
    let _ = std::fs::remove_dir_all(dir);
}

fn ids_of_user(name: &str) -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f[0] == name).then(|| (f[2].parse().unwrap(), f[3].parse().unwrap()))
        })
        .unwrap()
}

#[test]
fn ready_reaches_the_notify_socket() {
    let dir = TempDir::new("notify");
    let path = dir.join("notify.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "-p", "0", "-l", "none"])
        .env("NOTIFY_SOCKET", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 256];
    let n = sock.recv(&mut buf).expect("READY=1");
    assert_eq!(&buf[..n], b"READY=1");
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let n = sock.recv(&mut buf).expect("STOPPING=1");
    assert_eq!(&buf[..n], b"STOPPING=1");
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(dir);
}

/// How many lines of `log` contain `needle`.
fn lines_with(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn stderr_says_each_thing_once_in_utc() {
    let dir = TempDir::new("log-once");
    let file = dir.join("one.cron");
    std::fs::write(&file, "@hourly tidy\n").unwrap();
    let s = support::Server::start_args(&[
        "serve",
        "-p",
        "0",
        "--verbose",
        "INFO",
        "--schedules",
        file.to_str().unwrap(),
    ]);
    s.wait_log("started", 5);
    let log = s.log();
    assert_eq!(lines_with(&log, "Listening on"), 1, "{log}");
    assert_eq!(lines_with(&log, "one.cron"), 1, "{log}");
    assert_eq!(lines_with(&log, "1 entry from"), 1, "{log}");
    for l in log.lines().filter(|l| l.contains("[  main ]")) {
        let ts: Vec<&str> = l.split_whitespace().skip(1).take(2).collect();
        assert!(ts[1].ends_with('Z'), "a log time without its offset: {l}");
    }
    // Logging to stderr, SIGHUP reloads the schedules and reopens nothing.
    s.signal(libc::SIGHUP);
    s.wait_log("reloaded", 5);
    assert!(
        s.log().contains("1 entry, next run kept for 1"),
        "{}",
        s.log()
    );
    assert!(!s.log().contains("reopening"), "{}", s.log());

    // A fatal error (the port is taken) is printed once.
    let out = Command::new(BIN)
        .args(["serve", "--verbose", "INFO", "-p", &s.port().to_string()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let fatal: Vec<&str> = err.lines().filter(|l| l.contains("Address")).collect();
    assert_eq!(fatal.len(), 1, "{err}");
    assert!(fatal[0].starts_with("gearwheel: "), "{err}");
}

#[test]
fn the_in_memory_warning_shows_at_the_default_log_level() {
    let s = support::Server::start_args(&["serve", "-p", "0"]);
    let log = s.log();
    assert!(
        log.contains("gearwheel: no --data-dir: the queue is in memory"),
        "{log}"
    );
}

/// The log of a server at `level` that accepted one future job and was stopped by SIGTERM,
/// read once it has exited (so every line it wrote is in).
fn log_of_a_short_life(level: &str) -> String {
    let mut s = support::Server::start_args(&["serve", "-p", "0", "--verbose", level]);
    let mut c = s.connect();
    c.send_req(t::SUBMIT_JOB_EPOCH, &[b"later", b"", b"4102444800", b"x"]);
    c.expect(t::JOB_CREATED);
    s.signal(libc::SIGTERM);
    assert!(s.exited(10).success(), "{}", s.log());
    s.log()
}

#[test]
fn notice_logs_the_start_and_the_stop_but_no_job() {
    let log = log_of_a_short_life("NOTICE");
    for line in [
        "gearwheel 0.1.0 started",
        "stop signal: shutting down",
        "stopped",
    ] {
        assert!(
            log.lines()
                .any(|l| l.trim_start().starts_with("NOTICE ") && l.ends_with(line)),
            "no NOTICE line {line:?} in {log}"
        );
    }
    assert!(!log.contains("accepted future job"), "{log}");
    assert!(
        !log.lines().any(|l| l.trim_start().starts_with("INFO ")),
        "{log}"
    );
    // INFO shows the job too, and the NOTICE lines still as NOTICE.
    let log = log_of_a_short_life("INFO");
    assert!(
        log.lines()
            .any(|l| l.trim_start().starts_with("INFO ") && l.contains("accepted future job")),
        "{log}"
    );
    assert!(log.contains("NOTICE"), "{log}");
    // WARNING writes neither.
    let log = log_of_a_short_life("WARNING");
    assert!(
        !log.contains("started") && !log.contains("accepted"),
        "{log}"
    );
}
