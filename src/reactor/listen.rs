//! Listening sockets with our backlog and IPv6-only setting, and keepalive on accepted ones.

use std::io;
use std::net::SocketAddr;

use mio::net::{TcpListener, TcpStream};
use socket2::{Domain, SockRef, Socket, TcpKeepalive, Type};

use crate::config::Keepalive;

pub fn bind(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        // Each family gets its own listener, as gearmand binds both.
        socket.set_only_v6(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    Ok(TcpListener::from_std(socket.into()))
}

/// Keepalive on the accepted socket itself (gearmand sets it on the listener only), so that
/// a worker machine that vanishes gives its job back in about two minutes.
pub fn set_keepalive(stream: &TcpStream, k: &Keepalive) {
    let ka = TcpKeepalive::new()
        .with_time(k.idle)
        .with_interval(k.interval)
        .with_retries(k.count);
    if let Err(e) = SockRef::from(stream).set_tcp_keepalive(&ka) {
        log::warn!("cannot set keepalive: {e}");
    }
}
