//! The command line, without a running server: bad flags, --version, --help. Nothing here
//! needs tests/support: each test runs the binary once with `Command::output`.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gearwheel"))
}

#[test]
fn bad_flags_exit_2_with_a_reason() {
    let cases: [(&[&str], &str); 4] = [
        (&["serve", "-p", "0", "--verbose", "loud"], "loud"),
        (&["serve", "-p", "0", "-q", "mysql"], "mysql"),
        (&["serve", "-p", "0", "--no-such-flag"], "no-such-flag"),
        (&["serve", "-p", "notaport"], "notaport"),
    ];
    for (args, needle) in cases {
        let out = bin().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: stderr {err:?}");
    }
}

#[test]
fn version_flag_prints_the_version() {
    for flag in ["--version", "-V"] {
        let out = bin().arg(flag).output().unwrap();
        assert!(out.status.success(), "{flag}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.trim(),
            concat!("gearwheel ", env!("CARGO_PKG_VERSION")),
            "{flag}"
        );
    }
}

#[test]
fn serve_help_works() {
    let out = bin().args(["serve", "--help"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in ["--port", "--job-retries", "--max-packet-size", "--verbose"] {
        assert!(text.contains(flag), "{flag} missing from {text}");
    }
}
