//! Who is let in at accept, before a byte is read: the room `--max-connections` keeps for
//! loopback peers and served connections, and the log of accepts that fail. A connection from
//! beyond loopback is *unserved* until its first complete request reaches the gate (which, on
//! a TLS listener, comes after the handshake): until then it has proved nothing, so such
//! connections may hold at most `--max-connections-per-address` slots from one address and
//! `--max-unserved-connections` slots together. Silent peers, however many, leave the rest of
//! `--max-connections` to loopback peers and to connections that were served. Accept failing
//! (out of descriptors) is logged at most once a minute, with what failed since.

use std::collections::HashMap;
use std::net::IpAddr;

/// At most one line a minute says that accept fails.
pub const FAILURE_LOG_MS: u64 = 60_000;

/// Why a peer is not let in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// Its address holds `--max-connections-per-address` unserved connections.
    Address(usize),
    /// Unserved connections hold `--max-unserved-connections` slots.
    Unserved(usize),
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Full::Address(n) => write!(
                f,
                "{n} connections from its address not yet served (--max-connections-per-address)"
            ),
            Full::Unserved(n) => write!(
                f,
                "{n} connections from beyond loopback not yet served (--max-unserved-connections)"
            ),
        }
    }
}

/// The unserved connections by address, and the accept failures not yet logged.
#[derive(Debug)]
pub struct Door {
    per_address: usize,
    unserved_cap: usize,
    /// Unserved connections by peer address (loopback peers are never counted).
    unserved: HashMap<IpAddr, u32>,
    total: usize,
    /// When a failing accept was last logged.
    failure_logged: Option<u64>,
    /// Accepts that failed since the last line said so.
    failures: u64,
    /// The last line said accept fails, and no line has said that it works again.
    failing_said: bool,
}

impl Door {
    pub fn new(per_address: usize, unserved_cap: usize) -> Door {
        Door {
            per_address,
            unserved_cap,
            unserved: HashMap::new(),
            total: 0,
            failure_logged: None,
            failures: 0,
            failing_said: false,
        }
    }

    /// May a new connection from `ip` (canonical) come in? If so it is counted as unserved
    /// (loopback peers are never held back nor counted): `Ok(true)`.
    pub fn enter(&mut self, ip: IpAddr) -> Result<bool, Full> {
        if ip.is_loopback() {
            return Ok(false);
        }
        if self.total >= self.unserved_cap {
            return Err(Full::Unserved(self.unserved_cap));
        }
        let n = self.unserved.entry(ip).or_insert(0);
        if *n as usize >= self.per_address {
            return Err(Full::Address(self.per_address));
        }
        *n += 1;
        self.total += 1;
        Ok(true)
    }

    /// An unserved connection from `ip` was served, or closed.
    pub fn leave(&mut self, ip: IpAddr) {
        if let Some(n) = self.unserved.get_mut(&ip) {
            *n -= 1;
            self.total = self.total.saturating_sub(1);
            if *n == 0 {
                self.unserved.remove(&ip);
            }
        }
    }

    /// Unserved connections now.
    #[cfg(test)]
    pub fn unserved(&self) -> usize {
        self.total
    }

    /// Accept failed at `now`: `Some(n)` when a line is due, `n` the failures it tells of
    /// (this one included); else the failure is counted for the next line.
    pub fn accept_failed(&mut self, now: u64) -> Option<u64> {
        self.failures += 1;
        let due = self
            .failure_logged
            .is_none_or(|t| now.saturating_sub(t) >= FAILURE_LOG_MS);
        if !due {
            return None;
        }
        self.failure_logged = Some(now);
        self.failing_said = true;
        Some(std::mem::take(&mut self.failures))
    }

    /// Accept works again: should a line say so? Only after a line said it failed, so that a
    /// server flapping at its descriptor limit logs a pair of lines a minute at most.
    pub fn accept_works(&mut self) -> bool {
        std::mem::take(&mut self.failing_said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn unserved_peers_are_held_per_address_and_together_but_loopback_never() {
        let mut d = Door::new(2, 3);
        assert_eq!(d.enter(ip("10.0.0.1")), Ok(true));
        assert_eq!(d.enter(ip("10.0.0.1")), Ok(true));
        assert_eq!(d.enter(ip("10.0.0.1")), Err(Full::Address(2)));
        assert_eq!(d.enter(ip("10.0.0.2")), Ok(true));
        assert_eq!(d.enter(ip("10.0.0.3")), Err(Full::Unserved(3)));
        // Loopback is neither refused nor counted.
        for _ in 0..10 {
            assert_eq!(d.enter(ip("127.0.0.1")), Ok(false));
            assert_eq!(d.enter(ip("::1")), Ok(false));
        }
        assert_eq!(d.unserved(), 3);
        // One served (or closed): room again, for its address and for another.
        d.leave(ip("10.0.0.1"));
        assert_eq!(d.enter(ip("10.0.0.3")), Ok(true));
        assert_eq!(d.enter(ip("10.0.0.1")), Err(Full::Unserved(3)));
        d.leave(ip("10.0.0.3"));
        d.leave(ip("10.0.0.2"));
        d.leave(ip("10.0.0.1"));
        assert_eq!(d.unserved(), 0);
        assert!(d.unserved.is_empty(), "no address kept once it has none");
        // A stray leave does not underflow.
        d.leave(ip("10.0.0.9"));
        assert_eq!(d.unserved(), 0);
    }

    #[test]
    fn a_failing_accept_is_logged_once_a_minute_with_the_count() {
        let mut d = Door::new(1, 1);
        assert_eq!(d.accept_failed(1_000), Some(1));
        assert!(d.accept_works());
        // Flapping at the limit: counted, not logged, and its recoveries not either.
        for t in 0..100 {
            assert_eq!(d.accept_failed(1_100 + t * 100), None);
            assert!(!d.accept_works());
        }
        assert_eq!(d.accept_failed(60_999), None);
        assert_eq!(d.accept_failed(61_000), Some(102));
        assert_eq!(d.accept_failed(61_001), None);
        assert!(d.accept_works());
        assert!(!d.accept_works());
    }
}
