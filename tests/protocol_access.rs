//! The gate into the engine (src/reactor/gate.rs) over real sockets: who may shut the server
//! down, and (issue 17) what the --acl file grants each identity.

mod common;
mod support;

use std::net::{IpAddr, SocketAddr, UdpSocket};

use common::{Conn, Server};

/// This machine's own non-loopback address (the source the routing table picks), so a test
/// can reach a server bound to 0.0.0.0 as a peer from beyond loopback. `None` (with the reason
/// printed) on a machine without one.
fn own_address() -> Option<IpAddr> {
    // A UDP "connect" sends nothing: it only asks the routing table for a source address.
    let ip = UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").map(|()| s))
        .and_then(|s| s.local_addr())
        .map(|a| a.ip());
    match ip {
        Ok(ip) if !ip.is_loopback() && !ip.is_unspecified() => Some(ip),
        other => {
            eprintln!("SKIP: no non-loopback address to connect from ({other:?})");
            None
        }
    }
}

/// A connection to `s` from this machine's non-loopback address.
fn connect_from_outside(s: &Server, ip: IpAddr) -> Conn {
    Conn::connect(SocketAddr::new(ip, s.port()))
}

#[test]
fn shutdown_from_beyond_loopback_is_refused_by_the_gate() {
    let Some(ip) = own_address() else { return };
    let s = Server::start(&["-L", "0.0.0.0"]);
    let mut far = connect_from_outside(&s, ip);
    assert_eq!(
        far.admin("shutdown", false),
        "ERR SHUTDOWN_REFUSED shutdown+is+only+accepted+from+a+loopback+address\r\n"
    );
    s.wait_log("shutdown refused: not a loopback address", 5);
    // The connection stays usable, and the server up.
    assert!(far.admin("version", false).starts_with("OK "));
    let mut near = Conn::connect(SocketAddr::new("127.0.0.1".parse().unwrap(), s.port()));
    assert_eq!(near.admin("shutdown", false), "OK\r\n");
}
