//! The idle server's resident set: once start-up is over, and again after a quiet spell, code
//! and constants mapped for work that is done are unmapped from the page tables, and freed heap
//! goes back to the OS, so that an idle server holds just what its loop touches. Also the
//! process's own numbers read from /proc/self for `/metrics` (`read_process`).
//!
//! Start-up (argument parsing, logging, schedules, journal replay, the dynamic loader's own
//! work) touches pages all over the binary and libc, and the kernel's fault-around maps 64 KiB
//! around each touched page of a file. Those mappings stay for the life of the process and
//! VmRSS counts them: 2.6 MB of the glibc build's 2.8 MB idle RSS were such file pages, and
//! only 180 kB the process's own. `madvise(MADV_DONTNEED)` on a clean, private, read-only file
//! mapping drops its page-table entries only: the pages stay in the page cache (shared with
//! every other process using libc), and a later touch maps them again from there, exactly as
//! after the kernel itself reclaims clean file pages under memory pressure. Unmapped, they are
//! also easier for the kernel to reclaim on a small machine. The kernel frees its own start-up
//! code the same way ("Freeing unused kernel image memory").
//!
//! A mapping qualifies only if nothing in it was ever written: private, not writable, backed
//! by a file, and with no anonymous (copied-on-write) pages, which rules out relocated
//! read-only-after-relocation segments, whose contents would otherwise revert to the file's.

/// When to trim: at the first sleep after start-up, then once after each quiet spell of
/// `after_ms` without events. One wake-up after a burst, none while idle. Time is passed in.
#[derive(Debug)]
pub struct IdleTrim {
    after_ms: u64,
    /// Something happened since the last trim.
    dirty: bool,
    last_event: u64,
}

impl IdleTrim {
    /// `after_ms == 0`: never trim.
    pub fn new(after_ms: u64) -> IdleTrim {
        IdleTrim {
            after_ms,
            // Start-up itself is the first burst, and is over at the first sleep.
            dirty: after_ms > 0,
            last_event: 0,
        }
    }

    /// The loop served events at `now`.
    pub fn activity(&mut self, now: u64) {
        self.last_event = now;
        self.dirty = self.after_ms > 0;
    }

    /// When the loop must wake to trim, if it would sleep past it.
    pub fn deadline(&self) -> Option<u64> {
        self.dirty
            .then(|| self.last_event.saturating_add(self.after_ms))
    }

    /// The loop is about to sleep at `now`: trim now? (At most once per quiet spell.)
    pub fn due(&mut self, now: u64, starting: bool) -> bool {
        let due = self.dirty && (starting || now >= self.deadline().unwrap_or(u64::MAX));
        if due {
            self.dirty = false;
        }
        due
    }
}

/// Give back what an idle server does not need: mappings of clean code and constants, and
/// free heap. Returns the bytes of mappings dropped.
pub fn trim() -> std::io::Result<usize> {
    trim_heap();
    drop_clean_file_pages()
}

/// Hand the heap's free pages back to the OS (glibc's malloc keeps them otherwise).
pub fn trim_heap() {
    // SAFETY: malloc_trim only returns free heap pages to the OS; no pointer changes.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::malloc_trim(0);
    }
}

/// One address range that may be dropped.
#[derive(Debug, PartialEq, Eq)]
pub struct Range {
    pub start: usize,
    pub end: usize,
}

/// The ranges of `/proc/self/smaps` text whose pages may be dropped: private, read-only
/// mappings of a file with no anonymous pages. A malformed entry is skipped, never guessed.
pub fn droppable(smaps: &str) -> Vec<Range> {
    let mut out = Vec::new();
    // The mapping whose fields are being read: its range, whether its first line allows it,
    // and whether its "Anonymous: 0 kB" line was seen (a mapping without one is kept).
    let mut current: Option<(Range, bool, bool)> = None;
    let finish = |m: Option<(Range, bool, bool)>, out: &mut Vec<Range>| {
        if let Some((r, true, true)) = m {
            out.push(r);
        }
    };
    for line in smaps.lines() {
        if let Some((range, allowed)) = mapping_header(line) {
            finish(current.take(), &mut out);
            current = Some((range, allowed, false));
            continue;
        }
        let Some((_, _, clean)) = current.as_mut() else {
            continue;
        };
        if let Some(rest) = line.strip_prefix("Anonymous:") {
            let kb = rest.trim().trim_end_matches("kB").trim().parse::<u64>();
            *clean = kb == Ok(0);
        }
    }
    finish(current, &mut out);
    out
}

/// Parse a mapping's first line ("start-end perms offset dev inode path"); its eligibility
/// as far as that line tells. `None` for a field line ("Rss:  12 kB").
fn mapping_header(line: &str) -> Option<(Range, bool)> {
    let mut parts = line.split_ascii_whitespace();
    let (start, end) = parts.next()?.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let perms = parts.next()?.as_bytes();
    let path = parts.nth(3).unwrap_or("");
    let eligible = perms.len() == 4
        && perms[0] == b'r'
        && perms[1] == b'-'
        && perms[3] == b'p'
        && path.starts_with('/')
        && end > start;
    Some((Range { start, end }, eligible))
}

/// Drop this process's mappings of clean file pages (`droppable`). Returns the bytes of address space
/// advised (not all of it was resident). Linux only; elsewhere nothing happens.
#[cfg(target_os = "linux")]
pub fn drop_clean_file_pages() -> std::io::Result<usize> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let mut advised = 0;
    for r in droppable(&smaps) {
        // SAFETY: the range is a whole private, read-only file mapping of this process with
        // no copied-on-write page, so dropping its entries cannot lose a byte: every page
        // comes back unchanged from the file on its next touch. No Rust object lives there.
        let rc = unsafe {
            libc::madvise(
                r.start as *mut libc::c_void,
                r.end - r.start,
                libc::MADV_DONTNEED,
            )
        };
        if rc == 0 {
            advised += r.end - r.start;
        }
    }
    Ok(advised)
}

#[cfg(not(target_os = "linux"))]
pub fn drop_clean_file_pages() -> std::io::Result<usize> {
    Ok(0)
}

/// The process's own numbers (the standard `process_*` metrics).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessStats {
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: u64,
    pub max_fds: Option<u64>,
    pub cpu_seconds: f64,
    pub start_time_seconds: f64,
}

/// Parse /proc/self/stat and the boot time from /proc/stat into process numbers.
/// `ticks` is the clock-tick rate and `page` the page size.
pub fn parse_proc_stat(stat: &str, proc_stat: &str, ticks: u64, page: u64) -> Option<ProcessStats> {
    // The command name is in parentheses and may contain anything, spaces and ')' included:
    // the fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Field N of proc(5) is f[N - 3].
    let num = |n: usize| f.get(n - 3)?.parse::<u64>().ok();
    let ticks = ticks.max(1) as f64;
    let utime = num(14)?;
    let stime = num(15)?;
    let start = num(22)?;
    let vsize = num(23)?;
    let rss = num(24)?;
    let btime = proc_stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    Some(ProcessStats {
        resident_bytes: rss * page,
        virtual_bytes: vsize,
        open_fds: 0,
        max_fds: None,
        cpu_seconds: (utime + stime) as f64 / ticks,
        start_time_seconds: btime as f64 + start as f64 / ticks,
    })
}

/// Read this process's numbers from /proc/self (Linux); None where /proc is not there.
pub fn read_process() -> Option<ProcessStats> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let proc_stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    // SAFETY: sysconf only reads system configuration.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let mut p = parse_proc_stat(
        &stat,
        &proc_stat,
        u64::try_from(ticks).unwrap_or(100),
        u64::try_from(page).unwrap_or(4096),
    )?;
    // The directory listing holds its own descriptor while it is read: not counted.
    p.open_fds = std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count().saturating_sub(1) as u64)
        .unwrap_or(0);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0
        && lim.rlim_cur != libc::RLIM_INFINITY
    {
        p.max_fds = Some(lim.rlim_cur);
    }
    Some(p)
}
#[cfg(test)]
mod tests {
    use super::*;

    /// The server lives on the main thread's stack, and start-up moves it (bind, then serve,
    /// then the loop) in copies that stay resident as stack for the life of the process. It
    /// was 22 kB with the two timer wheels' slots and the etcd link inline (a 96 kB stack
    /// where 44 kB did before the reactor's own deadline wheel); what is big or optional is behind a pointer now.
    #[test]
    fn the_server_is_small_to_move() {
        let size = std::mem::size_of::<crate::reactor::Server>();
        assert!(size <= 6 * 1024, "Server is {size} bytes");
    }

    const SMAPS: &str = "\
55d0c0000000-55d0c0010000 r--p 00000000 08:01 100 /usr/bin/gearwheel
Size:                 64 kB
Rss:                  64 kB
Anonymous:             0 kB
55d0c0010000-55d0c0100000 r-xp 00010000 08:01 100 /usr/bin/gearwheel
Rss:                 900 kB
Anonymous:             0 kB
55d0c0100000-55d0c0104000 r--p 00100000 08:01 100 /usr/bin/gearwheel
Anonymous:             8 kB
55d0c0104000-55d0c0106000 rw-p 00104000 08:01 100 /usr/bin/gearwheel
Anonymous:             8 kB
55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]
Anonymous:           132 kB
7f0000000000-7f0000200000 r-xp 00028000 08:01 200 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7f0000300000-7f0000301000 r--s 00000000 08:01 300 /some/shared/file
Anonymous:             0 kB
7f0000400000-7f0000401000 r-xp 00000000 08:01 400 /lib/with breakpoints
Anonymous:             4 kB
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
Anonymous:             0 kB
7f0000500000-7f0000501000 r--p 00000000 08:01 500 /no/anonymous/line
";

    #[test]
    fn picks_clean_private_read_only_file_mappings() {
        let got = droppable(SMAPS);
        assert_eq!(
            got,
            vec![
                Range {
                    start: 0x55d0c0000000,
                    end: 0x55d0c0010000
                },
                Range {
                    start: 0x55d0c0010000,
                    end: 0x55d0c0100000
                },
                Range {
                    start: 0x7f0000000000,
                    end: 0x7f0000200000
                },
            ]
        );
    }

    #[test]
    fn written_or_unreadable_entries_are_kept() {
        // Above, a relocated segment (anonymous pages), writable data, the heap, a shared
        // mapping, a page with a breakpoint, the vDSO and a mapping that does not say it has
        // no anonymous pages are left alone; so are malformed lines.
        let got = droppable("garbage\nzz-yy r--p 0 0 0 /x\nAnonymous: 0 kB\n");
        assert!(got.is_empty());
        let weird = "7f0000000000-7f0000001000 r-xp 0 08:01 1 /lib/a\nAnonymous: many kB\n";
        assert!(droppable(weird).is_empty());
    }

    #[test]
    fn trims_at_the_first_sleep_then_once_per_quiet_spell() {
        let mut t = IdleTrim::new(10_000);
        // Start-up: the first sleep trims, whatever the clock says.
        assert_eq!(t.deadline(), Some(10_000));
        assert!(t.due(5, true));
        assert!(!t.due(6, true), "once");
        assert_eq!(t.deadline(), None, "idle: no wake-up");
        // A burst, then quiet: one trim 10 s after the last event, not before.
        t.activity(50_000);
        t.activity(60_000);
        assert_eq!(t.deadline(), Some(70_000));
        assert!(!t.due(69_999, false));
        assert!(t.due(70_000, false));
        assert_eq!(t.deadline(), None);
        assert!(!t.due(90_000, false));
    }

    #[test]
    fn zero_never_trims() {
        let mut t = IdleTrim::new(0);
        assert_eq!(t.deadline(), None);
        assert!(!t.due(0, true));
        t.activity(5);
        assert_eq!(t.deadline(), None);
        assert!(!t.due(u64::MAX, false));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn dropping_keeps_the_process_working() {
        // The real thing, on the test process: its code and constants are dropped from the
        // page tables, and come back unchanged when used again.
        let before = droppable(SMAPS);
        let advised = drop_clean_file_pages().unwrap();
        assert!(advised > 0, "the test binary has read-only file mappings");
        assert_eq!(droppable(SMAPS), before);
    }

    #[test]
    fn proc_stat_parsing() {
        let stat = "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 1 0 \
                    5000 10485760 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let p = parse_proc_stat(stat, "cpu 1 2 3\nbtime 1700000000\n", 100, 4096).unwrap();
        assert_eq!(p.resident_bytes, 300 * 4096);
        assert_eq!(p.virtual_bytes, 10_485_760);
        assert_eq!(p.cpu_seconds, 2.0);
        assert_eq!(p.start_time_seconds, 1_700_000_050.0);
        assert!(parse_proc_stat("garbage", "", 100, 4096).is_none());
        let live = read_process().unwrap();
        assert!(live.resident_bytes > 0 && live.open_fds > 0);
    }
}
