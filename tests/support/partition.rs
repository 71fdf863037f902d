//! A TCP relay that can be cut, to partition one server from etcd while it keeps running:
//! `cut` turns every connection through it into a black hole (bytes are read and dropped, so
//! neither side sees a close or an error, as when a network link dies), and the connections
//! cut stay dead after `heal`, as a real peer's would until its own timeouts end them; new
//! connections after `heal` are relayed again.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

pub struct Relay {
    pub addr: SocketAddr,
    /// Bumped by each `cut`: a connection older than the current one is dead.
    cuts: Arc<AtomicU64>,
    cut: Arc<AtomicBool>,
}

impl Relay {
    /// Relay a loopback port to `target`.
    pub fn start(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let cuts = Arc::new(AtomicU64::new(0));
        let cut = Arc::new(AtomicBool::new(false));
        let (cuts2, cut2) = (Arc::clone(&cuts), Arc::clone(&cut));
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let born = cuts2.load(Ordering::SeqCst);
                let live = {
                    let (cuts, cut) = (Arc::clone(&cuts2), Arc::clone(&cut2));
                    move || !cut.load(Ordering::SeqCst) && cuts.load(Ordering::SeqCst) == born
                };
                if !live() {
                    // Accepted (the SYN is answered, as a dead link's far end would not
                    // refuse it), then nothing: hold it until the peer gives up.
                    thread::spawn(move || hold(client));
                    continue;
                }
                let Ok(server) = TcpStream::connect(target) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let live2 = live.clone();
                thread::spawn(move || pump(client, server, live));
                thread::spawn(move || pump(s2, c2, live2));
            }
        });
        Relay { addr, cuts, cut }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// From now on nothing passes, on the open connections or on new ones.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.cuts.fetch_add(1, Ordering::SeqCst);
    }

    /// New connections pass again; those open across the cut stay dead.
    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

/// Copy `from` to `to` while `live()`; after, read and drop until `from` closes.
fn pump(mut from: TcpStream, mut to: TcpStream, live: impl Fn() -> bool) {
    from.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => {
                if live() {
                    let _ = to.shutdown(Shutdown::Write);
                }
                return;
            }
            Ok(n) => {
                if live() && to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// Read and drop everything until the peer closes.
fn hold(mut s: TcpStream) {
    let mut buf = [0u8; 4096];
    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
}
