//! Helpers for the interop tests (tests/interop_*.rs): run real Gearman clients as child
//! processes with timeouts, capture their output, and poll the server until a condition holds.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::{Conn, Server};

/// A script under tests/interop/.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(name)
}

/// Does `cmd args...` run and exit 0 (within 10 s)?
pub fn succeeds(cmd: &str, args: &[&str]) -> bool {
    let Ok(mut child) = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(st)) => return st.success(),
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

/// `php` with the gearman extension loaded.
pub fn have_php_gearman() -> bool {
    crate::common::have("php")
        && Command::new("php")
            .arg("-m")
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|l| l.trim() == "gearman")
            })
            .unwrap_or(false)
}

/// Perl with Gearman::Client and Gearman::Worker.
pub fn have_perl_gearman() -> bool {
    crate::common::have("perl")
        && succeeds("perl", &["-MGearman::Client", "-MGearman::Worker", "-e1"])
}

/// python3 with the `gear` package.
pub fn have_python_gear() -> bool {
    crate::common::have("python3") && succeeds("python3", &["-c", "import gear"])
}

/// python3 and libgearman (the C library, for SUBMIT_JOB_EPOCH through ctypes).
pub fn have_libgearman() -> bool {
    crate::common::have("python3")
        && succeeds(
            "python3",
            &[
                "-c",
                "import ctypes, ctypes.util; ctypes.CDLL(ctypes.util.find_library('gearman') or 'libgearman.so.8')",
            ],
        )
}

/// The npm package `name`, installed by `npm ci` in tests/interop/node, and `node` to run it.
pub fn have_node_package(name: &str) -> bool {
    crate::common::have("node")
        && script("node/node_modules")
            .join(name)
            .join("package.json")
            .is_file()
}

/// python3 that can import `module` (tests/interop/python/requirements.txt installs them).
pub fn have_python_module(module: &str) -> bool {
    crate::common::have("python3") && succeeds("python3", &["-c", &format!("import {module}")])
}

/// How a test finds out that a component is installed.
pub type Present = fn() -> bool;

/// Every component outside Rust that a test drives, as (what `require` calls it, is it
/// here). tests/zz_interop_summary.rs names the missing ones at the end of `cargo test`, and
/// checks that every `require` in tests/ is listed here.
pub const COMPONENTS: &[(&str, Present)] = &[
    ("gearman-tools (gearman, gearadmin)", || {
        crate::common::have("gearman") && crate::common::have("gearadmin")
    }),
    (
        "php-cli with the gearman extension (php-gearman)",
        have_php_gearman,
    ),
    (
        "Perl Gearman::Client (libgearman-client-perl)",
        have_perl_gearman,
    ),
    ("python3 with the gear package", have_python_gear),
    ("python3 with libgearman (libgearman8)", have_libgearman),
    ("python prometheus_client", || {
        have_python_module("prometheus_client.parser")
    }),
    ("curl", || crate::common::have("curl")),
    ("stunnel4", || crate::common::have("stunnel4")),
    ("openssl", || crate::common::have("openssl")),
    ("Perl IO::Socket::SSL (libio-socket-ssl-perl)", || {
        crate::common::have("perl") && succeeds("perl", &["-MIO::Socket::SSL", "-e1"])
    }),
    ("groff (apt-get install groff-base)", || {
        crate::common::have("groff")
    }),
    ("node with the npm package gearmanode", || {
        have_node_package("gearmanode")
    }),
    ("node with the npm package abraxas", || {
        have_node_package("abraxas")
    }),
    ("node with the npm package node-gearman", || {
        have_node_package("node-gearman")
    }),
    ("node with the npm package gearman-node", || {
        have_node_package("gearman-node")
    }),
    ("python3 with python3-gearman", || {
        have_python_module("python3_gearman")
    }),
    ("python3 with pygearman", || have_python_module("gearman")),
    ("python3 with aiogear", || have_python_module("aiogear")),
    (BROWSER, have_browser),
    ("etcd (apt-get install etcd-server)", || {
        crate::common::have("etcd")
    }),
];

/// Headless Chromium driven by python selenium (the console's browser test).
pub const BROWSER: &str = "chromium, chromium-driver and python3 selenium";

/// The browser `BROWSER` names: $CHROMIUM / $CHROMEDRIVER or Debian's paths.
pub fn browser_paths() -> (String, String) {
    (
        std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()),
        std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into()),
    )
}

fn have_browser() -> bool {
    let (chromium, driver) = browser_paths();
    std::path::Path::new(&chromium).is_file()
        && std::path::Path::new(&driver).is_file()
        && have_python_module("selenium")
}

/// Is the component `what` (one of COMPONENTS) here? If not, the test skips (see `require`).
pub fn need(what: &str) -> bool {
    let Some((_, present)) = COMPONENTS.iter().find(|(w, _)| *w == what) else {
        panic!("{what:?} is not in interop_support::COMPONENTS");
    };
    crate::common::require(present(), what)
}

/// A child process whose stdout and stderr are collected by threads; killed when dropped.
pub struct Proc {
    pub name: String,
    pub child: Child,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
}

fn drain(mut r: impl Read + Send + 'static, into: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => into
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
    });
}

impl Proc {
    /// Start `cmd` with `stdin` written to it (then closed), or /dev/null.
    pub fn spawn(name: &str, cmd: &mut Command, stdin: Option<&[u8]>) -> Proc {
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot start {cmd:?}: {e}"));
        if let Some(data) = stdin {
            let mut w = child.stdin.take().unwrap();
            let data = data.to_vec();
            std::thread::spawn(move || {
                let _ = w.write_all(&data);
            });
        }
        let out = Arc::new(Mutex::new(String::new()));
        let err = Arc::new(Mutex::new(String::new()));
        drain(child.stdout.take().unwrap(), Arc::clone(&out));
        drain(child.stderr.take().unwrap(), Arc::clone(&err));
        Proc {
            name: name.to_string(),
            child,
            out,
            err,
        }
    }

    pub fn stdout(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    pub fn stderr(&self) -> String {
        self.err.lock().unwrap().clone()
    }

    /// Both outputs, for failure messages.
    pub fn describe(&self) -> String {
        format!(
            "{} stdout:\n{}\n{} stderr:\n{}",
            self.name,
            self.stdout(),
            self.name,
            self.stderr()
        )
    }

    /// Wait until stdout contains `needle`; panics (with both outputs) after `secs`.
    pub fn wait_stdout(&mut self, needle: &str, secs: u64) {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if self.stdout().contains(needle) {
                return;
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                // Let the reader threads catch up before the last look.
                std::thread::sleep(Duration::from_millis(50));
                if self.stdout().contains(needle) {
                    return;
                }
                panic!(
                    "{} exited ({st}) before printing {needle:?}\n{}",
                    self.name,
                    self.describe()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!(
            "{} did not print {needle:?} within {secs} s\n{}",
            self.name,
            self.describe()
        );
    }

    /// Wait for the process to exit; kills it and panics after `secs`.
    pub fn wait_exit(&mut self, secs: u64) -> ExitStatus {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                // The pipes close when the process exits; give the readers a moment.
                std::thread::sleep(Duration::from_millis(30));
                return st;
            }
            if Instant::now() >= end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "{} did not exit within {secs} s\n{}",
                    self.name,
                    self.describe()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Wait for a successful exit and return stdout.
    pub fn finish(&mut self, secs: u64) -> String {
        let st = self.wait_exit(secs);
        assert!(
            st.success(),
            "{} failed: {st}\n{}",
            self.name,
            self.describe()
        );
        self.stdout()
    }

    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run a command to completion (at most `secs`) and return its stdout; panics on failure.
pub fn run(name: &str, cmd: &mut Command, stdin: Option<&[u8]>, secs: u64) -> String {
    Proc::spawn(name, cmd, stdin).finish(secs)
}

/// Run a command to completion (at most `secs`); returns (status, stdout, stderr).
pub fn run_any(
    name: &str,
    cmd: &mut Command,
    stdin: Option<&[u8]>,
    secs: u64,
) -> (ExitStatus, String, String) {
    let mut p = Proc::spawn(name, cmd, stdin);
    let st = p.wait_exit(secs);
    (st, p.stdout(), p.stderr())
}

/// Poll an admin command on `conn` until `ok(reply)`; panics with the last reply after `secs`.
pub fn admin_until(
    conn: &mut Conn,
    line: &str,
    list: bool,
    secs: u64,
    ok: impl Fn(&str) -> bool,
) -> String {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        let reply = conn.admin(line, list);
        if ok(&reply) {
            return reply;
        }
        if Instant::now() >= end {
            panic!("admin {line:?} never satisfied the condition; last reply {reply:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `status` line of `func` as (total, running, workers), if listed.
pub fn status_of(status: &str, func: &str) -> Option<(u64, u64, u64)> {
    status.lines().find_map(|l| {
        let f: Vec<&str> = l.split('\t').collect();
        if f.len() == 4 && f[0] == func {
            Some((f[1].parse().ok()?, f[2].parse().ok()?, f[3].parse().ok()?))
        } else {
            None
        }
    })
}

/// Wait until `func` has at least `n` registered workers (per `status`).
pub fn wait_workers(server: &Server, func: &str, n: u64, secs: u64) {
    let mut c = server.connect();
    admin_until(&mut c, "status", true, secs, |s| {
        status_of(s, func).is_some_and(|(_, _, w)| w >= n)
    });
}

/// Seconds since 1970 as a float.
pub fn now_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A fresh temporary directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!(
            "gearwheel-{tag}-{}-{n}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Start `interpreter SCRIPT PORT` as a worker and wait until it says `ready` and the server
/// sees it registered for `hold` (every interop worker script registers `hold`).
pub fn script_worker(server: &Server, interpreter: &str, name: &str, ready_secs: u64) -> Proc {
    let mut w = Proc::spawn(
        &format!("{interpreter} worker"),
        Command::new(interpreter)
            .arg(script(name))
            .arg(server.port().to_string()),
        None,
    );
    w.wait_stdout("ready\n", ready_secs);
    wait_workers(server, "hold", 1, 5);
    w
}

/// The command line of a library's test program under tests/interop: `program` and the
/// arguments that come before the port.
pub struct LibProgram<'a> {
    pub program: &'a str,
    pub before_port: &'a [&'a str],
}

impl LibProgram<'_> {
    fn command(&self, server: &Server, role: &str) -> Command {
        let mut c = Command::new(self.program);
        for (i, a) in self.before_port.iter().enumerate() {
            // The first argument is the script, under tests/interop.
            if i == 0 {
                c.arg(script(a));
            } else {
                c.arg(a);
            }
        }
        c.arg(server.port().to_string()).arg(role);
        c
    }

    /// Start `... PORT worker`: wait until it prints `ready` and the server lists it for
    /// `hold` (every library worker registers `hold`).
    pub fn worker(&self, server: &Server) -> Proc {
        let mut w = Proc::spawn(
            &format!("{} worker", self.before_port[0]),
            &mut self.command(server, "worker"),
            None,
        );
        w.wait_stdout("ready\n", 15);
        wait_workers(server, "hold", 1, 10);
        w
    }

    /// Run `... PORT client SCENARIO ARG` to completion and return its stdout.
    pub fn client(&self, server: &Server, scenario: &str, arg: &str) -> String {
        let mut c = self.command(server, "client");
        c.arg(scenario).arg(arg);
        run(
            &format!("{} client {scenario}", self.before_port[0]),
            &mut c,
            None,
            20,
        )
    }
}

/// Run `interpreter SCRIPT PORT SCENARIO ARG` to completion and return its stdout.
pub fn script_client(
    server: &Server,
    interpreter: &str,
    name: &str,
    scenario: &str,
    arg: &str,
) -> String {
    run(
        &format!("{interpreter} client {scenario}"),
        Command::new(interpreter)
            .arg(script(name))
            .arg(server.port().to_string())
            .arg(scenario)
            .arg(arg),
        None,
        9,
    )
}
