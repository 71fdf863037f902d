//! What the gate knows about a connection's peer, fixed at accept: its address, whether it is
//! loopback, whether protected mode refuses it, and how many of its requests were denied.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// What the gate knows about a connection, fixed at accept. Every connection has one, so it
/// is kept small (24 bytes; `reactor::conn`'s tests pin the connection's size): the address
/// in 18 bytes rather than a `SocketAddr`'s 32, and the identity not stored but made when
/// asked, `addr:IP` from the address unless a client certificate named the peer (`cn:NAME`,
/// kept with the TLS session: `Connection::identity`).
#[derive(Clone, Debug)]
pub struct Peer {
    /// The peer's address at accept, canonical, an IPv4 address kept IPv4-mapped.
    ip: Ipv6Addr,
    port: u16,
    pub loopback: bool,
    /// Protected mode refuses this peer: beyond loopback, on a plaintext listener bound beyond
    /// loopback, and no `--acl`.
    pub protected: bool,
    /// Requests denied on this connection (logged up to `--acl-denials-logged`).
    pub denials: u32,
}

impl Peer {
    pub fn new(peer: SocketAddr, protected: bool) -> Peer {
        let ip = peer.ip().to_canonical();
        Peer {
            ip: match ip {
                IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                IpAddr::V6(v6) => v6,
            },
            port: peer.port(),
            loopback: ip.is_loopback(),
            protected: protected && !ip.is_loopback(),
            denials: 0,
        }
    }

    /// The peer's address (canonical: an IPv4-mapped IPv6 address is given as IPv4).
    pub fn ip(&self) -> IpAddr {
        self.ip.to_canonical()
    }

    /// The peer's address and port, as accepted (canonical).
    pub fn peer(&self) -> SocketAddr {
        SocketAddr::new(self.ip(), self.port)
    }
}
