//! 2,000 clients connecting at once are all served promptly (gearmand's backlog of 32 drops
//! them; ours is 1024 and the loop accepts until the queue is empty).

use crate::support;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use support::*;

#[test]
fn two_thousand_clients_connecting_at_once_are_all_served() {
    // Room for 2,000 sockets here and in the server, which inherits the limit.
    // SAFETY: plain getrlimit/setrlimit on this process.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < 4500 {
            lim.rlim_cur = lim.rlim_max.min(4500);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        if lim.rlim_cur < 4500 {
            eprintln!("SKIP: only {} file descriptors may be open", lim.rlim_cur);
            return;
        }
    }
    let s = Server::start(&[]);
    let addr = s.addr;
    let threads = 40;
    let per = 50;
    let barrier = Arc::new(Barrier::new(threads));
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let mut conns: Vec<Conn> = (0..per).map(|_| Conn::connect(addr)).collect();
                for c in conns.iter_mut() {
                    c.send_req(t::ECHO_REQ, &[b"hi"]);
                }
                for c in conns.iter_mut() {
                    assert_eq!(c.expect(t::ECHO_RES), b"hi");
                }
                conns
            })
        })
        .collect();
    let all: Vec<Vec<Conn>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let took = start.elapsed();
    assert_eq!(all.iter().map(Vec::len).sum::<usize>(), threads * per);
    assert!(took < Duration::from_secs(10), "{took:?}");
    eprintln!("2,000 connections served in {took:?}");
}
