//! The server under test as /proc shows it (CPU time, RSS, threads, context switches), and
//! this process's own CPU time, fd limit and wall clock.

use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProcSnap {
    /// utime + stime of all threads, in seconds.
    pub(crate) cpu: f64,
    pub(crate) rss_kb: u64,
    /// RssAnon: the process's own memory. Costs per job and per connection are differences
    /// of this, because VmRSS also counts code pages that a first request maps again (a
    /// server that unmaps idle code, as gearwheel does, would be charged for them).
    pub(crate) anon_kb: u64,
    pub(crate) threads: u64,
    /// Voluntary and involuntary context switches of all threads: a wake-up count.
    pub(crate) ctxt: u64,
}

pub(crate) fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

pub(crate) fn proc_snap(pid: Option<u32>) -> Option<ProcSnap> {
    let pid = pid?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14 and stime field 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let mut ctxt = 0;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("status")) {
                for l in s.lines() {
                    if let Some(v) = l
                        .strip_prefix("voluntary_ctxt_switches:")
                        .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
                    {
                        ctxt += v.trim().parse::<u64>().unwrap_or(0);
                    }
                }
            }
        }
    }
    Some(ProcSnap {
        cpu: (utime + stime) as f64 / clock_ticks(),
        rss_kb: field("VmRSS:"),
        anon_kb: field("RssAnon:"),
        threads: field("Threads:"),
        ctxt,
    })
}

/// The server's snapshot (`--pid`), with the CPU time and wake-ups of the `--also-pid`
/// processes (a TLS terminator in front of it) added.
pub(crate) fn server_snap(o: &crate::opts::Opts) -> Option<ProcSnap> {
    let mut s = proc_snap(o.pid)?;
    for &p in &o.also_pids {
        let a = proc_snap(Some(p))?;
        s.cpu += a.cpu;
        s.ctxt += a.ctxt;
    }
    Some(s)
}

/// CPU time of this process (the load generator), in seconds.
pub(crate) fn self_cpu() -> f64 {
    // SAFETY: getrusage writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Raise the soft open-files limit to the hard one (idle mode opens many sockets).
pub(crate) fn raise_nofile() -> u64 {
    // SAFETY: plain getrlimit/setrlimit on a struct we own.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            return r.rlim_cur as u64;
        }
    }
    0
}

pub(crate) fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}
