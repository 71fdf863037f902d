//! The audit trail over real sockets: operators' actions from an admin line, the HTTP
//! routes and the console are listed with who did them, from where, and what came of it;
//! views and refused attempts are not; the trail survives kill -9 and keeps its bound.

use crate::support;
use support::*;

/// The console's proof that a request comes from its own page.
const PAGE: [(&str, &str); 2] = [("X-Gearwheel-Console", "1"), ("Origin", "http://127.0.0.1")];

fn start(dir: &std::path::Path, schedules: &std::path::Path) -> HttpServer {
    HttpServer::start(&[
        "--data-dir",
        dir.to_str().unwrap(),
        "--schedules",
        schedules.to_str().unwrap(),
        "--keep-audit",
        "5",
    ])
}

/// `show audit` without its numbers and times: (identity, peer ip, command, outcome).
fn trail(c: &mut Conn) -> Vec<[String; 4]> {
    c.admin("show audit", true)
        .lines()
        .filter(|l| *l != ".")
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 6, "{l:?}");
            let ip = f[3].rsplit_once(':').map_or(f[3], |(ip, _)| ip);
            [f[2], ip, f[4], f[5]].map(str::to_string)
        })
        .collect()
}

fn row(command: &str, outcome: &str) -> [String; 4] {
    ["addr:127.0.0.1", "127.0.0.1", command, outcome].map(str::to_string)
}

#[test]
fn actions_from_admin_lines_http_and_the_console_are_listed_across_a_restart() {
    let dir = TempDir::new("audit");
    let schedules = dir.with_extension("cron");
    std::fs::write(&schedules, "@every 1h tick\n").unwrap();
    let s = start(&dir, &schedules);
    let mut c = s.gearman();
    assert_eq!(c.admin("maxqueue f 3", false), "OK\r\n");
    assert!(c.admin("cancel job H:none:1", false).starts_with("ERR"));
    // Views are not actions.
    c.admin("status", true);
    c.admin("maxqueue f", false);
    assert_eq!(s.get("/status").status, 200);
    let r = s.call("POST", "/schedules/tick/pause", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s.call("POST", "/ui/api/schedule", &PAGE, b"resume tick");
    assert_eq!(r.status, 200, "{}", r.text());
    // Refused by the console's own check: counted, not recorded.
    assert_eq!(
        s.call("POST", "/ui/api/schedule", &[], b"pause tick")
            .status,
        403
    );
    let want = vec![
        row("maxqueue f 3", "OK"),
        row("cancel job H:none:1", "ERR UNKNOWN_JOB"),
        row("POST /schedules/tick/pause", "OK"),
        row("POST /ui/api/schedule resume tick", "OK"),
    ];
    let got = trail(&mut c);
    assert_eq!(got, want);
    let json = s.get("/audit").text();
    assert_json(&json);
    assert!(
        json.starts_with("{\"total\":4,\"actions\":[{\"seq\":1,"),
        "{json}"
    );
    assert!(json.contains("\"identity\":\"addr:127.0.0.1\""), "{json}");
    assert_eq!(s.get("/ui/api/audit").text(), json);
    s.server.wait_log("audit: addr:127.0.0.1 (127.0.0.1:", 10);

    // kill -9: the trail comes back from the journal, and numbers go on after it.
    let mut p = s.server;
    p.signal(libc::SIGKILL);
    p.wait_exit(5).expect("killed");
    let s = start(&dir, &schedules);
    let mut c = s.gearman();
    assert_eq!(trail(&mut c)[..], got[..]);
    // The bound: two more actions, five kept, the oldest gone.
    assert_eq!(c.admin("maxqueue g 1", false), "OK\r\n");
    assert_eq!(c.admin("maxqueue h 1", false), "OK\r\n");
    let now = trail(&mut c);
    assert_eq!(now.len(), 5, "{now:#?}");
    assert_eq!(now[0], got[1]);
    assert_eq!(now[4], row("maxqueue h 1", "OK"));
    let last = c.admin("show audit 1", true);
    assert!(last.starts_with("6\t"), "{last}");
    assert_eq!(last.lines().count(), 2, "{last}");
}

/// Under an ACL, an HTTP action is recorded under the bearer token's name (its secret is
/// never written), and refused attempts are not recorded.
#[cfg(feature = "tls")]
#[test]
fn a_bearer_tokens_action_is_recorded_under_its_name_and_refusals_are_not() {
    let dir = TempDir::new("audit-acl");
    let secret = "tok-audit-s3cret";
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("printf %s '{secret}' | sha256sum")])
        .output()
        .expect("sha256sum");
    let hex = String::from_utf8(out.stdout).unwrap()[..64].to_string();
    let acl = dir.with_extension("acl");
    std::fs::write(
        &acl,
        format!("token ops {hex}\ntoken:ops admin *\naddr:127.0.0.1 status *\n"),
    )
    .unwrap();
    let schedules = dir.with_extension("cron");
    std::fs::write(&schedules, "@every 1h tick\n").unwrap();
    let s = HttpServer::start(&[
        "--acl",
        acl.to_str().unwrap(),
        "--schedules",
        schedules.to_str().unwrap(),
    ]);
    let bearer = format!("Bearer {secret}");
    let r = s.call(
        "POST",
        "/schedules/tick/pause",
        &[("Authorization", &bearer)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // Refused by the ACL: counted in /metrics, not recorded.
    assert_eq!(
        s.call("POST", "/schedules/tick/resume", &[], b"").status,
        403
    );
    let mut c = s.gearman();
    assert!(
        c.admin("maxqueue f 1", false)
            .starts_with("ERR PERMISSION_DENIED")
    );
    let listed = c.admin("show audit", true);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    let f: Vec<&str> = lines[0].split('\t').collect();
    assert_eq!(
        (f[0], f[2], f[4], f[5]),
        ("1", "token:ops", "POST /schedules/tick/pause", "OK"),
        "{listed}"
    );
    // The log line is written by the server's process and read through a pipe: wait for it.
    s.server.wait_log("audit: token:ops (", 10);
    let log = s.server.log();
    assert!(!log.contains(secret), "{log}");
}
