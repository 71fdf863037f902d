//! End-to-end load generator for any Gearman server (gearwheel, gearmand, ...): N client and
//! M worker connections over real sockets, speaking the binary protocol. They are driven by
//! one mio event loop (`--threads` spreads them over more), so that the generator costs
//! little CPU on a small machine: a thread per connection spends more on wake-ups than the
//! server under test. Given the server's PID it reads the server's CPU time and RSS from
//! /proc.
//!
//! ```text
//! cargo bench --bench load -- --mode bg --clients 4 --workers 4 --jobs 200000 --port 4730 --pid PID
//! ```
//!
//! Modes:
//! - `bg`: clients submit SUBMIT_JOB_BG (pipelined up to `--window`), workers GRAB_JOB_UNIQ /
//!   WORK_COMPLETE with PRE_SLEEP/NOOP; jobs/s end to end and server CPU per job.
//! - `sync`: each client keeps `--window` (default 1) foreground SUBMIT_JOBs in flight;
//!   round-trip latency from the submit to its WORK_COMPLETE.
//! - `fill`: submit `--jobs` background jobs with no worker connected; submits/s per tenth
//!   of the fill (flat or not as the queue grows) and RSS per queued job; then the queue is
//!   drained by `--workers` workers (`--no-drain` skips that) and RSS is read again.
//! - `drain`: only the drain half: workers take `--jobs` jobs already queued.
//! - `idle`: open `--connections` connections (one ECHO each), RSS per connection, and the
//!   server's CPU time and context switches over `--idle-secs`.
//! - `echo`: ECHO_REQ round trips.
//! - `future`: `--jobs` SUBMIT_JOB_EPOCH jobs due in the same second (or spread over
//!   `--spread` seconds), sleeping workers; lateness = when a worker got a job minus its due
//!   time. Workers re-grab after `--regrab-ms` without a NOOP, as libgearman workers do.
//! - `future-idle`: hold `--jobs` (default 1,000,000) future jobs due an hour or more ahead;
//!   RSS per future job and the server's CPU time over `--idle-secs` (default 10) of idleness.
//! - `handshake` (with `--tls-*`): `--jobs` TLS connections (handshake, one ECHO, close) from
//!   `--clients` threads, first full handshakes and then resumed ones; per second and server
//!   CPU per handshake.
//! - `stalls`: no server; one thread spins on the clock for `--idle-secs` (default 2) and
//!   counts the times it was stopped (timer ticks, the hypervisor): the machine's own floor
//!   under every latency measured here.
//!
//! TLS: `--tls-ca CA --tls-cert C --tls-key K` make every connection a TLS client of the
//! server (mutual TLS; `--tls-name` is the name the server's certificate must carry,
//! `localhost` by default; `--tls-version 1.2|1.3` pins one). Each connection's handshake
//! happens before the run starts. `--also-pid P,Q` adds those processes' CPU time to the
//! server's (a TLS terminator such as stunnel in front of it).
//!
//! Without `--port` (plain `cargo bench`) it starts the gearwheel built with it on a free
//! loopback port and runs a short suite. Run without `--bench` and without flags (as
//! `cargo test --benches` does) it prints its usage and exits at once.
//!
//! Every flag can also be given as an environment variable `LOAD_<FLAG>` (`LOAD_MODE=sync`).
//! Each run ends with one `RESULT key=value ...` line for scripts (benches/compare.sh).

mod event_loop;
mod modes;
mod opts;
mod packet;
mod peers;
mod procfs;
mod report;
mod suite;
#[cfg(feature = "tls")]
mod tls;
#[cfg(not(feature = "tls"))]
#[path = "no_tls.rs"]
mod tls;

use modes::run_mode;
use opts::{USAGE, parse_opts};
use suite::self_contained_suite;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    if args
        .iter()
        .any(|a| a == "--test" || a == "--help" || a == "-h")
        || (!bench && args.is_empty() && std::env::var("LOAD_PORT").is_err())
    {
        // `cargo test --benches` and friends: nothing to measure without a server.
        println!("{USAGE}");
        return;
    }
    let o = match parse_opts(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("load: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let result = if o.port.is_none() && o.mode != "stalls" {
        self_contained_suite(&o)
    } else {
        run_mode(&o).map(|r| r.print())
    };
    if let Err(e) = result {
        eprintln!("load: {e}");
        std::process::exit(1);
    }
}
