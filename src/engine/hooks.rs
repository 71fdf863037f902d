//! Webhook alerts: an alert whose `on_failure=`/`on_success=` is a URL waits here, journalled
//! (HookQueued until its HookDone), until the reactor's webhook client (src/reactor/hooks.rs)
//! has POSTed it. A failed attempt is tried again after a doubling backoff in the timer
//! wheel; past `--webhook-attempts` or `--webhook-max-age` it is given up, logged and counted.
//! The queue is bounded (`--max-webhook-queue`): an alert past it is dropped and counted.
//! Each alert carries an idempotency key, made of this server's handle prefix, the time it
//! was queued and its id, which names it across restarts (the receiver can drop a repeat).

use std::collections::BTreeMap;
use std::rc::Rc;

use bytes::Bytes;

use super::{Engine, TimerEvent, rfc3339};
use crate::schedule::webhook::{HookUrl, redact};
use crate::store::{HookQueued, Record};
use crate::timer::TimerKey;

/// The first retry's wait; each next one doubles, up to `BACKOFF_MAX_MS`.
const BACKOFF_MIN_MS: u64 = 1000;
const BACKOFF_MAX_MS: u64 = 300_000;
/// Redacted URLs whose last outcome is kept for the views (more are not kept: each file's
/// URLs are few, and the ones of removed entries should not pile up).
const LAST_KEPT: usize = 256;

/// The bounds of the webhook queue (flags, docs/operations.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookLimits {
    /// `--max-webhook-queue`: alerts waiting for delivery.
    pub max_queue: usize,
    /// `--webhook-attempts`: tries before an alert is given up.
    pub attempts: u32,
    /// `--webhook-max-age`: an alert not delivered this long after it was queued is given up.
    pub max_age_ms: u64,
}

impl Default for HookLimits {
    fn default() -> Self {
        HookLimits {
            max_queue: 1000,
            attempts: 10,
            max_age_ms: 24 * 3_600_000,
        }
    }
}

/// One alert for the reactor to POST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookSend {
    pub id: u64,
    pub url: Rc<str>,
    pub body: Bytes,
    /// The `Idempotency-Key` header.
    pub key: String,
}

/// How one attempt ended, as the reactor saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookAttempt {
    /// The receiver answered with this status.
    Status(u16),
    /// No answer: why (connect refused, timeout, TLS, ...).
    Failed(String),
}

#[derive(Debug)]
struct Hook {
    queued_ms: u64,
    url: Rc<str>,
    body: Bytes,
    attempts: u32,
    /// Not before then (ms): its backoff.
    next_ms: u64,
    /// Handed to the reactor, not answered yet.
    in_flight: bool,
    timer: Option<TimerKey>,
}

/// What the webhook queue did, for `/metrics` and `show webhooks`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookStatus {
    pub queued: usize,
    pub delivered: u64,
    /// Attempts that failed and were tried again.
    pub retried: u64,
    pub given_up: u64,
    /// Alerts dropped at a full queue.
    pub dropped: u64,
    /// Per redacted URL: when its last attempt ended and how.
    pub last: Vec<(String, u64, String)>,
}

/// One webhook target as the views show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookRow {
    /// Redacted: scheme, host and port, never the path or query (they may hold a token).
    pub url: String,
    /// Alerts waiting for it.
    pub queued: usize,
    /// Its last try: when it ended (ms) and how (`delivered`, `retrying: WHY`,
    /// `given up: WHY`).
    pub last: Option<(u64, String)>,
}

impl WebhookRow {
    fn new(url: String) -> Self {
        WebhookRow {
            url,
            queued: 0,
            last: None,
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Hooks {
    queue: BTreeMap<u64, Hook>,
    next_id: u64,
    status: HookStatus,
    last: BTreeMap<String, (u64, String)>,
}

fn key(prefix: &str, queued_ms: u64, id: u64) -> String {
    format!("{prefix}:hook:{queued_ms}:{id}")
}

impl Hooks {
    fn note(&mut self, url: &str, now: u64, what: String) {
        let r = redact(url);
        if self.last.len() >= LAST_KEPT && !self.last.contains_key(&r) {
            return;
        }
        self.last.insert(r, (now, what));
    }
}

impl Engine {
    /// The idempotency key the next alert queued at `now` gets (it goes in its body too).
    pub(in crate::engine) fn next_hook_key(&self, now: u64) -> String {
        key(&self.config.handle_prefix, now, self.hooks.next_id + 1)
    }

    /// Queue an alert's `body` for `url` (its key made by `next_hook_key` at `now`).
    pub(in crate::engine) fn queue_hook(&mut self, url: &str, body: String, entry: &str, now: u64) {
        let limits = self.config.webhooks;
        if self.hooks.queue.len() >= limits.max_queue {
            self.hooks.status.dropped += 1;
            log::warn!(
                "schedule {entry}: webhook alert to {} dropped: {} alerts already wait \
                 (--max-webhook-queue); counted in gearwheel_webhook_deliveries_total{{outcome=\"dropped\"}}",
                redact(url),
                self.hooks.queue.len()
            );
            return;
        }
        self.hooks.next_id += 1;
        let id = self.hooks.next_id;
        let body = Bytes::from(body);
        let url: Rc<str> = Rc::from(url);
        if self.config.durable {
            self.durable.push(Record::HookQueued(HookQueued {
                id,
                queued_ms: now,
                url: Bytes::copy_from_slice(url.as_bytes()),
                body: body.clone(),
            }));
        }
        log::info!(
            "schedule {entry}: alert queued for the webhook {} ({})",
            redact(&url),
            key(&self.config.handle_prefix, now, id)
        );
        self.hooks.queue.insert(
            id,
            Hook {
                queued_ms: now,
                url,
                body,
                attempts: 0,
                next_ms: now,
                in_flight: false,
                timer: None,
            },
        );
    }

    /// A webhook alert the journal kept, not yet delivered: it is tried again at once.
    pub(in crate::engine) fn restore_hook(&mut self, q: HookQueued, now: u64) {
        self.hooks.next_id = self.hooks.next_id.max(q.id);
        let url = String::from_utf8_lossy(&q.url);
        self.hooks.queue.insert(
            q.id,
            Hook {
                queued_ms: q.queued_ms,
                url: Rc::from(url.as_ref()),
                body: q.body,
                attempts: 0,
                next_ms: now,
                in_flight: false,
                timer: None,
            },
        );
    }

    /// The alerts due at `now` and not in flight, at most `room` of them, oldest first: the
    /// reactor POSTs them (after this turn's journal commit) and answers `hook_attempt`.
    pub fn hooks_due(&mut self, now: u64, room: usize) -> Vec<HookSend> {
        let prefix = &self.config.handle_prefix;
        let mut due = Vec::new();
        for (&id, h) in self.hooks.queue.iter_mut() {
            if due.len() >= room {
                break;
            }
            if h.in_flight || h.next_ms > now {
                continue;
            }
            h.in_flight = true;
            if let Some(k) = h.timer.take() {
                self.timers.cancel(k);
            }
            due.push(HookSend {
                id,
                url: Rc::clone(&h.url),
                body: h.body.clone(),
                key: key(prefix, h.queued_ms, id),
            });
        }
        due
    }

    /// Alerts in flight or due: the reactor's client has work.
    pub fn hooks_waiting(&self, now: u64) -> bool {
        self.hooks
            .queue
            .values()
            .any(|h| !h.in_flight && h.next_ms <= now)
    }

    /// An attempt to deliver alert `id` ended: a 2xx delivers it; anything else is tried again
    /// after its backoff, or given up past its attempts or age.
    pub fn hook_attempt(&mut self, id: u64, result: HookAttempt, now: u64) {
        let Some(h) = self.hooks.queue.get_mut(&id) else {
            return;
        };
        h.in_flight = false;
        h.attempts += 1;
        let url = Rc::clone(&h.url);
        let k = key(&self.config.handle_prefix, h.queued_ms, id);
        let why = match &result {
            HookAttempt::Status(s) if (200..300).contains(s) => None,
            HookAttempt::Status(s) => Some(format!("answered {s}")),
            HookAttempt::Failed(e) => Some(e.clone()),
        };
        let Some(why) = why else {
            self.hooks.queue.remove(&id);
            self.hook_done(id);
            self.hooks.status.delivered += 1;
            log::info!("webhook {}: alert {k} delivered", redact(&url));
            self.hooks.note(&url, now, "delivered".into());
            return;
        };
        let limits = self.config.webhooks;
        let backoff = BACKOFF_MIN_MS
            .saturating_mul(1 << h.attempts.saturating_sub(1).min(20))
            .min(BACKOFF_MAX_MS);
        let next = now.saturating_add(backoff);
        let too_old = next.saturating_sub(h.queued_ms) > limits.max_age_ms;
        if h.attempts >= limits.attempts || too_old {
            let attempts = h.attempts;
            let queued = h.queued_ms;
            self.hooks.queue.remove(&id);
            self.hook_done(id);
            self.hooks.status.given_up += 1;
            log::warn!(
                "webhook {}: alert {k} (queued {}) given up after {}: {why}; counted in \
                 gearwheel_webhook_deliveries_total{{outcome=\"given_up\"}}",
                redact(&url),
                rfc3339(queued),
                crate::plural::count(u64::from(attempts), "attempt", "attempts"),
            );
            self.hooks.note(&url, now, format!("given up: {why}"));
            return;
        }
        h.next_ms = next;
        h.timer = Some(self.timers.insert(next, TimerEvent::HookDue));
        self.hooks.status.retried += 1;
        log::info!(
            "webhook {}: alert {k} not delivered ({why}); tried again at {}",
            redact(&url),
            rfc3339(next)
        );
        self.hooks.note(&url, now, format!("retrying: {why}"));
    }

    fn hook_done(&mut self, id: u64) {
        if self.config.durable {
            self.durable.push(Record::HookDone { id });
        }
    }

    /// The webhook queue's numbers and each URL's last outcome (redacted).
    pub fn hook_status(&self) -> HookStatus {
        HookStatus {
            queued: self.hooks.queue.len(),
            last: self
                .hooks
                .last
                .iter()
                .map(|(u, (t, w))| (u.clone(), *t, w.clone()))
                .collect(),
            ..self.hooks.status.clone()
        }
    }

    /// Whether an `https://` webhook may be delivered: an entry names one, or an alert for
    /// one waits (brought back by the journal). The reactor reads its CA bundle then, at
    /// start-up or a reload, never in the turn of a delivery.
    pub fn https_webhooks(&self) -> bool {
        let https = |u: &str| HookUrl::parse(u).is_ok_and(|u| u.tls);
        let named = self.schedules.entries.iter().any(|st| {
            [&st.entry.on_failure, &st.entry.on_success]
                .into_iter()
                .flatten()
                .any(|u| https(u))
        });
        named || self.hooks.queue.values().any(|h| https(&h.url))
    }

    /// Each webhook (redacted: scheme, host, port) with alerts waiting or a try made since
    /// start, by URL: what `show webhooks` and `GET /webhooks` both show.
    pub fn webhook_rows(&self) -> Vec<WebhookRow> {
        let mut rows: BTreeMap<String, WebhookRow> = BTreeMap::new();
        for h in self.hooks.queue.values() {
            let url = redact(&h.url);
            rows.entry(url.clone())
                .or_insert_with(|| WebhookRow::new(url))
                .queued += 1;
        }
        for (url, last) in &self.hooks.last {
            rows.entry(url.clone())
                .or_insert_with(|| WebhookRow::new(url.clone()))
                .last = Some(last.clone());
        }
        rows.into_values().collect()
    }

    /// `show webhooks`: `URL\tQUEUED\tLAST\tOUTCOME` per `webhook_rows` (LAST the time the
    /// last try ended, `-` before one; OUTCOME `delivered`, `retrying: WHY` or
    /// `given up: WHY`), then `.`.
    pub(in crate::engine) fn webhooks_listing(&self) -> String {
        let mut out = String::new();
        for r in self.webhook_rows() {
            let (at, what) = match &r.last {
                Some((t, w)) => (
                    rfc3339(*t),
                    crate::engine::schedules::run_history::one_line(w),
                ),
                None => ("-".into(), "-".into()),
            };
            out.push_str(&format!("{}\t{}\t{at}\t{what}\n", r.url, r.queued));
        }
        out.push_str(".\n");
        out
    }
}
