//! Codec tests on byte strings recorded from etcd 3.4.23's gateway (heads shortened to the
//! headers that matter, bodies as sent).

use super::*;

fn encoded(req: &Request) -> String {
    let mut out = Vec::new();
    encode(req, "127.0.0.1:2379", &mut out);
    String::from_utf8(out).unwrap()
}

fn body_of(req: &Request) -> serde_json::Value {
    let s = encoded(req);
    let (head, body) = s.split_once("\r\n\r\n").unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(len, body.len(), "Content-Length counts the body");
    serde_json::from_str(body).unwrap()
}

#[test]
fn a_put_is_one_post_with_base64_and_int64_strings() {
    let req = Request::Put {
        key: b"foo".to_vec(),
        value: b"bar".to_vec(),
        lease: 4111120232578336011,
    };
    assert_eq!(
        encoded(&req),
        "POST /v3/kv/put HTTP/1.1\r\nHost: 127.0.0.1:2379\r\nContent-Type: application/json\r\n\
         Content-Length: 59\r\n\r\n{\"key\":\"Zm9v\",\"value\":\"YmFy\",\"lease\":\"4111120232578336011\"}"
    );
    // No lease: the field is left out, as etcd does.
    let req = Request::Put {
        key: b"k".to_vec(),
        value: Vec::new(),
        lease: 0,
    };
    assert_eq!(body_of(&req), serde_json::json!({"key":"aw==","value":""}));
}

#[test]
fn each_request_goes_to_its_gateway_path() {
    let cases = [
        (
            Request::LeaseGrant { ttl_secs: 5 },
            "/v3/lease/grant",
            r#"{"TTL":"5"}"#,
        ),
        (
            Request::LeaseKeepAlive { lease: 7 },
            "/v3/lease/keepalive",
            r#"{"ID":"7"}"#,
        ),
        (
            Request::LeaseRevoke { lease: 7 },
            "/v3/lease/revoke",
            r#"{"ID":"7"}"#,
        ),
        (
            Request::Get { key: b"a".to_vec() },
            "/v3/kv/range",
            r#"{"key":"YQ=="}"#,
        ),
        (
            Request::GetPrefix {
                prefix: b"a/".to_vec(),
            },
            "/v3/kv/range",
            r#"{"key":"YS8=","range_end":"YTA="}"#,
        ),
        (
            Request::Delete { key: b"a".to_vec() },
            "/v3/kv/deleterange",
            r#"{"key":"YQ=="}"#,
        ),
        (
            Request::Compact { revision: 41 },
            "/v3/kv/compaction",
            r#"{"revision":"41"}"#,
        ),
        (
            Request::Watch {
                key: b"a/".to_vec(),
                prefix: true,
                start_revision: 9,
            },
            "/v3/watch",
            r#"{"create_request":{"key":"YS8=","range_end":"YTA=","start_revision":"9"}}"#,
        ),
        (
            Request::Watch {
                key: b"a".to_vec(),
                prefix: false,
                start_revision: 0,
            },
            "/v3/watch",
            r#"{"create_request":{"key":"YQ=="}}"#,
        ),
    ];
    for (req, path, body) in cases {
        let s = encoded(&req);
        assert!(s.starts_with(&format!("POST {path} HTTP/1.1\r\n")), "{s}");
        assert!(s.ends_with(&format!("\r\n\r\n{body}")), "{s}");
    }
}

#[test]
fn a_txn_writes_its_guards_and_both_branches() {
    let req = Request::Txn(Txn {
        compare: vec![
            Compare::CreateRevision {
                key: b"l".to_vec(),
                revision: 0,
            },
            Compare::ModRevision {
                key: b"r".to_vec(),
                revision: 12,
            },
            Compare::Value {
                key: b"v".to_vec(),
                value: b"x".to_vec(),
            },
        ],
        success: vec![
            Op::Put {
                key: b"l".to_vec(),
                value: b"me".to_vec(),
                lease: 3,
            },
            Op::Delete { key: b"d".to_vec() },
        ],
        failure: vec![
            Op::Get { key: b"l".to_vec() },
            Op::GetPrefix {
                prefix: b"p".to_vec(),
            },
        ],
    });
    assert!(encoded(&req).starts_with("POST /v3/kv/txn HTTP/1.1\r\n"));
    assert_eq!(
        body_of(&req),
        serde_json::json!({
            "compare": [
                {"target":"CREATE","key":"bA==","create_revision":"0","result":"EQUAL"},
                {"target":"MOD","key":"cg==","mod_revision":"12","result":"EQUAL"},
                {"target":"VALUE","key":"dg==","value":"eA==","result":"EQUAL"},
            ],
            "success": [
                {"request_put":{"key":"bA==","value":"bWU=","lease":"3"}},
                {"request_delete_range":{"key":"ZA=="}},
            ],
            "failure": [
                {"request_range":{"key":"bA=="}},
                {"request_range":{"key":"cA==","range_end":"cQ=="}},
            ],
        })
    );
}

#[test]
fn a_prefix_ends_at_its_last_byte_that_can_grow() {
    use super::request::prefix_end;
    assert_eq!(prefix_end(b"gearwheel/a/"), b"gearwheel/a0");
    assert_eq!(prefix_end(b"a\xff"), b"b");
    assert_eq!(prefix_end(b"a\xfe\xff\xff"), b"a\xff");
    assert_eq!(prefix_end(b"\xff\xff"), b"\0");
    assert_eq!(prefix_end(b""), b"\0");
}

// Recorded responses, in the order of one keep-alive connection.

const GRANT: &[u8] = b"HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: *\r\nContent-Type: application/json\r\nGrpc-Metadata-Content-Type: application/grpc\r\nDate: Wed, 25 Nov 2026 08:47:50 GMT\r\nContent-Length: 151\r\n\r\n{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"1\",\"raft_term\":\"2\"},\"ID\":\"4111120232578336006\",\"TTL\":\"5\"}";
const KEEPALIVE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nGrpc-Metadata-Content-Type: application/grpc\r\nDate: Wed, 25 Nov 2026 08:48:02 GMT\r\nTransfer-Encoding: chunked\r\n\r\na3\r\n{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"5\",\"raft_term\":\"2\"},\"ID\":\"4111120232578336021\",\"TTL\":\"5\"}}\n\r\n0\r\n\r\n";
const KEEPALIVE_GONE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n99\r\n{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"4\",\"raft_term\":\"2\"},\"ID\":\"4111120232578336011\"}}\n\r\n0\r\n\r\n";
const PUT: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 114\r\n\r\n{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"2\",\"raft_term\":\"2\"}}";
const RANGE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 253\r\n\r\n{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"3\",\"raft_term\":\"2\"},\"kvs\":[{\"key\":\"bGVhc2Vk\",\"create_revision\":\"3\",\"mod_revision\":\"3\",\"version\":\"1\",\"value\":\"eA==\",\"lease\":\"4111120232578336011\"}],\"count\":\"1\"}";
const REVOKE_UNKNOWN: &[u8] = b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nTrailer: Grpc-Trailer-Content-Type\r\nDate: Wed, 25 Nov 2026 08:48:07 GMT\r\nTransfer-Encoding: chunked\r\n\r\n6c\r\n{\"error\":\"etcdserver: requested lease not found\",\"message\":\"etcdserver: requested lease not found\",\"code\":5}\r\n0\r\nGrpc-Trailer-Content-Type: application/grpc\r\n\r\n";
const DELETED: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 128\r\n\r\n{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"5\",\"raft_term\":\"2\"},\"deleted\":\"1\"}";
const COMPACTED: &[u8] = b"HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: *\r\nContent-Type: application/json\r\nGrpc-Metadata-Content-Type: application/grpc\r\nDate: Fri, 27 Nov 2026 19:47:30 GMT\r\nContent-Length: 114\r\n\r\n{\"header\":{\"cluster_id\":\"14841639068965178418\",\"member_id\":\"10276657743932975437\",\"revision\":\"6\",\"raft_term\":\"2\"}}";
const ALREADY_COMPACTED: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nTrailer: Grpc-Trailer-Content-Type\r\nDate: Fri, 27 Nov 2026 19:47:31 GMT\r\nTransfer-Encoding: chunked\r\n\r\n8f\r\n{\"error\":\"etcdserver: mvcc: required revision has been compacted\",\"message\":\"etcdserver: mvcc: required revision has been compacted\",\"code\":11}\r\n0\r\nGrpc-Trailer-Content-Type: application/grpc\r\n\r\n";
const TXN_WON: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 190\r\n\r\n{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"6\",\"raft_term\":\"2\"},\"succeeded\":true,\"responses\":[{\"response_put\":{\"header\":{\"revision\":\"6\"}}}]}";
const TXN_LOST: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 327\r\n\r\n{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"6\",\"raft_term\":\"2\"},\"responses\":[{\"response_range\":{\"header\":{\"revision\":\"6\"},\"kvs\":[{\"key\":\"dA==\",\"create_revision\":\"6\",\"mod_revision\":\"6\",\"version\":\"1\",\"value\":\"MQ==\"}],\"count\":\"1\"}},{\"response_range\":{\"header\":{\"revision\":\"6\"}}}]}";
const BAD_BASE64: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 104\r\n\r\n{\"error\":\"illegal base64 data at input byte 0\",\"message\":\"illegal base64 data at input byte 0\",\"code\":3}";
const NOT_FOUND_TEXT: &[u8] = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: 19\r\n\r\n404 page not found\n";

fn lease_kv() -> Kv {
    Kv {
        key: b"leased".to_vec(),
        value: b"x".to_vec(),
        create_revision: 3,
        mod_revision: 3,
        version: 1,
        lease: 4111120232578336011,
    }
}

/// The replies the recorded connection above yields, in order.
fn unary_script() -> (Vec<RequestKind>, Vec<u8>, Vec<Result<Reply, EtcdError>>) {
    use RequestKind as K;
    let steps: Vec<(K, &[u8], Result<Reply, EtcdError>)> = vec![
        (
            K::LeaseGrant,
            GRANT,
            Ok(Reply::LeaseGranted {
                lease: 4111120232578336006,
                ttl_secs: 5,
            }),
        ),
        (
            K::LeaseKeepAlive,
            KEEPALIVE,
            Ok(Reply::LeaseKeptAlive {
                lease: 4111120232578336021,
                ttl_secs: 5,
            }),
        ),
        (
            K::LeaseKeepAlive,
            KEEPALIVE_GONE,
            Ok(Reply::LeaseKeptAlive {
                lease: 4111120232578336011,
                ttl_secs: 0,
            }),
        ),
        (K::Put, PUT, Ok(Reply::Put { revision: 2 })),
        (
            K::Range,
            RANGE,
            Ok(Reply::Range {
                revision: 3,
                kvs: vec![lease_kv()],
            }),
        ),
        (
            K::LeaseRevoke,
            REVOKE_UNKNOWN,
            Err(EtcdError::Grpc {
                code: 5,
                message: "etcdserver: requested lease not found".into(),
            }),
        ),
        (
            K::Delete,
            DELETED,
            Ok(Reply::Deleted {
                revision: 5,
                deleted: 1,
            }),
        ),
        (
            K::Txn,
            TXN_WON,
            Ok(Reply::Txn {
                succeeded: true,
                revision: 6,
                ranges: vec![],
            }),
        ),
        (
            K::Txn,
            TXN_LOST,
            Ok(Reply::Txn {
                succeeded: false,
                revision: 6,
                ranges: vec![
                    vec![Kv {
                        key: b"t".to_vec(),
                        value: b"1".to_vec(),
                        create_revision: 6,
                        mod_revision: 6,
                        version: 1,
                        lease: 0,
                    }],
                    vec![],
                ],
            }),
        ),
        (
            K::Put,
            BAD_BASE64,
            Err(EtcdError::Grpc {
                code: 3,
                message: "illegal base64 data at input byte 0".into(),
            }),
        ),
        (
            K::Range,
            NOT_FOUND_TEXT,
            Err(EtcdError::Http {
                status: 404,
                message: "404 page not found".into(),
            }),
        ),
        (K::Compact, COMPACTED, Ok(Reply::Compacted { revision: 6 })),
        (
            K::Compact,
            ALREADY_COMPACTED,
            Err(EtcdError::Grpc {
                code: 11,
                message: "etcdserver: mvcc: required revision has been compacted".into(),
            }),
        ),
        (K::Put, PUT, Ok(Reply::Put { revision: 2 })),
    ];
    let kinds = steps.iter().map(|s| s.0).collect();
    let bytes = steps.iter().flat_map(|s| s.1.iter().copied()).collect();
    let replies = steps.into_iter().map(|s| s.2).collect();
    (kinds, bytes, replies)
}

fn drain(r: &mut ResponseReader, out: &mut Vec<Result<Reply, EtcdError>>) {
    while let Some(x) = r.next() {
        out.push(x);
    }
}

/// Feed `bytes` in the pieces `cuts` makes and collect every reply.
fn read_split(
    kinds: &[RequestKind],
    bytes: &[u8],
    cuts: &[usize],
    max: usize,
) -> Vec<Result<Reply, EtcdError>> {
    let mut r = ResponseReader::new(max);
    for &k in kinds {
        r.expect(k);
    }
    let mut out = Vec::new();
    let mut from = 0;
    for &c in cuts.iter().chain(std::iter::once(&bytes.len())) {
        r.feed(&bytes[from..c]);
        assert!(r.held() <= max + 1100, "held {} bytes", r.held());
        drain(&mut r, &mut out);
        from = c;
    }
    out
}

#[test]
fn a_keep_alive_connection_reads_every_recorded_reply_in_order() {
    let (kinds, bytes, want) = unary_script();
    assert_eq!(read_split(&kinds, &bytes, &[], 4096), want);
}

#[test]
fn replies_are_the_same_split_at_every_byte_offset() {
    let (kinds, bytes, want) = unary_script();
    for cut in 0..=bytes.len() {
        assert_eq!(
            read_split(&kinds, &bytes, &[cut], 4096),
            want,
            "split at {cut}"
        );
    }
}

#[test]
fn replies_are_the_same_one_byte_at_a_time() {
    let (kinds, bytes, want) = unary_script();
    let cuts: Vec<usize> = (1..bytes.len()).collect();
    assert_eq!(read_split(&kinds, &bytes, &cuts, 4096), want);
}

const WATCH: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nGrpc-Metadata-Content-Type: application/grpc\r\nDate: Wed, 25 Nov 2026 08:48:26 GMT\r\nTransfer-Encoding: chunked\r\n\r\n8d\r\n{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"6\",\"raft_term\":\"2\"},\"created\":true}}\n\r\ne5\r\n{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"7\",\"raft_term\":\"2\"},\"events\":[{\"kv\":{\"key\":\"dzE=\",\"create_revision\":\"7\",\"mod_revision\":\"7\",\"version\":\"1\",\"value\":\"MQ==\"}}]}}\n\r\nc2\r\n{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"9\",\"raft_term\":\"2\"},\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"dzE=\",\"mod_revision\":\"9\"}}]}}\n\r\n96\r\n{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"raft_term\":\"2\"},\"canceled\":true,\"compact_revision\":\"8\"}}\n\r\n";

fn watch_replies() -> Vec<Result<Reply, EtcdError>> {
    vec![
        Ok(Reply::WatchCreated { revision: 6 }),
        Ok(Reply::WatchEvents {
            revision: 7,
            events: vec![WatchEvent {
                deleted: false,
                kv: Kv {
                    key: b"w1".to_vec(),
                    value: b"1".to_vec(),
                    create_revision: 7,
                    mod_revision: 7,
                    version: 1,
                    lease: 0,
                },
            }],
        }),
        Ok(Reply::WatchEvents {
            revision: 9,
            events: vec![WatchEvent {
                deleted: true,
                kv: Kv {
                    key: b"w1".to_vec(),
                    mod_revision: 9,
                    ..Kv::default()
                },
            }],
        }),
        Ok(Reply::WatchCanceled {
            compact_revision: 8,
            reason: String::new(),
        }),
    ]
}

#[test]
fn a_watch_stream_yields_one_reply_per_message_split_anywhere() {
    let want = watch_replies();
    let kinds = [RequestKind::Watch];
    assert_eq!(read_split(&kinds, WATCH, &[], 4096), want);
    for cut in 0..=WATCH.len() {
        assert_eq!(
            read_split(&kinds, WATCH, &[cut], 4096),
            want,
            "split at {cut}"
        );
    }
    let cuts: Vec<usize> = (1..WATCH.len()).collect();
    assert_eq!(read_split(&kinds, WATCH, &cuts, 4096), want);
}

#[test]
fn a_watch_message_may_span_chunks_and_chunks_may_hold_several_messages() {
    let a = br#"{"result":{"header":{"revision":"6"},"created":true}}"#;
    let b = br#"{"result":{"header":{"revision":"7"},"events":[{"kv":{"key":"YQ==","mod_revision":"7"}}]}}"#;
    let mut stream: Vec<u8> = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let mut all = a.to_vec();
    all.push(b'\n');
    all.extend_from_slice(b);
    all.push(b'\n');
    for piece in all.chunks(7) {
        stream.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        stream.extend_from_slice(piece);
        stream.extend_from_slice(b"\r\n");
    }
    let got = read_split(&[RequestKind::Watch], &stream, &[], 4096);
    assert_eq!(
        got,
        vec![
            Ok(Reply::WatchCreated { revision: 6 }),
            Ok(Reply::WatchEvents {
                revision: 7,
                events: vec![WatchEvent {
                    deleted: false,
                    kv: Kv {
                        key: b"a".to_vec(),
                        mod_revision: 7,
                        ..Kv::default()
                    }
                }],
            }),
        ]
    );
}

#[test]
fn a_watch_stream_that_ends_says_so() {
    let mut stream = WATCH[..WATCH.iter().position(|&b| b == b'\n').unwrap()].to_vec();
    stream.clear();
    stream.extend_from_slice(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    stream.extend_from_slice(
        b"35\r\n{\"result\":{\"header\":{\"revision\":\"6\"},\"created\":true}}\r\n0\r\n\r\n",
    );
    let got = read_split(&[RequestKind::Watch], &stream, &[], 4096);
    assert_eq!(got[0], Ok(Reply::WatchCreated { revision: 6 }));
    assert!(matches!(got[1], Err(EtcdError::Malformed(ref m)) if m.contains("ended")));
    assert_eq!(got.len(), 2);
}

#[test]
fn a_stream_error_message_is_etcds_error() {
    let msg = br#"{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable"}}"#;
    let mut stream = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    stream.extend_from_slice(format!("{:x}\r\n", msg.len() + 1).as_bytes());
    stream.extend_from_slice(msg);
    stream.extend_from_slice(b"\n\r\n");
    let got = read_split(&[RequestKind::Watch], &stream, &[], 4096);
    assert_eq!(
        got,
        vec![Err(EtcdError::Grpc {
            code: 14,
            message: "etcdserver: no leader".into()
        })]
    );
}

#[test]
fn a_body_over_the_limit_is_refused_before_it_is_read() {
    let got = read_split(&[RequestKind::Range], RANGE, &[], 200);
    assert_eq!(got, vec![Err(EtcdError::TooLarge)]);
}

#[test]
fn an_endless_head_is_refused_at_the_limit() {
    let mut r = ResponseReader::new(1000);
    r.expect(RequestKind::Put);
    r.feed(b"HTTP/1.1 200 OK\r\n");
    for _ in 0..10_000 {
        r.feed(b"X-Filler: y\r\n");
        assert!(r.held() <= 1000 + 13);
    }
    assert_eq!(r.next(), Some(Err(EtcdError::TooLarge)));
    assert_eq!(r.next(), None);
    assert_eq!(r.held(), 0, "a broken reader keeps nothing");
}

#[test]
fn a_watch_message_without_end_is_refused_at_the_limit() {
    let mut r = ResponseReader::new(1000);
    r.expect(RequestKind::Watch);
    r.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    let mut out = Vec::new();
    for _ in 0..10_000 {
        r.feed(b"10\r\n{\"aaaaaaaaaaaaa\"\r\n");
        assert!(r.held() <= 1000 + 1100, "held {}", r.held());
        drain(&mut r, &mut out);
    }
    assert_eq!(out, vec![Err(EtcdError::TooLarge)]);
}

#[test]
fn endless_trailers_are_refused() {
    let mut r = ResponseReader::new(1000);
    r.expect(RequestKind::LeaseKeepAlive);
    r.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
    for _ in 0..1000 {
        r.feed(b"X: y\r\n");
    }
    assert_eq!(r.next(), Some(Err(EtcdError::TooLarge)));
}

#[test]
fn broken_framing_is_malformed_and_stops_the_reader() {
    let cases: [(&[u8], &str); 6] = [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "head"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "chunk size",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX",
            "CRLF",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            "coding",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Type: a\r\n\r\n", "neither"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{]", "line 1"),
    ];
    for (bytes, what) in cases {
        let mut r = ResponseReader::new(4096);
        r.expect(RequestKind::Put);
        r.feed(bytes);
        match r.next() {
            Some(Err(EtcdError::Malformed(m))) => assert!(m.contains(what), "{what}: {m}"),
            other => panic!("{what}: {other:?}"),
        }
        if what != "line 1" {
            r.feed(PUT);
            assert_eq!(r.next(), None, "{what}: a broken reader reads nothing more");
        }
    }
}

#[test]
fn a_response_nobody_asked_for_is_malformed() {
    let mut r = ResponseReader::new(4096);
    r.feed(PUT);
    assert!(matches!(r.next(), Some(Err(EtcdError::Malformed(_)))));
}

#[test]
fn errors_say_what_happened() {
    let e = EtcdError::Grpc {
        code: 5,
        message: "etcdserver: requested lease not found".into(),
    };
    assert_eq!(
        e.to_string(),
        "etcd error (code 5): etcdserver: requested lease not found"
    );
    assert_eq!(
        EtcdError::Http {
            status: 404,
            message: "404 page not found".into()
        }
        .to_string(),
        "etcd answered HTTP 404: 404 page not found"
    );
}
