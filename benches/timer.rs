//! Timer wheel micro-benchmarks (src/timer.rs) and the SUBMIT_JOB_SCHED adapter: insert rate
//! and memory per entry for a million entries, poll and cancel rates, the exact
//! `next_deadline`, and the next-fire-time search of a schedule.
//!
//! The value stored is 24 bytes, the size of the engine's timer event (job key and sequence
//! number with a tag), so the memory figure is the engine's.
//!
//! `cargo bench --bench timer [-- FILTER]`

mod common;

use chrono::DateTime;
use common::{Counting, Harness, Rng, alloc_snap, rss_bytes};
use gearwheel::schedule::{SchedSpec, Zone};
use gearwheel::timer::{TimerKey, Timers};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Stands in for the engine's `TimerEvent`.
type Ev = [u64; 3];

const BASE: u64 = 1_795_000_000_000;
const HOUR: u64 = 3_600_000;

/// A wheel whose time is BASE, as the engine's is after its first turn.
fn wheel() -> Timers<Ev> {
    let mut t = Timers::new();
    t.poll(BASE);
    t
}

fn deadlines(n: usize, span: u64, seed: u64) -> Vec<u64> {
    let mut r = Rng::new(seed);
    (0..n).map(|_| BASE + 1 + r.below(span)).collect()
}

fn fill(t: &mut Timers<Ev>, ds: &[u64]) -> Vec<TimerKey> {
    ds.iter()
        .enumerate()
        .map(|(i, &d)| t.insert(d, [i as u64, 0, 0]))
        .collect()
}

fn main() {
    let mut h = Harness::from_args("timer wheel");
    let n = h.size(1_000_000, 20_000);

    // Memory per entry, measured once: heap bytes by the counting allocator, and RSS.
    {
        let ds = deadlines(n, HOUR, 1);
        let live0 = alloc_snap().live;
        let rss0 = rss_bytes();
        let mut t = wheel();
        let keys = fill(&mut t, &ds);
        let live1 = alloc_snap().live;
        let rss1 = rss_bytes();
        let keys_bytes = (keys.capacity() * std::mem::size_of::<TimerKey>()) as i64;
        h.note(format!(
            "memory for {n} entries: {:.1} B/entry heap (slab capacity, 24 B value included), \
             {:.1} B/entry RSS delta; the wheel's fixed part is {} B",
            (live1 - live0 - keys_bytes) as f64 / n as f64,
            (rss1 as f64 - rss0 as f64 - keys_bytes as f64) / n as f64,
            std::mem::size_of::<Timers<Ev>>()
        ));
        std::hint::black_box((&t, &keys));
    }

    for (label, span) in [
        ("random within 1 h", HOUR),
        ("random within 10 years", 10 * 365 * 24 * HOUR),
        ("all in one second", 1_000),
    ] {
        let ds = deadlines(n, span, 2);
        h.bench_with(&format!("insert {n}, {label}"), n, wheel, |t| {
            fill(t, &ds).len()
        });
    }

    // Poll: everything due at once (worst case of one loop turn), and the loop's way of
    // stepping through time (one poll per 10 ms turn over the hour).
    let ds = deadlines(n, HOUR, 3);
    h.bench_with(
        &format!("poll all {n} (now = end), random within 1 h"),
        n,
        || {
            let mut t = wheel();
            fill(&mut t, &ds);
            t
        },
        |t| {
            let mut k = 0;
            while t.poll(BASE + HOUR + 1).is_some() {
                k += 1;
            }
            k
        },
    );
    h.bench_with(
        &format!("poll {n} stepping 10 ms per turn over 1 h (per entry)"),
        n,
        || {
            let mut t = wheel();
            fill(&mut t, &ds);
            t
        },
        |t| {
            let mut k = 0;
            let mut now = BASE;
            while now <= BASE + HOUR + 10 {
                while t.poll(now).is_some() {
                    k += 1;
                }
                std::hint::black_box(t.next_deadline());
                now += 10;
            }
            k
        },
    );
    let same = deadlines(n / 10, 1_000, 4);
    h.bench_with(
        &format!("poll {} due in one second (the `future` load case)", n / 10),
        n / 10,
        || {
            let mut t = wheel();
            fill(&mut t, &same);
            t
        },
        |t| {
            let mut k = 0;
            while t.poll(BASE + 1_001).is_some() {
                k += 1;
            }
            k
        },
    );

    // Cancel in random order; then the exact next deadline after cancelling the earliest.
    h.bench_with(
        &format!("cancel {n} in random order"),
        n,
        || {
            let mut t = wheel();
            let mut keys = fill(&mut t, &ds);
            Rng::new(5).shuffle(&mut keys);
            (t, keys)
        },
        |(t, keys)| {
            let mut k = 0;
            for key in keys.iter() {
                if t.cancel(*key).is_some() {
                    k += 1;
                }
            }
            k
        },
    );
    // CAN_DO_TIMEOUT pattern: arm 30 s ahead at grab, cancel at completion, time moving on.
    let churn = h.size(1_000_000, 20_000);
    h.bench_with(
        &format!("insert+cancel pairs ({churn}), 1,000 armed, 30 s ahead"),
        churn,
        || {
            let mut t = wheel();
            let armed: Vec<TimerKey> = (0..1_000)
                .map(|i| t.insert(BASE + 30_000 + i, [0; 3]))
                .collect();
            (t, armed)
        },
        |(t, armed)| {
            let mut now = BASE;
            for i in 0..churn {
                if i % 100 == 0 {
                    now += 1;
                    while t.poll(now).is_some() {}
                }
                let slot = i % armed.len();
                t.cancel(armed[slot]);
                armed[slot] = t.insert(now + 30_000, [i as u64, 0, 0]);
            }
            t.len()
        },
    );
    // Each of these walks the earliest slot's whole list (the cancelled entry was that slot's
    // earliest; see the RESULTS notes), so keep the count small.
    let q = h.size(2_000, 200);
    h.bench_with(
        &format!("next_deadline after cancelling the earliest ({n} armed over 1 h; {q} cancels)"),
        q,
        || {
            let mut t = wheel();
            let mut pairs: Vec<(u64, TimerKey)> = deadlines(n, HOUR, 6)
                .into_iter()
                .map(|d| (d, t.insert(d, [0; 3])))
                .collect();
            pairs.sort_by_key(|p| p.0);
            let keys: Vec<TimerKey> = pairs.into_iter().take(q).map(|p| p.1).collect();
            (t, keys)
        },
        |(t, keys)| {
            let mut sum = 0u64;
            for k in keys.iter() {
                t.cancel(*k);
                sum = sum.wrapping_add(t.next_deadline().unwrap_or(0));
            }
            sum
        },
    );

    // The held-GRAB pattern (`--grab-wait`): per synchronous job a deadline 2 ms ahead is
    // armed and cancelled, becoming and then ceasing to be the earliest, while a million
    // future jobs wait. Each slot keeps its own earliest deadline, so this never walks the
    // big slots.
    let holds = h.size(200_000, 5_000);
    h.bench_with(
        &format!("hold 2 ms ahead + cancel + next_deadline, {n} future armed ({holds} holds)"),
        holds,
        || {
            let mut t = wheel();
            for d in deadlines(n, HOUR, 7) {
                t.insert(d.max(BASE + 10_000), [0; 3]);
            }
            t.next_deadline();
            t
        },
        |t| {
            let mut sum = 0u64;
            for i in 0..holds as u64 {
                let k = t.insert(BASE + 2 + i / 1_000, [i, 0, 0]);
                sum = sum.wrapping_add(t.next_deadline().unwrap_or(0));
                t.cancel(k);
                sum = sum.wrapping_add(t.next_deadline().unwrap_or(0));
            }
            sum
        },
    );

    // The schedule adapter: parse SUBMIT_JOB_SCHED fields and find the next fire time.
    let after = DateTime::from_timestamp_millis(BASE as i64).unwrap_or_default();
    let specs: [[&[u8]; 5]; 4] = [
        [b"30", b"2", b"", b"", b""],
        [b"", b"", b"", b"", b""],
        [b"0", b"0", b"29", b"2", b""],
        [b"15", b"", b"", b"", b"6"],
    ];
    let m = h.size(20_000, 500);
    for (zone, zname) in [(Zone::Utc, "UTC"), (Zone::Local, "local")] {
        h.bench(
            &format!("SchedSpec parse + next_after, 4 specs, {zname}"),
            m * specs.len(),
            || {
                let mut sum = 0i64;
                for _ in 0..m {
                    for s in &specs {
                        let spec = SchedSpec::parse(s).expect("valid fields");
                        sum += spec.next_after(after, &zone).map_or(0, |t| t.timestamp());
                    }
                }
                sum
            },
        );
    }
    // The schedules file: parse 10,000 entries (what a reload of a large file costs the loop).
    let entries = h.size(10_000, 1_000);
    let mut text = String::new();
    for i in 0..entries {
        text.push_str(&format!(
            "{} {} * * mon-fri fn{i} priority=low -- payload {{time}}\n",
            i % 60,
            i % 24
        ));
    }
    h.bench(
        &format!("schedules file parse, {entries} entries"),
        entries,
        || {
            gearwheel::schedule::file::parse(&text, &Zone::Utc)
                .map(|f| f.entries.len())
                .unwrap_or(0)
        },
    );
    h.finish();
}
