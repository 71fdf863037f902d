//! TLS: the certificate files behind `--ssl*`, the rustls configurations built from them (server
//! and client), their reload on SIGHUP, and the name a peer's certificate gives its connection.
//!
//! Only this module (and the reactor's TLS transport) knows TLS: the codec and the engine see
//! the same plaintext bytes either way. Built with the cargo feature `tls` (on by default).
//!
//! The interface the ACL layer uses: after the handshake, [`peer_name`] of the connection's
//! rustls session is the client certificate's one subject CN, else its first DNS SAN (`None`
//! without a client certificate); the reactor keeps it on the connection as its identity.
//! Under mutual TLS a certificate without such a name fails the handshake (name.rs), so a
//! certificate holder always has a name.
//!
//! - `files`: the PEM files and the rustls server and client configurations.
//! - `client`: the client side (`--ssl` for the commands, the `--etcd-*` files).
//! - `stream`: one TLS session over a non-blocking socket, server or client side.
//! - `name`: the name a certificate gives its holder, and the verifier that demands one.
//! - `tests`: configurations through in-memory handshakes; `stream_tests`: sessions over
//!   loopback sockets driven by mio.

mod client;
mod files;
mod name;
mod stream;

pub use client::{ClientStream, ClientTls};
pub use files::{ServerTls, TlsFiles, client_config};
pub use name::{Unnamed, cert_name, peer_name};
pub use stream::TlsStream;

// The throwaway CA the integration tests use too.
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
#[path = "../../tests/support/tls.rs"]
pub(crate) mod tls_support;
