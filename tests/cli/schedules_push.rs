//! `gearwheel schedules push` and `show` against a real etcd: a valid file is stored where the
//! cluster reads it and read back byte for byte; an invalid one is refused with the same
//! errors as `gearwheel check` and stores nothing; an etcd that is away is named.

use crate::support;

use std::time::Duration;

use gearwheel::client::etcd::Client;
use gearwheel::cluster::etcd::{Reply, Request};
use support::etcd::Etcd;
use support::*;

const GOOD: &str =
    "CRON_TZ=UTC\n@every 10s heartbeat\n*/5 * * * * cleanup.tmp -- {\"at\":\"{time}\"}\n";
const BAD: &str = "@every 10s heartbeat\n*/61 * * * * cleanup\n";

fn stored(e: &Etcd, key: &str) -> Option<Vec<u8>> {
    let mut c = Client::new(vec![e.addr()], Duration::from_secs(10));
    match c
        .call(&Request::Get {
            key: key.as_bytes().to_vec(),
        })
        .unwrap()
    {
        Reply::Range { kvs, .. } => kvs.into_iter().next().map(|kv| kv.value),
        other => panic!("{other:?}"),
    }
}

/// `gearwheel schedules push FILE` with `args` after it.
fn push(file: &str, args: &[&str]) -> Out {
    gw(&[&["schedules", "push", file][..], args].concat(), None, 30)
}

#[test]
fn a_valid_file_is_pushed_and_shown_and_an_invalid_one_is_refused() {
    if !need("etcd (apt-get install etcd-server)") {
        return;
    }
    let e = Etcd::start();
    let dir = TempDir::new("push");
    let good = dir.path("good.cron");
    std::fs::write(&good, GOOD).unwrap();
    let good = good.to_str().unwrap();
    let url = e.url();

    let show = gw(
        &["schedules", "show", "--etcd", &url, "--cluster", "prod"],
        None,
        30,
    );
    assert_eq!(show.code(), Some(1), "{}", show.stderr);
    assert!(
        show.stderr.contains("nothing pushed for cluster \"prod\""),
        "{}",
        show.stderr
    );

    let out = push(good, &["--etcd", &url, "--cluster", "prod"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains(&format!("{good}: 2 entries OK")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("pushed to gearwheel/prod/schedules at revision "),
        "{}",
        out.stdout
    );
    assert_eq!(
        stored(&e, "gearwheel/prod/schedules").as_deref(),
        Some(GOOD.as_bytes())
    );
    // Another cluster's key is its own.
    assert_eq!(stored(&e, "gearwheel/gearwheel/schedules"), None);

    let show = gw(
        &["schedules", "show", "--etcd", &url, "--cluster", "prod"],
        None,
        30,
    );
    assert_eq!(show.code(), Some(0), "{}", show.stderr);
    assert_eq!(show.stdout, GOOD);

    // An invalid file: check's errors, exit 2, and the stored file is left as it was.
    let bad = dir.path("bad.cron");
    std::fs::write(&bad, BAD).unwrap();
    let bad = bad.to_str().unwrap();
    let check = gw(&["check", bad], None, 30);
    assert_eq!(check.code(), Some(1));
    let out = push(bad, &["--etcd", &url, "--cluster", "prod"]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr.starts_with(&check.stderr),
        "{}\nvs check:\n{}",
        out.stderr,
        check.stderr
    );
    assert!(out.stderr.contains(&format!("{bad}:2:")), "{}", out.stderr);
    assert!(out.stderr.contains("not pushed"), "{}", out.stderr);
    assert_eq!(
        stored(&e, "gearwheel/prod/schedules").as_deref(),
        Some(GOOD.as_bytes())
    );

    // The default cluster name, and several URLs of which the first is down.
    let down = format!("http://127.0.0.1:{}", free_port());
    let out = push(good, &["--etcd", &format!("{down},{url}")]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("pushed to gearwheel/gearwheel/schedules"),
        "{}",
        out.stdout
    );
}

#[test]
fn an_unreachable_or_silent_etcd_is_a_clear_error() {
    let dir = TempDir::new("push-down");
    let good = dir.path("good.cron");
    std::fs::write(&good, GOOD).unwrap();
    let good = good.to_str().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let out = push(good, &["--etcd", &url]);
    assert_eq!(out.code(), Some(3), "{}", out.stderr);
    assert!(
        out.stderr.contains("etcd is unreachable")
            && out.stderr.contains(&format!("127.0.0.1:{port}"))
            && out.stderr.contains("refused"),
        "{}",
        out.stderr
    );
    let show = gw(&["schedules", "show", "--etcd", &url], None, 30);
    assert_eq!(show.code(), Some(3), "{}", show.stderr);

    // Bad flags are usage errors.
    for args in [
        vec!["schedules", "push", good],
        // One scheme for all URLs; the TLS files go with https:// only.
        vec![
            "schedules",
            "push",
            good,
            "--etcd",
            "https://127.0.0.1:2379,http://127.0.0.1:2380",
        ],
        vec![
            "schedules",
            "push",
            good,
            "--etcd",
            &url,
            "--etcd-ca-file",
            good,
        ],
        vec![
            "schedules",
            "push",
            good,
            "--etcd",
            &url,
            "--cluster",
            "a/b",
        ],
        vec![
            "schedules",
            "push",
            good,
            "--etcd",
            &url,
            "--timeout",
            "soon",
        ],
        vec!["schedules", "push", "/nonexistent/file", "--etcd", &url],
    ] {
        let out = gw(&args, None, 30);
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.is_empty(), "{args:?}");
    }

    // An etcd that accepts but never answers (stopped with SIGSTOP): the timeout, named.
    if !need("etcd (apt-get install etcd-server)") {
        return;
    }
    let e = Etcd::start();
    e.pause();
    let out = push(good, &["--etcd", &e.url(), "--timeout", "500ms"]);
    e.resume();
    assert_eq!(out.code(), Some(3), "{}", out.stderr);
    assert!(
        out.stderr.contains("did not answer within 500 ms"),
        "{}",
        out.stderr
    );
}
