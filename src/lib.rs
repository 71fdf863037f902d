//! gearwheel: a Gearman job server in one small binary.
//!
//! Crate map (dependencies point one way, from the top down):
//! - `reactor`: the mio loop; owns sockets and buffers, turns frames into requests.
//! - `engine`: owns jobs, queues, functions, workers and waiting clients.
//! - `proto`: the pure wire codec; `timer`: deadlines; `clock`: the one place time is read.
//! - `http`: the HTTP listener's pure half (request parsing, routes, responses, JSON,
//!   metrics); the reactor feeds it bytes and engine replies.
//! - `config`: validated settings; `logger`: the `log` back end; `footprint`: the idle
//!   resident set.
//! - `client`: a blocking Gearman client/worker library; `cli`: the `work`, `submit` and
//!   `admin` commands built on it. Neither is used by the server.

pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod engine;
pub mod footprint;
pub mod http;
pub mod logger;
pub mod plural;
pub mod proto;
pub mod reactor;
pub mod schedule;
pub mod store;
pub mod timer;
