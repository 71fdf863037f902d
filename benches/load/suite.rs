//! Plain `cargo bench` (no `--port`): a short suite against the gearwheel built with this
//! bench, started on a free loopback port for each mode.

use std::io::{self, BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::thread;

use crate::modes::run_mode;
use crate::opts::Opts;

pub(crate) struct Spawned(Child);

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start the gearwheel built alongside this bench on a free loopback port.
pub(crate) fn spawn_gearwheel() -> io::Result<(Spawned, u16)> {
    let exe = env!("CARGO_BIN_EXE_gearwheel");
    let mut child = Command::new(exe)
        .args(["serve", "-L", "127.0.0.1", "-p", "0", "-l", "none"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| io::Error::other("no stderr"))?;
    let guard = Spawned(child);
    let mut lines = BufReader::new(stderr).lines();
    while let Some(line) = lines.next().transpose()? {
        if let Some(addr) = line.split("Listening on ").nth(1) {
            let port = addr
                .trim()
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| io::Error::other(format!("cannot read the port from {line:?}")))?;
            // Keep draining stderr so the server never blocks on a full pipe.
            thread::spawn(move || for _ in lines.by_ref() {});
            return Ok((guard, port));
        }
    }
    Err(io::Error::other("gearwheel exited before listening"))
}

pub(crate) fn self_contained_suite(base: &Opts) -> io::Result<()> {
    println!("no --port given: starting the gearwheel built with this bench for a short suite");
    println!("(compare against gearmand with benches/compare.sh)\n");
    let suite: [(&str, u64); 6] = [
        ("bg", 100_000),
        ("sync", 20_000),
        ("echo", 50_000),
        ("fill", 100_000),
        ("idle", 0),
        ("future", 20_000),
    ];
    for (mode, jobs) in suite {
        let (server, port) = spawn_gearwheel()?;
        let mut o = base.clone();
        o.mode = mode.to_string();
        o.port = Some(port);
        o.pid = Some(server.0.id());
        o.label = "gearwheel".into();
        if o.jobs.is_none() && jobs > 0 {
            o.jobs = Some(jobs);
        }
        run_mode(&o)?.print();
        println!();
        drop(server);
    }
    Ok(())
}
