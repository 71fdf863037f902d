//! Codec micro-benchmarks: frame decoding plus request parsing per packet type, response
//! encoding per packet type, admin lines. Each sample works through a batch of packets laid
//! end to end in one buffer, as a pipelining peer would send them.
//!
//! `cargo bench --bench codec [-- FILTER]`

mod common;

use bytes::{Bytes, BytesMut};
use common::{Counting, Harness};
use gearwheel::proto::admin::AdminCommand;
use gearwheel::proto::frame::{Incoming, Limits, decode};
use gearwheel::proto::packet::PacketType;
use gearwheel::proto::request::Request;
use gearwheel::proto::response::{Handle, Response, encode};

#[global_allocator]
static ALLOC: Counting = Counting;

const PAYLOAD: [u8; 64] = [b'x'; 64];

fn packet(magic: &[u8; 4], ptype: u32, parts: &[&[u8]]) -> Vec<u8> {
    let body: Vec<u8> = parts.join(&0u8);
    let mut v = magic.to_vec();
    v.extend_from_slice(&ptype.to_be_bytes());
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(&body);
    v
}

fn repeat(one: &[u8], n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(one.len() * n);
    for _ in 0..n {
        v.extend_from_slice(one);
    }
    v
}

/// Decode every frame of `stream`; with `parse`, also turn each into a typed request or
/// admin command, as the reactor does.
fn decode_all(buf: &mut BytesMut, limits: &Limits, parse: bool) -> usize {
    let mut n = 0;
    while let Some(i) = decode(buf, limits).expect("valid stream") {
        if parse {
            match i {
                Incoming::Packet(f) => {
                    std::hint::black_box(Request::parse(&f).ok());
                }
                Incoming::Admin(line) => {
                    std::hint::black_box(AdminCommand::parse(&line));
                }
            }
        } else {
            std::hint::black_box(i);
        }
        n += 1;
    }
    n
}

fn main() {
    let mut h = Harness::from_args("codec");
    let n = h.size(10_000, 1_000);
    let limits = Limits::default();
    let unique = b"6c9d1a5e-2f8b-4c1e-9a43-0b7d2e5f8a11";
    let handle = b"H:bench-host:1234567";

    let inputs: Vec<(&str, Vec<u8>)> = vec![
        (
            "SUBMIT_JOB (fn, 36 B unique, 64 B data)",
            packet(
                b"\0REQ",
                PacketType::SubmitJob as u32,
                &[b"reverse", unique, &PAYLOAD],
            ),
        ),
        (
            "SUBMIT_JOB_BG",
            packet(
                b"\0REQ",
                PacketType::SubmitJobBg as u32,
                &[b"reverse", unique, &PAYLOAD],
            ),
        ),
        (
            "SUBMIT_JOB_EPOCH",
            packet(
                b"\0REQ",
                PacketType::SubmitJobEpoch as u32,
                &[b"reverse", unique, b"1795000000", &PAYLOAD],
            ),
        ),
        (
            "GRAB_JOB_UNIQ",
            packet(b"\0REQ", PacketType::GrabJobUniq as u32, &[]),
        ),
        (
            "PRE_SLEEP",
            packet(b"\0REQ", PacketType::PreSleep as u32, &[]),
        ),
        (
            "WORK_COMPLETE (64 B data)",
            packet(
                b"\0REQ",
                PacketType::WorkComplete as u32,
                &[handle, &PAYLOAD],
            ),
        ),
        (
            "CAN_DO",
            packet(b"\0REQ", PacketType::CanDo as u32, &[b"reverse"]),
        ),
        ("admin `status`", b"status\n".to_vec()),
        (
            "admin `maxqueue fn 10 20 30`",
            b"maxqueue fn 10 20 30\r\n".to_vec(),
        ),
    ];

    println!("decode only (frame split, no request parse):");
    for (name, one) in &inputs {
        let stream = repeat(one, n);
        h.bench_with(
            &format!("decode {name}"),
            n,
            || BytesMut::from(&stream[..]),
            |buf| decode_all(buf, &limits, false),
        );
    }
    println!("decode + parse (what the reactor does per frame):");
    for (name, one) in &inputs {
        let stream = repeat(one, n);
        h.bench_with(
            &format!("decode+parse {name}"),
            n,
            || BytesMut::from(&stream[..]),
            |buf| decode_all(buf, &limits, true),
        );
    }
    // A client reads these; the frame decoder handles RES magic as well.
    let assign = packet(
        b"\0RES",
        PacketType::JobAssignUniq as u32,
        &[handle, b"reverse", unique, &PAYLOAD],
    );
    let stream = repeat(&assign, n);
    h.bench_with(
        "decode JOB_ASSIGN_UNIQ (client side)",
        n,
        || BytesMut::from(&stream[..]),
        |buf| decode_all(buf, &limits, false),
    );

    println!("encode (into a reused write buffer):");
    // The server's own handles: a shared prefix and the number, written out while encoding.
    let hb = Handle::Own {
        prefix: Bytes::from_static(b"H:bench-host:"),
        n: 1234567,
    };
    assert_eq!(hb, &handle[..]);
    let fb = Bytes::from_static(b"reverse");
    let ub = Bytes::from_static(unique);
    let db = Bytes::from_static(&PAYLOAD);
    let responses: Vec<(&str, Response)> = vec![
        ("JOB_CREATED", Response::JobCreated { handle: hb.clone() }),
        (
            "JOB_ASSIGN_UNIQ (64 B data)",
            Response::JobAssignUniq {
                handle: hb.clone(),
                func: fb.clone(),
                unique: ub.clone(),
                data: db.clone(),
            },
        ),
        (
            "WORK_COMPLETE (64 B data)",
            Response::WorkWithData {
                ptype: PacketType::WorkComplete,
                handle: hb.clone(),
                data: db.clone(),
            },
        ),
        ("NOOP", Response::Noop),
        ("NO_JOB", Response::NoJob),
        (
            "STATUS_RES",
            Response::StatusRes {
                handle: hb.clone(),
                known: true,
                running: true,
                numerator: 12,
                denominator: 100,
            },
        ),
        (
            "admin text line",
            Response::text(Bytes::from_static(b"reverse\t10\t2\t4\n")),
        ),
    ];
    for (name, r) in &responses {
        h.bench_with(
            &format!("encode {name}"),
            n,
            || BytesMut::with_capacity(n * 256),
            |out| {
                for _ in 0..n {
                    encode(std::hint::black_box(r), out);
                }
                out.len()
            },
        );
    }
    h.finish();
}
