//! Real Gearman clients over mutual TLS against one gearwheel (interop): python
//! `gear` and Perl `Gearman::Client`/`Gearman::Worker` as worker and client, each with its own
//! client certificate from a test CA; curl over HTTPS with a client certificate; the
//! libgearman `gearman` CLI on the plaintext loopback listener of the same server while a TLS
//! worker runs its job; a client without a certificate refused (TLS 1.2 and 1.3); and the
//! openssl recipe of docs/security.md making certificates these clients use. The server is
//! gearwheel's own TLS (`--ssl-listen` beside `-L 127.0.0.1`, or `--ssl` for HTTPS) with
//! `--ssl-ca-file` and an access list granting each certificate's CN only what its test
//! needs, so a job that runs proves the connection was named by its own certificate.
//!
//! Every payload is 100 kB of pseudo-random text reversed by the worker, so a result proves
//! the bytes crossed TLS both ways intact.
#![cfg(feature = "tls")]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

const GEAR: &str = "python3 with the gear package";
const PERL: &str = "Perl Gearman::Client (libgearman-client-perl)";
const PERL_SSL: &str = "Perl IO::Socket::SSL (libio-socket-ssl-perl)";
const TOOLS: &str = "gearman-tools (gearman, gearadmin)";
const CURL: &str = "curl";
const OPENSSL: &str = "openssl";

/// Who may do what: each certificate's CN gets exactly what its test needs, so a job that
/// runs proves the server named the connection by its own certificate. The plaintext
/// loopback listener's peers (`gearman`, `gearadmin`, the tests' own status polls) submit and
/// read status.
const ACL: &[&str] = &[
    "cn:py-worker       work           reverse,who",
    "cn:pl-worker       work           reverse,who",
    "cn:worker-backup   work           reverse,who",
    "cn:py-client       submit         reverse,who",
    "cn:pl-client       submit         reverse,who",
    "cn:web-1           submit         reverse",
    "cn:curl-client     submit,status  *",
    "addr:127.0.0.1     submit,status  *",
];

/// gearwheel with a certificate from `ca`, requiring client certificates from it, under `ACL`.
fn start(ca: &TestCa, listen: Listen) -> TlsServer {
    TlsServer::start(&ca.ca(), &ca.server("gearwheel"), ACL, listen)
}

/// 100 kB of printable pseudo-random bytes (an LCG seeded by `seed`), written to a file.
fn payload(dir: &Path, seed: u64) -> (PathBuf, String) {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    let text: String = (0..100_000)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (b'!' + ((x >> 33) % 94) as u8) as char
        })
        .collect();
    let path = dir.join(format!("payload-{seed}"));
    std::fs::write(&path, &text).unwrap();
    (path, text)
}

/// `out` is `text` reversed.
fn assert_reversed(out: &str, text: &str) {
    assert_eq!(out.len(), text.len());
    assert!(
        out.chars().eq(text.chars().rev()),
        "the reversed payload differs"
    );
}

/// A Gearman library over TLS, driven by its script in tests/interop/tls.
struct Lang {
    interpreter: &'static str,
    script: &'static str,
}

const PY: Lang = Lang {
    interpreter: "python3",
    script: "gear_tls.py",
};
const PL: Lang = Lang {
    interpreter: "perl",
    script: "gearman_tls.pl",
};

impl Lang {
    /// A TLS worker registered as `name` (reverse, who), presenting `cert`.
    fn worker(&self, port: u16, ca: &Path, cert: &CertFiles, name: &str) -> Proc {
        let interpreter = self.interpreter;
        let mut w = Proc::spawn(
            &format!("{interpreter} TLS worker {name}"),
            Command::new(interpreter)
                .arg(script(&format!("tls/{}", self.script)))
                .args(["worker", "localhost", &port.to_string()])
                .args([&cert.key, &cert.cert, &path_arg(ca), name]),
            None,
        );
        w.wait_stdout("ready\n", 20);
        w
    }

    /// A TLS client presenting `cert` submitting `file` to `func`; its output.
    fn client(&self, port: u16, ca: &Path, cert: &CertFiles, func: &str, file: &Path) -> String {
        let interpreter = self.interpreter;
        run(
            &format!("{interpreter} TLS client"),
            Command::new(interpreter)
                .arg(script(&format!("tls/{}", self.script)))
                .args(["client", "localhost", &port.to_string()])
                .args([&cert.key, &cert.cert, &path_arg(ca), func, &path_arg(file)]),
            None,
            30,
        )
    }
}

/// A worker and a client of `lang`, each with its own certificate (CNs `{tag}-worker` and
/// `{tag}-client`): the payload seeded by `seed` comes back reversed, and `who` answers the
/// worker's name. The CA, the server, the worker and the payload file stay for more.
fn worker_and_client(lang: &Lang, tag: &str, seed: u64) -> (TestCa, TlsServer, Proc, PathBuf) {
    let ca = TestCa::new(tag);
    let rig = start(&ca, Listen::Beside);
    let (worker, client) = (format!("{tag}-worker"), format!("{tag}-client"));
    let mut w = lang.worker(rig.tls, &ca.ca(), &ca.client(&worker), &worker);
    wait_workers(&rig.server, "reverse", 1);
    let (file, text) = payload(ca.dir(), seed);
    let client = ca.client(&client);
    let out = lang.client(rig.tls, &ca.ca(), &client, "reverse", &file);
    assert_reversed(&out, &text);
    assert_eq!(
        lang.client(rig.tls, &ca.ca(), &client, "who", &file),
        worker
    );
    w.wait_stdout("job reverse 100000\n", 5);
    (ca, rig, w, file)
}

#[test]
fn python_gear_worker_and_client_each_with_its_own_certificate() {
    if !need(GEAR) {
        return;
    }
    worker_and_client(&PY, "py", 1);
}

#[test]
fn libgearman_cli_on_plaintext_loopback_runs_on_a_tls_worker() {
    if !(need(GEAR) && need(TOOLS)) {
        return;
    }
    let ca = TestCa::new("cli-plain");
    let rig = start(&ca, Listen::Beside);
    let mut w = PY.worker(rig.tls, &ca.ca(), &ca.client("py-worker"), "py-worker");
    wait_workers(&rig.server, "reverse", 1);
    let (_, text) = payload(ca.dir(), 2);
    // `gearman -f FUNC` sends stdin as the workload and prints the result.
    let out = run(
        "gearman",
        Command::new("gearman").args([
            "-h",
            "127.0.0.1",
            "-p",
            &rig.server.port().to_string(),
            "-f",
            "reverse",
        ]),
        Some(text.as_bytes()),
        30,
    );
    assert_reversed(&out, &text);
    w.wait_stdout("job reverse 100000\n", 5);
    // And gearadmin on the same plaintext listener sees the TLS worker. (gearadmin prints
    // nothing and exits 0 when its short read timeout passes on a loaded machine: ask again.)
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let status = run(
            "gearadmin",
            Command::new("gearadmin").args([
                "-h",
                "127.0.0.1",
                "-p",
                &rig.server.port().to_string(),
                "--status",
            ]),
            None,
            10,
        );
        if !status.is_empty() || Instant::now() > end {
            assert_eq!(status_row(&status, "reverse"), Some((0, 0, 1)), "{status}");
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn perl_worker_and_client_each_with_its_own_certificate() {
    if !(need(PERL) && need(PERL_SSL)) {
        return;
    }
    let (ca, rig, _w, file) = worker_and_client(&PL, "pl", 3);
    // Across languages on the same server: a python gear client, a Perl worker.
    if need(GEAR) {
        let py = ca.client("py-client");
        assert_eq!(PY.client(rig.tls, &ca.ca(), &py, "who", &file), "pl-worker");
    }
}

#[test]
fn curl_over_https_with_a_client_certificate() {
    if !(need(CURL) && need(GEAR)) {
        return;
    }
    let ca = TestCa::new("curl");
    let rig = start(&ca, Listen::All { https: true });
    let https = rig.https.unwrap();
    let client = ca.client("curl-client");
    let _w = PY.worker(rig.tls, &ca.ca(), &ca.client("py-worker"), "py-worker");
    // No wait for the worker: the HTTP job waits in the queue until it registers.
    let (file, text) = payload(ca.dir(), 4);
    let curl = |extra: &[&str], path: &str| {
        let mut c = Command::new("curl");
        c.args([
            "-sS",
            "--fail",
            "--max-time",
            "20",
            "--cacert",
            &ca.ca_arg(),
        ])
        .args(extra)
        .arg(format!("https://localhost:{https}{path}"));
        run_any("curl", &mut c, None, 30)
    };
    let me = ["--cert", &client.cert, "--key", &client.key];
    // A job submitted over HTTPS, run by the TLS worker.
    let data = format!("@{}", path_arg(&file));
    let (st, out, err) = curl(&[&me[..], &["--data-binary", &data]].concat(), "/reverse");
    assert!(st.success(), "{err}");
    assert_reversed(&out, &text);
    let (st, out, err) = curl(&me, "/status");
    assert!(st.success(), "{err}");
    assert!(out.contains("\"reverse\""), "{out}");
    // Another certificate, another identity: py-client may submit but not read /status.
    let other = ca.client("py-client");
    let (st, out, err) = curl(&["--cert", &other.cert, "--key", &other.key], "/status");
    assert!(!st.success() && err.contains("403"), "{out}{err}");
    // Without a client certificate the handshake is refused: no status.
    let (st, out, _) = curl(&[], "/status");
    assert!(!st.success(), "served without a certificate: {out}");
    assert!(out.is_empty(), "{out}");
}

#[test]
fn a_client_without_a_certificate_is_refused() {
    if !need(GEAR) {
        return;
    }
    let ca = TestCa::new("bare");
    let rig = start(&ca, Listen::Beside);
    for version in ["TLSv1_2", "TLSv1_3"] {
        let out = run(
            "python3 bare TLS client",
            Command::new("python3")
                .arg(script("tls/gear_tls.py"))
                .args([
                    "bare",
                    "127.0.0.1",
                    &rig.tls.to_string(),
                    &ca.ca_arg(),
                    version,
                ]),
            None,
            20,
        );
        assert!(out.starts_with("refused: "), "{version}: {out}");
    }
    if need(OPENSSL) {
        // openssl s_client without -cert: the server ends the handshake.
        let (_, out, err) = run_any(
            "openssl s_client",
            Command::new("openssl").args([
                "s_client",
                "-connect",
                &format!("127.0.0.1:{}", rig.tls),
                "-CAfile",
                &ca.ca_arg(),
                "-tls1_2",
            ]),
            Some(b"\0REQ\0\0\0\x10\0\0\0\x04ping"),
            20,
        );
        assert!(!out.contains("ECHO") && !out.contains("ping"), "{out}");
        assert!(err.contains("alert") || err.contains("error"), "{err}");
    }
}

/// The first ``` block after `heading` in docs/security.md.
fn doc_block(heading: &str) -> String {
    let md =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/security.md"))
            .unwrap();
    let at = md
        .find(heading)
        .unwrap_or_else(|| panic!("docs/security.md has no {heading:?}"));
    let rest = &md[at..];
    let start = rest.find("```\n").unwrap() + 4;
    let end = start + rest[start..].find("```\n").unwrap();
    rest[start..end].to_string()
}

#[test]
fn the_openssl_recipe_in_docs_security_md_makes_working_certificates() {
    if !(need(OPENSSL) && need(GEAR)) {
        return;
    }
    // The recipe runs as written, in bash (it uses process substitution), in a fresh directory.
    let ca = TestCa::new("recipe");
    let dir = ca.dir().join("recipe");
    std::fs::create_dir_all(&dir).unwrap();
    let recipe = doc_block("### A CA and certificates with openssl");
    let (st, _, err) = run_any(
        "the openssl recipe",
        Command::new("bash")
            .args(["-euo", "pipefail", "-c", &recipe])
            .current_dir(&dir),
        None,
        60,
    );
    assert!(st.success(), "the recipe failed:\n{recipe}\n{err}");
    // gearwheel with the recipe's server certificate, its CA required of clients.
    let recipe_ca = dir.join("ca.pem");
    let rig = TlsServer::start(
        &recipe_ca,
        &CertFiles::in_dir(&dir, "server"),
        ACL,
        Listen::Beside,
    );
    let worker = CertFiles::in_dir(&dir, "worker-backup");
    let _w = PY.worker(rig.tls, &recipe_ca, &worker, "worker-backup");
    wait_workers(&rig.server, "reverse", 1);
    let (payload_file, text) = payload(ca.dir(), 5);
    let web = CertFiles::in_dir(&dir, "web-1");
    let out = PY.client(rig.tls, &recipe_ca, &web, "reverse", &payload_file);
    assert_reversed(&out, &text);
}
