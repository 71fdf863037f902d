//! A real etcd for tests: `Etcd::start()` runs `etcd` from PATH (Debian: /usr/bin/etcd) on free
//! loopback ports with a temporary data dir, waits until GET /health says so, and kills it
//! on drop. `stop`/`kill`/`pause`/`resume`/`restart` act on the same process and data (the
//! cluster tests take etcd away and bring it back). A test calls `need(ETCD)` first, so a
//! machine without etcd skips with a reason (and CI, with GEARWHEEL_REQUIRE_INTEROP=1, fails).
//! `Etcd::start_tls(&ca)` serves clients over TLS with `--client-cert-auth`: its certificate
//! and a client's are issued by a `TestCa` (tls.rs), and `tls_flags()` gives gearwheel's
//! `--etcd-ca-file/--etcd-certificate/--etcd-key` for that client.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::server::free_port;

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
    /// Serving clients over TLS: the files.
    pub tls: Option<EtcdTls>,
}

/// The files of an etcd serving clients over TLS with `--client-cert-auth`.
#[derive(Clone)]
pub struct EtcdTls {
    /// The CA that signed etcd's certificate and the clients' (`--trusted-ca-file`).
    pub ca: PathBuf,
    /// etcd's own certificate and key (SANs 127.0.0.1 and localhost).
    pub server: (PathBuf, PathBuf),
    /// A client certificate and key etcd accepts.
    pub client: (PathBuf, PathBuf),
}

impl Etcd {
    /// Start a one-member etcd and wait until it is healthy (panics, with its log, if not).
    pub fn start() -> Etcd {
        Etcd::launch(None)
    }

    /// An etcd whose clients speak TLS and must present a certificate from `ca`
    /// (`--client-cert-auth`); keep `ca` alive as long as the etcd.
    pub fn start_tls(ca: &super::tls::TestCa) -> Etcd {
        let server = ca.issue("etcd-server", "etcd", &["127.0.0.1", "localhost"]);
        let client = ca.issue("etcd-client", "gearwheel", &[]);
        Etcd::launch(Some(EtcdTls {
            ca: ca.ca(),
            server,
            client,
        }))
    }

    /// gearwheel's flags for the client certificate etcd accepts.
    pub fn tls_flags(&self) -> Vec<String> {
        let t = self.tls.as_ref().expect("an etcd started with start_tls");
        let path = |p: &PathBuf| p.to_str().unwrap().to_string();
        vec![
            "--etcd-ca-file".into(),
            path(&t.ca),
            "--etcd-certificate".into(),
            path(&t.client.0),
            "--etcd-key".into(),
            path(&t.client.1),
        ]
    }

    fn launch(tls: Option<EtcdTls>) -> Etcd {
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
            tls,
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

    /// `http://127.0.0.1:PORT` (`https://` under TLS), the client URL.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
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
        let client = self.url();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("etcd.log"))
            .unwrap();
        let mut cmd = Command::new(bin);
        if let Some(t) = &self.tls {
            cmd.arg("--cert-file")
                .arg(&t.server.0)
                .arg("--key-file")
                .arg(&t.server.1)
                .arg("--trusted-ca-file")
                .arg(&t.ca)
                .arg("--client-cert-auth");
        }
        let child = cmd
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

    /// One GET /health (under TLS: one read through gearwheel's own etcd client, with the
    /// client certificate).
    pub fn healthy(&self) -> bool {
        #[cfg(not(feature = "tls"))]
        if self.tls.is_some() {
            return false;
        }
        #[cfg(feature = "tls")]
        if let Some(t) = &self.tls {
            use gearwheel::cluster::etcd::Request;
            let files = gearwheel::config::EtcdTls {
                ca_file: Some(t.ca.clone()),
                identity: Some(t.client.clone()),
            };
            let tls = gearwheel::client::etcd::client_tls(&files).expect("the test CA's files");
            let mut c =
                gearwheel::client::etcd::Client::new(vec![self.addr()], Duration::from_secs(2))
                    .with_tls(Some(tls));
            return c
                .call(&Request::Get {
                    key: b"health".to_vec(),
                })
                .is_ok();
        }
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
