//! A small benchmark harness shared by the micro-benchmarks (codec, engine, timer): repeat a
//! batch, report the median time per operation, and count heap allocations with a wrapping
//! global allocator. No external crate, so `cargo bench` builds offline in seconds.
//!
//! `cargo bench` passes `--bench`; then every benchmark runs at full size. Without it (plain
//! `cargo test --benches`, or running the binary by hand) sizes are cut so that the run is a
//! quick smoke test. Any other argument that does not start with `-` filters benchmarks by
//! substring.

#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// The system allocator, counting calls and live bytes.
pub struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALLOC_BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        ALLOC_BYTES.fetch_add(layout.size() as u64, Relaxed);
        LIVE.fetch_add(layout.size() as i64, Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        ALLOC_BYTES.fetch_add(layout.size() as u64, Relaxed);
        LIVE.fetch_add(layout.size() as i64, Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        ALLOC_BYTES.fetch_add(new_size as u64, Relaxed);
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocation counters at one moment.
#[derive(Clone, Copy, Debug)]
pub struct AllocSnap {
    pub allocs: u64,
    pub bytes: u64,
    pub live: i64,
}

pub fn alloc_snap() -> AllocSnap {
    AllocSnap {
        allocs: ALLOCS.load(Relaxed),
        bytes: ALLOC_BYTES.load(Relaxed),
        live: LIVE.load(Relaxed),
    }
}

/// One timed run of `run`: its wall time, and the allocations and bytes allocated meanwhile.
/// Its result is dropped after the clock and the counters are read.
fn timed<R>(run: impl FnOnce() -> R) -> (Duration, u64, u64) {
    let a0 = alloc_snap();
    let t0 = Instant::now();
    let r = run();
    let dt = t0.elapsed();
    let a1 = alloc_snap();
    std::hint::black_box(r);
    (dt, a1.allocs - a0.allocs, a1.bytes - a0.bytes)
}

/// Resident set size of this process in bytes, from /proc/self/status.
pub fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A tiny deterministic generator (xorshift64*), so runs are repeatable.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// One measured benchmark.
pub struct Row {
    pub name: String,
    pub ns_median: f64,
    pub ns_min: f64,
    pub allocs_per_op: f64,
    pub bytes_per_op: f64,
}

pub struct Harness {
    pub full: bool,
    filter: Vec<String>,
    samples: usize,
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Harness {
    pub fn from_args(title: &str) -> Harness {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let full = args.iter().any(|a| a == "--bench");
        let filter: Vec<String> = args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .cloned()
            .collect();
        let samples = std::env::var("BENCH_SAMPLES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(if full { 11 } else { 2 });
        println!(
            "{title} ({} mode, {samples} samples per benchmark, median reported)",
            if full { "full" } else { "quick smoke" }
        );
        Harness {
            full,
            filter,
            samples,
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Pick the full or the quick size.
    pub fn size(&self, full: usize, quick: usize) -> usize {
        if self.full { full } else { quick }
    }

    pub fn enabled(&self, name: &str) -> bool {
        self.filter.is_empty() || self.filter.iter().any(|f| name.contains(f.as_str()))
    }

    /// Time `run` over state made fresh by `setup` (untimed) for every sample; `run` performs
    /// `ops` operations. Reports the median time per operation and allocations per operation.
    pub fn bench_with<S, R>(
        &mut self,
        name: &str,
        ops: usize,
        mut setup: impl FnMut() -> S,
        mut run: impl FnMut(&mut S) -> R,
    ) {
        self.sample(name, ops, || {
            let mut state = setup();
            let measured = timed(|| run(&mut state));
            drop(state);
            measured
        });
    }

    /// Time `run` repeatedly on one long-lived state (each sample continues where the last
    /// stopped); for benchmarks whose setup is too costly to repeat.
    pub fn bench_on<S, R>(
        &mut self,
        name: &str,
        ops: usize,
        state: &mut S,
        mut run: impl FnMut(&mut S) -> R,
    ) {
        self.sample(name, ops, || timed(|| run(state)));
    }

    /// `samples` runs of `one` (each: its time, allocations and bytes), recorded as `name`.
    fn sample(&mut self, name: &str, ops: usize, mut one: impl FnMut() -> (Duration, u64, u64)) {
        if !self.enabled(name) {
            return;
        }
        let mut times = Vec::with_capacity(self.samples);
        let mut allocs = 0u64;
        let mut bytes = 0u64;
        for _ in 0..self.samples {
            let (dt, a, b) = one();
            allocs += a;
            bytes += b;
            times.push(dt);
        }
        self.record(name, ops, times, allocs, bytes);
    }

    /// Like `bench_with`, without per-sample state.
    pub fn bench<R>(&mut self, name: &str, ops: usize, mut run: impl FnMut() -> R) {
        self.bench_with(name, ops, || (), |_| run());
    }

    fn record(
        &mut self,
        name: &str,
        ops: usize,
        mut times: Vec<Duration>,
        allocs: u64,
        bytes: u64,
    ) {
        times.sort();
        let n = times.len().max(1) as f64;
        let ops = ops.max(1) as f64;
        let row = Row {
            name: name.to_string(),
            ns_median: times[times.len() / 2].as_nanos() as f64 / ops,
            ns_min: times[0].as_nanos() as f64 / ops,
            allocs_per_op: allocs as f64 / n / ops,
            bytes_per_op: bytes as f64 / n / ops,
        };
        println!(
            "  {:<52} {:>10} /op  (min {:>10})  {:>12} op/s  {:>6.2} allocs/op  {:>8.1} B alloc/op",
            row.name,
            fmt_ns(row.ns_median),
            fmt_ns(row.ns_min),
            fmt_rate(1e9 / row.ns_median),
            row.allocs_per_op,
            row.bytes_per_op
        );
        self.rows.push(row);
    }

    /// A free-form figure (memory per entry and the like), printed at once and in the summary.
    pub fn note(&mut self, text: String) {
        println!("  {text}");
        self.notes.push(text);
    }

    pub fn finish(self) {
        if !self.full {
            println!("(quick mode: run `cargo bench` for full-size numbers)");
        }
    }
}

pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

pub fn fmt_rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1} k", r / 1e3)
    } else {
        format!("{r:.1}")
    }
}
