use super::*;

fn addr(ip: &str) -> Identity {
    Identity::Addr(ip.parse().unwrap())
}

fn cn(name: &str) -> Identity {
    Identity::Cn(name.to_string())
}

const ISSUE_EXAMPLE: &str = "\
# who                 operations            functions
cn:web-*              submit,status         report.*,resize
cn:worker-backup      work                  backup.*
cn:ops                admin                 *
addr:127.0.0.0/8      submit,work,status    *
";

#[test]
fn the_issue_example_grants_what_it_says() {
    let acl = Acl::parse(ISSUE_EXAMPLE).unwrap();
    assert_eq!(acl.rule_count(), 4);
    let web = cn("web-7");
    assert!(acl.allows(&web, Operation::Submit, Some(b"report.daily")));
    assert!(acl.allows(&web, Operation::Submit, Some(b"resize")));
    assert!(!acl.allows(&web, Operation::Submit, Some(b"resize2")));
    assert!(!acl.allows(&web, Operation::Submit, Some(b"backup.home")));
    assert!(!acl.allows(&web, Operation::Work, Some(b"report.daily")));
    assert!(!acl.allows(&web, Operation::Admin, None));
    let backup = cn("worker-backup");
    assert!(acl.allows(&backup, Operation::Work, Some(b"backup.home")));
    assert!(!acl.allows(&backup, Operation::Work, Some(b"backupx")));
    assert!(!acl.allows(&backup, Operation::Submit, Some(b"backup.home")));
    let ops = cn("ops");
    assert!(acl.allows(&ops, Operation::Admin, None));
    assert!(acl.allows(&ops, Operation::Work, Some(b"anything")));
    assert!(acl.allows(&ops, Operation::Status, None));
    assert!(!acl.allows(&cn("ops2"), Operation::Status, None));
    let local = addr("127.3.2.1");
    assert!(acl.allows(&local, Operation::Work, Some(b"x")));
    assert!(acl.allows(&local, Operation::Status, None));
    assert!(!acl.allows(&local, Operation::Admin, None));
    assert!(!acl.allows(&addr("10.0.0.1"), Operation::Status, None));
    // A certificate name never matches an addr: rule, nor an address a cn: rule.
    assert!(!acl.allows(&cn("127.0.0.1"), Operation::Status, None));
}

#[test]
fn matching_rules_add_up() {
    let acl = Acl::parse(
        "cn:a  submit  one\n\
         cn:*  work    two\n",
    )
    .unwrap();
    assert!(acl.allows(&cn("a"), Operation::Submit, Some(b"one")));
    assert!(acl.allows(&cn("a"), Operation::Work, Some(b"two")));
    assert!(!acl.allows(&cn("a"), Operation::Work, Some(b"one")));
    assert!(!acl.allows(&cn("b"), Operation::Submit, Some(b"one")));
}

#[test]
fn an_empty_acl_denies_everything() {
    let acl = Acl::parse("# nothing\n\n").unwrap();
    assert!(!acl.allows(&addr("127.0.0.1"), Operation::Status, None));
}

#[test]
fn cidr_prefixes_match_by_bits() {
    let acl = Acl::parse(
        "addr:10.1.2.128/25 status *\n\
         addr:192.168.0.7 status *\n\
         addr:fd00::/8 status *\n",
    )
    .unwrap();
    assert!(acl.allows(&addr("10.1.2.200"), Operation::Status, None));
    assert!(!acl.allows(&addr("10.1.2.127"), Operation::Status, None));
    assert!(acl.allows(&addr("192.168.0.7"), Operation::Status, None));
    assert!(!acl.allows(&addr("192.168.0.8"), Operation::Status, None));
    assert!(acl.allows(&addr("fd12::1"), Operation::Status, None));
    assert!(!acl.allows(&addr("fe80::1"), Operation::Status, None));
    // An IPv4 peer on a dual-stack socket.
    assert!(acl.allows(&addr("::ffff:10.1.2.129"), Operation::Status, None));
    let all = Acl::parse("addr:0.0.0.0/0 status *\n").unwrap();
    assert!(all.allows(&addr("8.8.8.8"), Operation::Status, None));
}

#[test]
fn globs() {
    assert!(glob_matches(b"*", b""));
    assert!(glob_matches(b"report.*", b"report."));
    assert!(!glob_matches(b"report.*", b"report"));
    assert!(glob_matches(b"a*c*e", b"abcdxe"));
    assert!(!glob_matches(b"a*c*e", b"abcdx"));
    assert!(glob_matches(b"web-*", b"web-1"));
    assert!(!glob_matches(b"web-*", b"xweb-1"));
}

#[test]
fn errors_name_line_and_column() {
    let err = |text: &str| Acl::parse(text).unwrap_err().to_string();
    assert_eq!(
        err("cn:a submit x\ncn:b  submit,wrok  x\n"),
        "2:14: 'wrok' is not an operation (submit, work, status, ping, admin)"
    );
    assert_eq!(
        err("addr:10.0.0.0/33 status *"),
        "1:6: '/33' is not a prefix length from 0 to 32"
    );
    assert_eq!(
        err("  addr:nope status *"),
        "1:8: 'nope' is not an IP address"
    );
    assert_eq!(
        err("user:x status *"),
        "1:1: 'user:x' is not cn:NAME, addr:IP[/BITS] or token:NAME"
    );
    assert_eq!(
        err("cn:a status"),
        "1:1: expected: WHO OPERATIONS FUNCTIONS"
    );
    assert_eq!(
        err("cn:a status * extra"),
        "1:15: expected: WHO OPERATIONS FUNCTIONS"
    );
    assert_eq!(err("cn:a status a,,b"), "1:15: an empty function name");
}

#[cfg(feature = "tls")]
#[test]
fn token_line_errors() {
    let err = |text: &str| Acl::parse(text).unwrap_err().to_string();
    assert_eq!(
        err("token t abc"),
        "1:9: expected 64 hex digits (the SHA-256 of the secret)"
    );
    assert_eq!(
        err("\ntoken:ci status *\n"),
        "2:7: token 'ci' has no 'token ci SHA256-HEX' line"
    );
    let hex = "ab".repeat(32);
    assert_eq!(
        err(&format!("token t {hex}\ntoken t {hex}\n")),
        "2:7: token 't' is defined twice"
    );
}

#[cfg(feature = "tls")]
#[test]
fn tokens_are_found_by_digest_and_grant_like_any_identity() {
    let hex = "0f".repeat(32);
    let acl = Acl::parse(&format!("token:ci submit build.*\ntoken ci {hex}  # CI\n")).unwrap();
    assert_eq!(acl.token_for_digest(&[0x0f; 32]), Some("ci"));
    let mut other = [0x0f; 32];
    other[31] = 0x0e;
    assert_eq!(acl.token_for_digest(&other), None);
    let ci = Identity::Token("ci".into());
    assert!(acl.allows(&ci, Operation::Submit, Some(b"build.x")));
    assert!(!acl.allows(&cn("ci"), Operation::Submit, Some(b"build.x")));
    assert_eq!(ci.to_string(), "token:ci");
}

#[cfg(not(feature = "tls"))]
#[test]
fn a_build_without_sha256_refuses_token_lines() {
    let hex = "0f".repeat(32);
    let e = Acl::parse(&format!("cn:a status *\n  token ci {hex}\n")).unwrap_err();
    assert_eq!((e.line, e.column), (2, 3));
}

#[test]
fn ping_is_its_own_operation_on_entry_ids() {
    let acl = Acl::parse(
        "addr:10.0.0.7  ping  backup.*\n\
         cn:ops         admin *\n",
    )
    .unwrap();
    let host = addr("10.0.0.7");
    assert!(acl.allows(&host, Operation::Ping, Some(b"backup.remote")));
    assert!(!acl.allows(&host, Operation::Ping, Some(b"db.dump")));
    assert!(!acl.allows(&host, Operation::Submit, Some(b"backup.remote")));
    assert!(
        acl.allows(&cn("ops"), Operation::Ping, Some(b"db.dump")),
        "admin grants it"
    );
}
