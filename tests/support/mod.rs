//! The one test-support module of the black-box tests in tests/*.rs.
//!
//! How to use it: a test file says `mod support;` and `use support::*;` (everything below is
//! re-exported at the top). `Server::start(&["--flag", ...])` runs the real `gearwheel serve`
//! on port 0 (killed on drop; it derefs to its `Proc`); `s.connect()` gives a raw Gearman
//! `Conn` (`send_req`, `expect(t::TYPE)`, `admin(line, list)`). A test about time runs the
//! server in-process on a manual clock instead (`InProcess`, in_process.rs) and lets time pass
//! with `advance`, never by sleeping. `worker`, `sync`, `expect_error` ... (protocol.rs) build
//! on `Conn`. Any other program runs as a `Proc` (outputs captured, killed on drop; `wait_log`,
//! `log_line`), or to its end with `run`/`run_out`/`gw`. Never sleep for a
//! condition: wait for it with `wait_until`/`poll` (wait.rs), which also has the one `status`
//! reader (`status_row`, `status_of`, `wait_status`, `wait_workers`). Files go in a `TempDir`
//! (removed on drop: keep it alive as long as the server). HTTP tests use `HttpServer` and
//! `Http` (http.rs); a test that drives a component outside Rust calls `need`/`require`
//! with a name listed in `COMPONENTS` (interop.rs), so that it skips with a reason (or fails
//! under GEARWHEEL_REQUIRE_INTEROP=1), and runs a library's programs under tests/interop
//! through `Scripts` (PERL_SCRIPTS ...) or `LibProgram`; TLS tests make certificates with
//! `TestCa` (tls.rs, shared with src/tls's unit tests) and serve them with `start_tls` or
//! `TlsServer` (tls_serve.rs: mutual TLS under an access list); etcd.rs runs a real etcd
//! (`support::etcd::Etcd`), cluster.rs servers joined to it (`support::cluster::*`) and
//! partition.rs a relay that cuts one of them off (`support::partition::Relay`); man.rs is
//! the markdown-to-roff of tests/docs/man_pages.rs; netns.rs runs a test's body in a network
//! namespace of its own, with far peers from an address of no real network.
#![allow(dead_code)]

pub mod cluster;
pub mod etcd;
pub mod gearman;
pub mod http;
pub mod in_process;
pub mod interop;
pub mod man;
pub mod netns;
pub mod partition;
pub mod process;
pub mod protocol;
pub mod server;
pub mod tempdir;
pub mod tls;
pub mod tls_serve;
pub mod wait;

// Each test file uses a part of these; the rest is not "unused".
#[allow(unused_imports)]
pub use gearman::*;
#[allow(unused_imports)]
pub use http::*;
#[allow(unused_imports)]
pub use in_process::*;
#[allow(unused_imports)]
pub use interop::*;
#[allow(unused_imports)]
pub use process::*;
#[allow(unused_imports)]
pub use protocol::*;
#[allow(unused_imports)]
pub use server::*;
#[allow(unused_imports)]
pub use tempdir::*;
#[allow(unused_imports)]
pub use tls::*;
#[allow(unused_imports)]
pub use tls_serve::*;
#[allow(unused_imports)]
pub use wait::*;
