//! One test binary: real Gearman clients and a real browser against a real server. Each file in
//! tests/interop/ was a test binary of its own; one binary links tests/support once instead of once
//! per file. Run one file's tests with `cargo test --test interop FILE::` (e.g. `cargo test --test
//! interop browser_console::`).

#[path = "../support/mod.rs"]
mod support;

mod alerts;
mod browser_console;
mod cli;
mod epoch;
mod http;
mod limits;
mod node;
mod perl;
mod php;
mod python;
mod python_libs;
mod rust_worker;
mod tls_client;
mod tls_clients;
