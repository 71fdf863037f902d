//! Loading a schedules file into the engine: which entries keep their state across a
//! reload, what a restart brings back from the journal, and the record that journals an
//! entry's history.

use super::*;

impl Engine {
    /// Install the entries of a schedules file. Entries whose id and timing did not change
    /// keep their history and next run; removed ones stop; queued jobs stay. `at_start` fires
    /// `@reboot` entries and makes up missed runs of `catchup=last` entries. Returns how many
    /// entries kept their next run and how many got their history back from the journal (the
    /// caller logs one line for the load).
    pub fn load_schedules(
        &mut self,
        file: ScheduleFile,
        now: u64,
        at_start: bool,
        out: &mut Outbox,
    ) -> LoadReport {
        let old = std::mem::take(&mut self.schedules.entries);
        let mut old_by_id: HashMap<Rc<str>, EntryState> =
            old.into_iter().map(|e| (Rc::clone(&e.id), e)).collect();
        for e in old_by_id.values_mut() {
            if let Some(t) = e.timer.take() {
                self.timers.cancel(t);
            }
            for t in e.history.ping.take_timers() {
                self.timers.cancel(t);
            }
        }
        self.schedules.generation += 1;
        self.schedules.loaded_ms = now;
        self.schedules.rng ^= now | 1;
        self.schedules.by_id.clear();
        let mut report = LoadReport::default();
        for entry in file.entries {
            let id: Rc<str> = Rc::from(entry.id.as_str());
            let (history, next_ms) = match old_by_id.remove(&id) {
                Some(prev) if prev.entry.same_timing(&entry) => {
                    report.kept += 1;
                    (prev.history, prev.next_ms)
                }
                Some(prev) => (prev.history, None),
                None => {
                    // A new entry, or the first load after a restart: its runs whose outputs
                    // the journal kept are its history again.
                    let mut h = History::default();
                    for r in self.kept_runs_of(&id) {
                        h.recent.push(r);
                    }
                    (h, None)
                }
            };
            let slot = self.schedules.entries.len();
            self.schedules.by_id.insert(Rc::clone(&id), slot);
            self.schedules.entries.push(EntryState {
                entry,
                id,
                next_ms,
                timer: None,
                history,
            });
        }
        for removed in old_by_id.keys() {
            log::info!("schedule {removed}: removed");
        }
        self.rejoin_groups();
        for slot in 0..self.schedules.entries.len() {
            let st = &mut self.schedules.entries[slot];
            if let Some(r) = self.schedules.restored.remove(&st.id) {
                report.restored += 1;
                let h = &mut st.history;
                if let Some(last) = r.last_run_ms {
                    h.last_run_ms = Some(h.last_run_ms.map_or(last, |l| l.max(last)));
                }
                h.seen_ms = h.seen_ms.max(r.seen_ms);
                if let Some([runs, failures, skips]) = r.counters {
                    h.runs = h.runs.max(runs);
                    h.failures = h.failures.max(failures);
                    h.skips = h.skips.max(skips);
                }
                h.too_long = h.too_long.max(r.durations[0]);
                h.too_short = h.too_short.max(r.durations[1]);
                h.marks = r.marks;
            }
            self.rearm_watch(slot);
            let st = &mut self.schedules.entries[slot];
            // A paused entry arms nothing, runs nothing at start and counts nothing missed:
            // `resume` arms it from then on.
            if st.history.marks.paused {
                st.next_ms = None;
                continue;
            }
            if matches!(st.entry.timing, Timing::Reboot) {
                if at_start {
                    self.run_entry(slot, now, now, out);
                }
                continue;
            }
            // Runs when its parents have run (after.rs): nothing to arm or make up.
            if matches!(st.entry.timing, Timing::After(_)) {
                st.next_ms = None;
                continue;
            }
            // A heartbeat's runs happen elsewhere: nothing to make up at start.
            let watched = st.entry.expect_ping;
            // In a cluster the runs that fell while this server was down were the leader's to
            // make: a server is never the leader when it starts (a new leader's takeover
            // applies the catch-up rules), and the cluster's account says what ran.
            let alone = !self.schedules.clustered;
            if at_start && alone && !watched && st.entry.catchup != Catchup::None {
                self.catch_up(slot, now, out);
            }
            let none = self.schedules.entries[slot].entry.catchup == Catchup::None;
            if at_start && alone && !watched && none {
                self.count_missed_while_down(slot, now, out, "while the server was down");
            }
            match self.schedules.entries[slot].next_ms {
                Some(next) if !at_start => self.arm_at(slot, next),
                _ => self.arm_after(slot, now),
            }
        }
        self.after_loaded(now, out);
        // Waiting runs a restart kept go on (a catch-up at start was added after them).
        self.pending_loaded(now, out);
        report
    }

    /// Bring back an entry's last run (from the journal); it applies at the next
    /// `load_schedules`.
    pub fn restore_schedule_run(&mut self, id: &str, last_run_ms: u64) {
        let r = self.schedules.restored.entry(Rc::from(id)).or_default();
        r.last_run_ms = Some(r.last_run_ms.map_or(last_run_ms, |l| l.max(last_run_ms)));
    }

    /// Bring back an entry's runs, failures and skips (from the journal), like
    /// `restore_schedule_run`.
    /// `seen_ms` is the latest scheduled time it ran or skipped.
    pub fn restore_schedule_counters(
        &mut self,
        id: &str,
        seen_ms: Option<u64>,
        [runs, failures, skips]: [u64; 3],
    ) {
        let r = self.schedules.restored.entry(Rc::from(id)).or_default();
        r.seen_ms = seen_ms;
        r.counters = Some([runs, failures, skips]);
    }

    /// Bring back an entry's duration alerts' counts (too_long, too_short) from the journal,
    /// like `restore_schedule_run`.
    pub fn restore_schedule_durations(&mut self, id: &str, too_long: u64, too_short: u64) {
        let r = self.schedules.restored.entry(Rc::from(id)).or_default();
        r.durations = [too_long, too_short];
    }

    /// Bring back an entry's marks (paused, skip the next run, last run manual) from the
    /// journal, like `restore_schedule_run`.
    pub fn restore_schedule_marks(&mut self, id: &str, marks: ScheduleMarks) {
        self.schedules
            .restored
            .entry(Rc::from(id))
            .or_default()
            .marks = marks;
    }

    /// Journal the entry's history (last run and counters) after it changed: a run, a skip or
    /// a failure. The newest record per entry is what a restart brings back.
    pub(super) fn journal_history(&mut self, slot: usize) {
        self.account_changed(slot);
        if !self.config.durable {
            return;
        }
        let st = &self.schedules.entries[slot];
        let h = &st.history;
        self.durable.push(Record::ScheduleRan(ScheduleRan {
            entry: crate::engine::durable::entry_bytes(&st.id),
            fire_ms: h.last_run_ms.unwrap_or(0),
            // Kept only by the older record without counters.
            outcome: 0,
            counters: Some(ScheduleCounters {
                seen_ms: h.seen_ms.unwrap_or(0),
                runs: h.runs,
                failures: h.failures,
                skips: h.skips,
                paused: h.marks.paused,
                skip_next: h.marks.skip_next,
                last_manual: h.marks.last_manual,
                too_long: h.too_long,
                too_short: h.too_short,
            }),
        }));
    }
}
