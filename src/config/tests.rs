//! Unit tests of the serve flags and their validation (config.rs).

use super::*;

fn serve(args: &[&str]) -> Result<ServeArgs, String> {
    let args = split_equals(args.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    // ServeArgs parsed alone, as argh does below `gearwheel`: config does not import cli.
    match refs.split_first() {
        Some((&"serve", rest)) => {
            ServeArgs::from_args(&["gearwheel", "serve"], rest).map_err(|e| e.output)
        }
        _ => Err("no serve".into()),
    }
}

#[test]
fn equals_form_is_split() {
    assert_eq!(
        split_equals([
            "--port=4731".into(),
            "-L".into(),
            "::1".into(),
            "--".into(),
            "--x=y".into()
        ]),
        vec!["--port", "4731", "-L", "::1", "--", "--x=y"]
    );
}

#[test]
fn gearmand_style_command_lines_parse() {
    let a = serve(&[
        "serve",
        "--listen=127.0.0.1",
        "-L",
        "::1",
        "--port=0",
        "-t",
        "4",
        "-q",
        "builtin",
        "--verbose=INFO",
        "-j",
        "3",
        "-R",
        "--exceptions",
        "--keepalive",
    ])
    .unwrap();
    let c = Config::from_args(a, None).unwrap();
    assert_eq!(
        c.listen,
        vec!["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()]
    );
    assert_eq!(c.engine.job_retries, 3);
    assert!(c.engine.round_robin && c.engine.exceptions);
    assert_eq!(c.log_level, logger::Verbosity::Info);
    assert_eq!(c.notices.len(), 2);
    assert!(c.keepalive.is_some());
}

#[test]
fn defaults_and_env_port() {
    let c = Config::from_args(serve(&["serve"]).unwrap(), None).unwrap();
    assert_eq!(c.listen, vec!["127.0.0.1:4730".parse().unwrap()]);
    assert_eq!(c.limits.max_packet, 64 << 20);
    assert_eq!(c.backlog, 1024);
    assert_eq!(c.engine.grab_wait_ms, 1);
    assert_eq!(c.engine.future_horizon_ms, 31 * 86_400_000);
    let h = |v: &str| {
        Config::from_args(serve(&["serve", "--future-horizon", v]).unwrap(), None)
            .map(|c| c.engine.future_horizon_ms)
    };
    assert_eq!(h("0"), Ok(0));
    assert_eq!(h("12h"), Ok(12 * 3_600_000));
    assert!(h("soon").unwrap_err().contains("--future-horizon"));
    assert!(c.engine.handle_prefix.starts_with("H:"));
    let c = Config::from_args(serve(&["serve"]).unwrap(), Some("4999".into())).unwrap();
    assert_eq!(c.listen[0].port(), 4999);
    let c = Config::from_args(
        serve(&["serve", "-p", "5000"]).unwrap(),
        Some("4999".into()),
    )
    .unwrap();
    assert_eq!(c.listen[0].port(), 5000);
}

#[test]
fn bad_values_are_refused_with_a_reason() {
    assert!(
        Config::from_args(serve(&["serve", "-q", "mysql"]).unwrap(), None)
            .unwrap_err()
            .contains("mysql")
    );
    assert!(
        Config::from_args(serve(&["serve", "--verbose", "loud"]).unwrap(), None)
            .unwrap_err()
            .contains("loud")
    );
    assert!(Config::from_args(serve(&["serve"]).unwrap(), Some("x".into())).is_err());
    assert!(serve(&["serve", "--port", "notaport"]).is_err());
    assert!(
        Config::from_args(serve(&["serve", "--grab-wait", "1001"]).unwrap(), None)
            .unwrap_err()
            .contains("--grab-wait")
    );
    assert!(Config::from_args(serve(&["serve", "-L", "[::1]:4800"]).unwrap(), None).is_ok());
}

#[test]
fn the_refusals_budget_keeps_its_former_name() {
    let per_second = |args: &[&str]| {
        Config::from_args(serve(args).unwrap(), None).map(|c| c.refusals_logged_per_second)
    };
    assert_eq!(per_second(&["serve"]), Ok(100));
    assert_eq!(
        per_second(&["serve", "--refusals-logged-per-second", "7"]),
        Ok(7)
    );
    assert_eq!(
        per_second(&["serve", "--acl-denials-logged-per-second", "8"]),
        Ok(8)
    );
    let both = per_second(&[
        "serve",
        "--refusals-logged-per-second",
        "7",
        "--acl-denials-logged-per-second=8",
    ]);
    assert!(both.unwrap_err().contains("former name"));
}

#[test]
fn http_listener_flags() {
    let c = Config::from_args(serve(&["serve"]).unwrap(), None).unwrap();
    assert!(c.http.is_none());
    let c = Config::from_args(
        serve(&[
            "serve",
            "-L",
            "127.0.0.1",
            "-L",
            "::1",
            "--http-port",
            "8081",
        ])
        .unwrap(),
        None,
    )
    .unwrap();
    let h = c.http.unwrap();
    assert_eq!(
        h.listen,
        vec![
            "127.0.0.1:8081".parse().unwrap(),
            "[::1]:8081".parse().unwrap()
        ]
    );
    assert_eq!(h.header_timeout, Duration::from_secs(10));
    assert_eq!(h.idle_timeout, Duration::from_secs(60));
    let c = Config::from_args(
        serve(&[
            "serve",
            "--http-listen=127.0.0.2",
            "--http-listen",
            "127.0.0.3:9000",
            "--http-header-timeout=2",
            "--http-idle-timeout",
            "5",
        ])
        .unwrap(),
        None,
    )
    .unwrap();
    let h = c.http.unwrap();
    assert_eq!(
        h.listen,
        vec![
            "127.0.0.2:8080".parse().unwrap(),
            "127.0.0.3:9000".parse().unwrap()
        ]
    );
    assert_eq!(h.header_timeout, Duration::from_secs(2));
    assert_eq!(h.idle_timeout, Duration::from_secs(5));
    let e = Config::from_args(serve(&["serve", "--http-port", "4730"]).unwrap(), None).unwrap_err();
    assert!(e.contains("also a Gearman listener"), "{e}");
    let e = Config::from_args(
        serve(&["serve", "--http-port", "0", "--http-header-timeout", "0"]).unwrap(),
        None,
    )
    .unwrap_err();
    assert!(e.contains("--http-header-timeout"), "{e}");
}

#[test]
fn daemon_and_user_flags() {
    let c = Config::from_args(serve(&["serve", "-d", "--user=root"]).unwrap(), None).unwrap();
    assert!(c.daemon);
    let u = c.user.unwrap();
    assert_eq!((u.name.as_str(), u.uid, u.gid), ("root", 0, 0));
    let c = Config::from_args(serve(&["serve"]).unwrap(), None).unwrap();
    assert!(!c.daemon && c.user.is_none());
    let e = Config::from_args(
        serve(&["serve", "-u", "no-such-user-gearwheel"]).unwrap(),
        None,
    )
    .unwrap_err();
    assert!(e.contains("no such user"), "{e}");
}

#[test]
fn the_bounds_of_functions_settings_reach_the_engine() {
    let c = Config::from_args(serve(&["serve"]).unwrap(), None).unwrap();
    assert_eq!(c.engine.max_function_settings, 10_000);
    assert_eq!(c.engine.max_rate_count, 10_000);
    let a = serve(&[
        "serve",
        "--max-function-settings",
        "2",
        "--max-rate-count",
        "5",
    ])
    .unwrap();
    let c = Config::from_args(a, None).unwrap();
    assert_eq!(c.engine.max_function_settings, 2);
    assert_eq!(c.engine.max_rate_count, 5);
    let zero = serve(&["serve", "--max-rate-count", "0"]).unwrap();
    assert_eq!(
        Config::from_args(zero, None).unwrap_err(),
        "--max-rate-count must be at least 1"
    );
}
