//! A real etcd for tests: `Etcd::start()` runs `etcd` from PATH (Debian: /usr/bin/etcd) on free
//! loopback ports with a temporary data dir, waits until GET /health says so, and kills it
//! on drop. `stop`/`kill`/`pause`/`resume`/`restart` act on the same process and data (the
//! cluster tests take etcd away and bring it back). A test calls `need(ETCD)` first, so a
//! machine without etcd skips with a reason (and CI, with GEARWHEEL_REQUIRE_INTEROP=1, fails).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The interop component name (listed in COMPONENTS).
pub const ETCD: &str = "etcd (apt-get install etcd-server)";

/// The etcd binary: `etcd` on PATH (Debian's etcd-server puts it in /usr/bin).
pub fn etcd_binary() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("etcd"))
            .find(|f| f.is_file())
    })
}

pub struct Etcd {
    child: Option<Child>,
    dir: PathBuf,
    pub client_port: u16,
    pub peer_port: u16,
}

impl Etcd {
    /// Start a one-member etcd and wait until it is healthy (panics, with its log, if not).
    pub fn start() -> Etcd {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "gearwheel-etcd-{}-{n}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut e = Etcd {
            child: None,
            dir,
            client_port: 0,
            peer_port: 0,
        };
        // Ports are picked free and then given to etcd, so another process may take one in
        // between: try a few pairs.
        for attempt in 0.. {
            e.client_port = free_port();
            e.peer_port = free_port();
            e.spawn();
            if e.wait_healthy(Duration::from_secs(30)) {
                return e;
            }
            e.kill();
            assert!(attempt < 3, "etcd did not start:\n{}", e.log());
        }
        unreachable!()
    }

    /// `http://127.0.0.1:PORT`, the client URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// `127.0.0.1:PORT`, the client address.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// What etcd printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default()
    }

    fn spawn(&mut self) {
        let bin = etcd_binary().expect("etcd is installed (the test asked need(ETCD))");
        let client = format!("http://127.0.0.1:{}", self.client_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("etcd.log"))
            .unwrap();
        let child = Command::new(bin)
            .args(["--name", "gw", "--data-dir"])
            .arg(self.dir.join("data"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("gw={peer}")])
            .env_remove("ETCD_DATA_DIR")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("etcd starts");
        self.child = Some(child);
    }

    /// Wait until GET /health answers healthy; false if etcd exited or the time ran out.
    pub fn wait_healthy(&mut self, within: Duration) -> bool {
        let end = Instant::now() + within;
        while Instant::now() < end {
            let exited = self
                .child
                .as_mut()
                .map(|c| c.try_wait().ok().flatten().is_some());
            if exited != Some(false) {
                return false;
            }
            if self.healthy() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// One GET /health.
    pub fn healthy(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(self.addr()) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let req = format!("GET /health HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr());
        if s.write_all(req.as_bytes()).is_err() {
            return false;
        }
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.starts_with("HTTP/1.")
            && out.get(8..).is_some_and(|r| r.starts_with(" 200"))
            && out.contains("\"health\":\"true\"")
    }

    fn signal(&self, sig: &str) {
        if let Some(c) = self.child.as_ref() {
            let _ = Command::new("kill")
                .args([sig, &c.id().to_string()])
                .status();
        }
    }

    /// SIGTERM and wait for the exit (etcd shuts down cleanly).
    pub fn stop(&mut self) {
        self.signal("-TERM");
        self.reap(Duration::from_secs(10));
    }

    /// SIGKILL and wait.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGSTOP: etcd holds its sockets but answers nothing.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT after `pause`.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// Start again on the same ports and data (after `stop` or `kill`), and wait until healthy.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
        assert!(
            self.wait_healthy(Duration::from_secs(30)),
            "etcd did not come back:\n{}",
            self.log()
        );
    }

    fn reap(&mut self, within: Duration) {
        let end = Instant::now() + within;
        while let Some(c) = self.child.as_mut() {
            if c.try_wait().ok().flatten().is_some() || Instant::now() >= end {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.resume();
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
