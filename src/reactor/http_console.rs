//! The console's requests on the HTTP listener (`crate::http::console` makes the bodies):
//! the embedded files, the JSON only the console reads, and the job-rate ring the loop feeds
//! once a turn.

use super::Server;
use crate::http::console::{self, Page, api};
use crate::http::metrics;
use crate::http::response::Reply;

impl Server {
    /// Answer a console request (404 under `--no-console`).
    pub(super) fn http_console(&self, page: Page) -> Reply {
        if !self.config.http.as_ref().is_some_and(|h| h.console) {
            return console::off();
        }
        let now = self.turn_now;
        match page {
            Page::Asset(i) => console::asset(i),
            Page::Server => {
                let process = metrics::read_process();
                let journal = self.journal_metrics().map(|j| (j.total_bytes, j.live_jobs));
                let (slots, open) = self.http.rates.slots();
                let body = api::server(&api::Facts {
                    version: env!("CARGO_PKG_VERSION"),
                    now_ms: now,
                    started_ms: process
                        .as_ref()
                        .map(|p| (p.start_time_seconds * 1000.0) as u64),
                    totals: self.engine.totals(),
                    connections: self.conns.len(),
                    rss_bytes: process.as_ref().map(|p| p.resident_bytes),
                    journal,
                    rates: (&slots, open),
                });
                console::guarded(Reply::json(200, body))
            }
            Page::Future => {
                let (total, jobs) = self.engine.future_jobs(api::FUTURE_SHOWN);
                console::guarded(Reply::json(200, api::future(total, &jobs)))
            }
        }
    }

    /// Feed the rate ring the engine's counters at the end of a turn.
    pub(super) fn http_sample_rates(&mut self, now: u64) {
        let counters = self.engine.counters();
        self.http.rates.observe(now, counters);
    }
}
