//! gearwheel: a Gearman job server in one small binary.
//!
//! Crate map (dependencies point one way, from the top down):
//! - `reactor`: the mio loop; owns sockets and buffers, turns frames into requests.
//! - `engine`: owns jobs, queues, functions, workers and waiting clients.
//! - `proto`: the pure wire codec; `timer`: deadlines; `clock`: the one place time is read.
//! - `config`: validated settings; `logger`: the `log` back end.

pub mod clock;
pub mod config;
pub mod engine;
pub mod logger;
pub mod proto;
pub mod reactor;
pub mod schedule;
pub mod timer;
