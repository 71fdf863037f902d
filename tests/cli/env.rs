//! The client commands find their server the way the Gearman tools do: `-s`, else
//! $GEARMAN_SERVERS, else $GEARMAN_SERVER, else 127.0.0.1 on $GEARMAND_PORT (as `serve`).

use crate::support;

use std::process::Command;

use support::*;

/// `gearwheel ARGS` with exactly these server variables set (the others removed).
fn gw_env(args: &[&str], vars: &[(&str, &str)], stdin: Option<&[u8]>) -> Out {
    let mut c = Command::new(BIN);
    c.args(args);
    for v in ["GEARMAN_SERVERS", "GEARMAN_SERVER", "GEARMAND_PORT"] {
        c.env_remove(v);
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    run_out(&mut c, stdin, 10)
}

#[test]
fn admin_submit_and_work_honour_gearmand_port_and_gearman_servers() {
    let s = Server::start(&[]);
    let port = s.port().to_string();
    let list = format!("127.0.0.1:1,127.0.0.1:{port}");

    let o = gw_env(&["admin", "version"], &[("GEARMAND_PORT", &port)], None);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert_eq!(o.stdout, format!("{}\n", env!("CARGO_PKG_VERSION")));
    let o = gw_env(
        &["admin", "getpid"],
        &[("GEARMAN_SERVER", &format!("127.0.0.1:{port}"))],
        None,
    );
    assert_eq!(o.stdout, format!("{}\n", s.child.id()), "{o:?}");

    // submit tries the list in order: the first address refuses, the second is the server.
    let o = gw_env(
        &["submit", "-b", "-f", "envjob", "x"],
        &[("GEARMAN_SERVERS", &list)],
        None,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert!(o.stdout.starts_with("H:"), "{o:?}");
    assert_eq!(status_of(&s, "envjob").map(|t| t.0), Some(1));

    // A bare host takes $GEARMAND_PORT; $GEARMAN_SERVERS wins over $GEARMAN_SERVER.
    let _w = Proc::gearwheel(
        &["work", "-f", "envwork", "--", "cat"],
        &[
            ("GEARMAN_SERVERS", "127.0.0.1"),
            ("GEARMAN_SERVER", "127.0.0.1:1"),
            ("GEARMAND_PORT", &port),
        ],
    );
    wait_workers(&s, "envwork", 1);

    let o = gw_env(&["admin", "status"], &[("GEARMAND_PORT", "notaport")], None);
    assert_eq!(o.code(), Some(2), "{o:?}");
    assert!(o.stderr.contains("GEARMAND_PORT"), "{o:?}");
}
