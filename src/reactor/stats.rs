//! The reactor-wide counters for `/metrics`: connections accepted (by protocol) and refused
//! for `--max-connections`, the bytes of closed connections, HTTP responses by status and the
//! HTTP clients that left while their job waited. Counted where each thing happens (accept,
//! close, an HTTP answer), read once per `/metrics` request.

use std::collections::BTreeMap;

use slab::Slab;

use super::conn::Connection;
use crate::http::metrics::NetStats;

#[derive(Debug, Default)]
pub(super) struct Stats {
    pub(super) accepted_gearman: u64,
    pub(super) accepted_http: u64,
    /// Accepted and closed at once because of `--max-connections`.
    pub(super) refused: u64,
    /// HTTP clients that closed while their foreground job waited.
    pub(super) left_waiting: u64,
    /// Bytes of connections already closed (open ones keep their own count).
    pub(super) closed_in: u64,
    pub(super) closed_out: u64,
    /// HTTP responses by status code.
    pub(super) responses: BTreeMap<u16, u64>,
}

impl Stats {
    /// A connection was accepted.
    pub(super) fn accepted(&mut self, http: bool) {
        match http {
            true => self.accepted_http += 1,
            false => self.accepted_gearman += 1,
        }
    }

    /// A connection is being closed: keep its byte counts.
    pub(super) fn closed(&mut self, c: &Connection) {
        self.closed_in += c.bytes_in;
        self.closed_out += c.bytes_out;
    }

    /// The counts, with the connections open now and their bytes; what other parts count
    /// (denials, refusals, output, TLS) is left at its default for the caller to fill.
    pub(super) fn net(&self, conns: &Slab<Connection>) -> NetStats {
        let mut n = NetStats {
            gearman_accepted: self.accepted_gearman,
            http_accepted: self.accepted_http,
            refused: self.refused,
            bytes_received: self.closed_in,
            bytes_sent: self.closed_out,
            http_responses: self.responses.iter().map(|(k, v)| (*k, *v)).collect(),
            http_clients_left: self.left_waiting,
            ..NetStats::default()
        };
        for (_, c) in conns {
            if c.is_http() {
                n.http_connections += 1;
            } else {
                n.gearman_connections += 1;
            }
            n.bytes_received += c.bytes_in;
            n.bytes_sent += c.bytes_out;
        }
        n
    }
}
