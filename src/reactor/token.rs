//! The reactor's one token space: what each mio `Token` names (a listener, a connection, the
//! signal pipe, the manual clock's waker, an etcd link, a webhook delivery), and its encoding.
//!
//! A connection's token carries its whole `ConnId`, the generation with the slab index. A
//! connection that closes in the middle of a batch of events frees its slot, and an accept
//! later in the same batch may take it; an event the old connection left in that batch (a
//! hang-up, say) names the old generation, and the loop drops it instead of applying it to
//! the slot's new tenant.

use mio::Token;

use crate::cluster::Link;
use crate::engine::ConnId;

// A connection's token holds two 32-bit halves.
const _: () = assert!(
    usize::BITS >= 64,
    "a connection's token carries its slot and its generation: 64-bit targets only"
);

/// A connection's generation sits in the token's high half; every other token has 0 there
/// (generations start at 1 and skip 0: `next_generation`).
const GENERATION_SHIFT: u32 = 32;
const LOW: usize = (1 << GENERATION_SHIFT) - 1;
/// Gearman listeners are tokens `0..LISTENERS`, HTTP listeners the next `LISTENERS`.
pub(super) const LISTENERS: usize = 1 << 15;
const SIGNALS: usize = 2 * LISTENERS;
const WAKE: usize = SIGNALS + 1;
const ETCD_UNARY: usize = SIGNALS + 2;
const ETCD_WATCH: usize = SIGNALS + 3;
/// The webhook client's connections: `HOOKS..HOOKS + HOOK_SLOTS`.
const HOOKS: usize = SIGNALS + 4;
/// Webhook deliveries at once (hooks.rs), each with its token.
pub(super) const HOOK_SLOTS: usize = 4;

/// A listening socket, by its index among its kind's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Listener {
    /// `--listen`, then `--ssl-listen` (`Server::listeners`).
    Gearman(usize),
    /// `--http-listen`/`--http-port` (the HTTP glue's listeners).
    Http(usize),
}

/// What a readiness event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Source {
    Listener(Listener),
    /// An accepted connection (Gearman or HTTP), slot and generation.
    Conn(ConnId),
    /// The self-pipe of signals.rs.
    Signals,
    /// The waker a manual clock rings (embedded.rs).
    Wake,
    /// One of the two connections to etcd (etcd_link.rs).
    Etcd(Link),
    /// A webhook delivery's connection, by its slot (hooks.rs).
    Hook(usize),
}

impl Source {
    /// The token to register this source under. Listener indexes are below `LISTENERS`
    /// (`check_listener`).
    pub(super) fn token(self) -> Token {
        Token(match self {
            Source::Listener(Listener::Gearman(i)) => i,
            Source::Listener(Listener::Http(i)) => LISTENERS + i,
            Source::Conn(id) => ((id.generation as usize) << GENERATION_SHIFT) | id.index as usize,
            Source::Signals => SIGNALS,
            Source::Wake => WAKE,
            Source::Etcd(Link::Unary) => ETCD_UNARY,
            Source::Etcd(Link::Watch) => ETCD_WATCH,
            Source::Hook(i) => HOOKS + i,
        })
    }

    /// What `token` names (`None`: no token the reactor gives out).
    pub(super) fn of(token: Token) -> Option<Source> {
        let generation = (token.0 >> GENERATION_SHIFT) as u32;
        let low = token.0 & LOW;
        if generation != 0 {
            let index = low as u32;
            return Some(Source::Conn(ConnId { index, generation }));
        }
        Some(match low {
            i if i < LISTENERS => Source::Listener(Listener::Gearman(i)),
            i if i < SIGNALS => Source::Listener(Listener::Http(i - LISTENERS)),
            SIGNALS => Source::Signals,
            WAKE => Source::Wake,
            ETCD_UNARY => Source::Etcd(Link::Unary),
            ETCD_WATCH => Source::Etcd(Link::Watch),
            i if (HOOKS..HOOKS + HOOK_SLOTS).contains(&i) => Source::Hook(i - HOOKS),
            _ => return None,
        })
    }
}

/// The generation after `last`: never 0, which marks the tokens that are not connections'.
pub(super) fn next_generation(last: u32) -> u32 {
    last.checked_add(1).unwrap_or(1)
}

/// Listener `i` of a kind has a token of its own.
pub(super) fn check_listener(i: usize) -> std::io::Result<()> {
    if i < LISTENERS {
        return Ok(());
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("more than {LISTENERS} listen addresses of one kind"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_comes_back_from_its_token() {
        let sources = [
            Source::Listener(Listener::Gearman(0)),
            Source::Listener(Listener::Gearman(LISTENERS - 1)),
            Source::Listener(Listener::Http(0)),
            Source::Listener(Listener::Http(LISTENERS - 1)),
            Source::Signals,
            Source::Wake,
            Source::Etcd(Link::Unary),
            Source::Etcd(Link::Watch),
            Source::Hook(0),
            Source::Hook(HOOK_SLOTS - 1),
            Source::Conn(ConnId {
                index: 0,
                generation: 1,
            }),
            Source::Conn(ConnId {
                index: u32::MAX,
                generation: u32::MAX,
            }),
        ];
        for s in sources {
            assert_eq!(Source::of(s.token()), Some(s), "{s:?}");
        }
        assert_eq!(Source::of(Token(HOOKS + HOOK_SLOTS)), None);
        assert_eq!(Source::of(Token(LOW)), None);
    }

    #[test]
    fn the_same_slot_in_another_generation_is_another_token() {
        let old = ConnId {
            index: 7,
            generation: 41,
        };
        let new = ConnId {
            index: 7,
            generation: next_generation(41),
        };
        assert_ne!(Source::Conn(old).token(), Source::Conn(new).token());
        assert_eq!(
            Source::of(Source::Conn(old).token()),
            Some(Source::Conn(old))
        );
    }

    #[test]
    fn generations_skip_zero_when_they_wrap() {
        assert_eq!(next_generation(0), 1);
        assert_eq!(next_generation(u32::MAX - 1), u32::MAX);
        assert_eq!(next_generation(u32::MAX), 1);
    }
}
