//! Garbage on the wire: random bytes, random headers with random types and lengths, random
//! admin lines, from many connections. The server answers or closes each one and stays up.

use crate::support;
use std::io::Write;
use std::time::Duration;

use support::*;

#[test]
fn random_bytes_never_take_the_server_down() {
    let s = Server::start(&["--max-packet-size", "65536"]);
    let mut seed: u64 = 0xDEAD_BEEF_1234_5678;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    for _ in 0..300 {
        let mut c = s.connect();
        let mut bytes = Vec::new();
        for _ in 0..1 + rnd(20) {
            match rnd(4) {
                0 => {
                    for _ in 0..rnd(200) {
                        bytes.push(rnd(256) as u8);
                    }
                }
                1 => {
                    bytes.extend_from_slice(b"\0REQ");
                    bytes.extend_from_slice(&(rnd(50) as u32).to_be_bytes());
                    let len = rnd(100) as u32;
                    bytes.extend_from_slice(&len.to_be_bytes());
                    for _ in 0..len {
                        bytes.push(if rnd(4) == 0 { 0 } else { b'a' + rnd(26) as u8 });
                    }
                }
                2 => {
                    bytes.extend_from_slice(b"\0REQ");
                    bytes.extend_from_slice(&(rnd(50) as u32).to_be_bytes());
                    bytes.extend_from_slice(&(rnd(u32::MAX as u64) as u32).to_be_bytes());
                }
                _ => {
                    let words = [
                        "status",
                        "show",
                        "cancel job",
                        "maxqueue x 1 2 3",
                        "workers",
                        "shutdown now",
                        "a b c d e f g",
                    ];
                    bytes.extend_from_slice(words[rnd(words.len() as u64) as usize].as_bytes());
                    bytes.extend_from_slice(if rnd(2) == 0 { b"\n" } else { b"\r\n" });
                }
            }
        }
        let _ = c.stream.write_all(&bytes);
        let _ = c.stream.shutdown(std::net::Shutdown::Write);
        c.stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // Whatever came back, the connection ends (closed by the server, or at our EOF).
        c.expect_eof();
    }
    let mut c = s.connect();
    c.send_req(t::ECHO_REQ, &[b"still here"]);
    assert_eq!(c.expect(t::ECHO_RES), b"still here");
    assert!(!s.log().contains("panicked"));
}
