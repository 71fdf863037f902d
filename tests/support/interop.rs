//! Interop: the registry of components outside Rust that tests drive (each test asks
//! `need`/`require`, which skip with a printed reason, or fail under
//! GEARWHEEL_REQUIRE_INTEROP=1), starting the interop scripts and library programs, and the
//! checks every library's tests make (priority order, a long grab wait).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::gearman::Conn;
use super::process::{Proc, have, run};
use super::server::Server;
use super::wait::wait_workers;

/// For interop tests: skip (with a printed reason) when a client is missing, unless
/// GEARWHEEL_REQUIRE_INTEROP=1, where a missing client is a failure.
pub fn require(ok: bool, what: &str) -> bool {
    if ok {
        return true;
    }
    if std::env::var("GEARWHEEL_REQUIRE_INTEROP").as_deref() == Ok("1") {
        panic!("{what} is not installed, and GEARWHEEL_REQUIRE_INTEROP=1");
    }
    eprintln!(
        "SKIP: {what} is not installed (set GEARWHEEL_REQUIRE_INTEROP=1 to make this a failure)"
    );
    false
}

/// A script under tests/interop/.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(name)
}

/// Does `cmd args...` run and exit 0 (within 10 s)? Probes the components; a command that
/// cannot start is simply absent.
pub fn succeeds(cmd: &str, args: &[&str]) -> bool {
    Proc::try_spawn(cmd, Command::new(cmd).args(args), None)
        .ok()
        .and_then(|mut p| p.wait_exit(10))
        .is_some_and(|st| st.success())
}

/// `php` with the gearman extension loaded.
pub fn have_php_gearman() -> bool {
    have("php")
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
    have("perl") && succeeds("perl", &["-MGearman::Client", "-MGearman::Worker", "-e1"])
}

/// python3 with the `gear` package.
pub fn have_python_gear() -> bool {
    have("python3") && succeeds("python3", &["-c", "import gear"])
}

/// python3 and libgearman (the C library, for SUBMIT_JOB_EPOCH through ctypes).
pub fn have_libgearman() -> bool {
    have("python3")
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
    have("node")
        && script("node/node_modules")
            .join(name)
            .join("package.json")
            .is_file()
}

/// python3 that can import `module` (tests/interop/python/requirements.txt installs them).
pub fn have_python_module(module: &str) -> bool {
    have("python3") && succeeds("python3", &["-c", &format!("import {module}")])
}

/// How a test finds out that a component is installed.
pub type Present = fn() -> bool;

/// Every component outside Rust that a test drives, as (what `require` calls it, is it
/// here). tests/zz_interop_summary.rs names the missing ones at the end of `cargo test`, and
/// checks that every `require` in tests/ is listed here.
pub const COMPONENTS: &[(&str, Present)] = &[
    ("gearman-tools (gearman, gearadmin)", || {
        have("gearman") && have("gearadmin")
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
    ("curl", || have("curl")),
    ("stunnel4", || have("stunnel4")),
    ("openssl", || have("openssl")),
    ("Perl IO::Socket::SSL (libio-socket-ssl-perl)", || {
        have("perl") && succeeds("perl", &["-MIO::Socket::SSL", "-e1"])
    }),
    ("groff (apt-get install groff-base)", || have("groff")),
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
    ("etcd (apt-get install etcd-server)", || have("etcd")),
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
        panic!("{what:?} is not in support::COMPONENTS");
    };
    require(present(), what)
}

/// Seconds since 1970 as a float.
pub fn now_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A Gearman library's worker and client scripts under tests/interop (`INTERPRETER SCRIPT
/// PORT ...`), and the component (of `COMPONENTS`) that runs them.
pub struct Scripts {
    pub component: &'static str,
    pub interpreter: &'static str,
    pub worker: &'static str,
    pub client: &'static str,
    /// How long its worker may take to say `ready`.
    pub ready_secs: u64,
}

/// Perl's Gearman::Client and Gearman::Worker.
pub const PERL_SCRIPTS: Scripts = Scripts {
    component: "Perl Gearman::Client (libgearman-client-perl)",
    interpreter: "perl",
    worker: "worker.pl",
    client: "client.pl",
    ready_secs: 5,
};

/// PHP's pecl/gearman.
pub const PHP_SCRIPTS: Scripts = Scripts {
    component: "php-cli with the gearman extension (php-gearman)",
    interpreter: "php",
    worker: "worker.php",
    client: "client.php",
    ready_secs: 5,
};

/// python `gear`.
pub const GEAR_SCRIPTS: Scripts = Scripts {
    component: "python3 with the gear package",
    interpreter: "python3",
    worker: "gear_worker.py",
    client: "gear_client.py",
    ready_secs: 10,
};

impl Scripts {
    /// Is the library here? If not, the test skips (see `need`).
    pub fn present(&self) -> bool {
        need(self.component)
    }

    /// Start the worker script and wait until it says `ready` and the server sees it
    /// registered for `hold` (every interop worker script registers `hold`).
    pub fn worker(&self, server: &Server) -> Proc {
        let mut w = Proc::spawn(
            &format!("{} worker", self.interpreter),
            Command::new(self.interpreter)
                .arg(script(self.worker))
                .arg(server.port().to_string()),
            None,
        );
        w.wait_stdout("ready\n", self.ready_secs);
        wait_workers(server, "hold", 1);
        w
    }

    /// Run the client script's `SCENARIO ARG` to completion and return its stdout.
    pub fn client(&self, server: &Server, scenario: &str, arg: &str) -> String {
        run(
            &format!("{} client {scenario}", self.interpreter),
            Command::new(self.interpreter)
                .arg(script(self.client))
                .arg(server.port().to_string())
                .arg(scenario)
                .arg(arg),
            None,
            9,
        )
    }

    /// With a long `--grab-wait` the worker's GRAB after each job waits; every next job must
    /// reach it at once (six jobs in a row would take six seconds if a wait ran to its end),
    /// and the worker must take the late answer to its GRAB in its stride: the client's `do`
    /// scenario prints `expected` within 4 s.
    pub fn do_under_a_long_grab_wait(&self, expected: &str) {
        let s = Server::start(&["--grab-wait", "1000"]);
        let _w = self.worker(&s);
        let start = Instant::now();
        assert_eq!(self.client(&s, "do", ""), expected);
        let took = start.elapsed();
        assert!(took < Duration::from_secs(4), "took {took:?}");
    }
}

/// The data of the `log` jobs a worker ran (every interop worker prints `job log DATA`), in
/// order, once it has run `last`.
pub fn log_order(w: &mut Proc, last: &str) -> Vec<String> {
    w.wait_stdout(&format!("job log {last}\n"), 10);
    w.stdout()
        .lines()
        .filter_map(|l| l.strip_prefix("job log ").map(str::to_string))
        .collect()
}

/// Background `log` jobs already queued, `each` of every priority (as `prioritystatus`
/// shows), run high first and low last by the worker `start` starts: `order`, the data of
/// its jobs in turn. Returns the admin connection and the worker.
pub fn queued_jobs_run_by_priority(
    s: &Server,
    each: u32,
    start: impl FnOnce(&Server) -> Proc,
    order: &[&str],
) -> (Conn, Proc) {
    let mut admin = s.connect();
    assert_eq!(
        admin.admin("prioritystatus", true),
        format!("log\t{each}\t{each}\t{each}\t0\n.\n")
    );
    let mut w = start(s);
    assert_eq!(log_order(&mut w, order[order.len() - 1]), order);
    (admin, w)
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
        wait_workers(server, "hold", 1);
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
