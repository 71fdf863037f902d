//! The HTTP side of the server, pure: request heads and bodies in (httparse), typed requests
//! and routes out, responses formatted from data passed in (job replies, the engine's query
//! structs, metrics numbers). No sockets, no clock, no engine calls: the reactor's
//! HTTP glue (src/reactor/http/) feeds it bytes and engine replies and writes what it returns.
//!
//! - `parse`: request heads, bodies (Content-Length and chunked) and their limits.
//! - `session`: one connection's request framing: pipelining, `Expect: 100-continue`.
//! - `guard`: who may ask: the Host check against DNS rebinding, browsers' cross-site requests.
//! - `route`: a request to an endpoint or a job submission (gearmand's `X-Gearman-*` headers);
//!   `endpoint`: the typed routes it returns.
//! - `job`: a submitted job's engine replies to one HTTP response.
//! - `failed_ops`: `GET /failed`, `POST /failed/HANDLE/retry`, `DELETE /failed/HANDLE`.
//! - `schedule_ops`: `POST /schedules/ID/run|skip|pause|resume` and its JSON answer.
//! - `limit_ops`: `GET /limits`, `PUT` and `DELETE /limits/FUNCTION`.
//! - `ping`: `/ping/ID[/start|/fail|/EXIT_CODE]`, a heartbeat entry's run reported.
//! - `response`: status lines, headers and bodies; `json` and `metrics`: the read-only bodies.
//! - `prometheus`: the Prometheus text-format writer `metrics` renders through.
//! - `console`: the console in the browser (embedded page, its JSON, the job-rate ring).

pub mod console;
pub mod endpoint;
pub mod failed_ops;
pub mod guard;
pub mod job;
pub mod json;
pub mod limit_ops;
pub mod metrics;
pub mod parse;
pub mod ping;
mod prometheus;
pub mod response;
pub mod route;
pub mod schedule_ops;
pub mod session;

/// Bounds on what a peer may send before it is refused.
#[derive(Clone, Copy, Debug)]
pub struct HttpLimits {
    /// Longest request line (method, target, version): 414 beyond.
    pub max_line: usize,
    /// Largest request head (request line and headers): 431 beyond.
    pub max_head: usize,
    /// Largest request body, decoded (`--max-packet-size`): 413 beyond.
    pub max_body: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_line: 8 * 1024,
            max_head: 16 * 1024,
            max_body: 64 << 20,
        }
    }
}

/// The most headers one request may have (httparse fills a fixed array): 431 beyond.
pub const MAX_HEADERS: usize = 64;
