//! A checked record's payload back to its `Record`, field by field, never past its end.

use super::*;

/// Decodes a payload whose checksum passed. A JobAdded is copied once into its own buffer and
/// its fields are slices of it, so a replayed job pins only its own bytes.
pub(crate) fn decode(h: &RecHeader, payload: &[u8]) -> Result<Record, &'static str> {
    let mut c = Cursor { b: payload, at: 0 };
    let rec = match h.ty {
        RecordKind::JobAdded => {
            let id = c.u64()?;
            let priority = c.u8()?;
            let flags = c.u8()?;
            if flags & !(FLAG_DUE | FLAG_REDUCER) != 0 {
                return Err("unknown flags in a job record");
            }
            let due = c.u64()?;
            let mut spans = [(0, 0); 4];
            for s in &mut spans {
                *s = c.field()?;
            }
            let all = Bytes::copy_from_slice(payload);
            let slice = |(a, b): (usize, usize)| all.slice(a..b);
            Record::JobAdded(JobAdded {
                id,
                handle: slice(spans[0]),
                func: slice(spans[1]),
                unique: slice(spans[2]),
                reducer: (flags & FLAG_REDUCER != 0).then(|| slice(spans[3])),
                priority,
                due_ms: (flags & FLAG_DUE != 0).then_some(due),
                data: all.slice(c.at..),
            })
        }
        RecordKind::JobFinished => {
            let id = c.u64()?;
            let reason = FinishReason::from_code(c.u8()?);
            c.end()?;
            Record::JobFinished { id, reason }
        }
        RecordKind::JobRetried => {
            let id = c.u64()?;
            let retries = c.u32()?;
            c.end()?;
            Record::JobRetried { id, retries }
        }
        RecordKind::ScheduleRan => {
            let fire_ms = c.u64()?;
            let outcome = c.u8()?;
            Record::ScheduleRan(ScheduleRan {
                entry: Bytes::copy_from_slice(&payload[c.at..]),
                fire_ms,
                outcome,
                counters: None,
            })
        }
        RecordKind::ScheduleState => {
            let fire_ms = c.u64()?;
            let mut counters = ScheduleCounters {
                seen_ms: c.u64()?,
                runs: c.u64()?,
                failures: c.u64()?,
                skips: c.u64()?,
                ..ScheduleCounters::default()
            };
            if matches!(h.ver, SCHEDULE_STATE_MARKED | SCHEDULE_STATE_DURATIONS) {
                let marks = c.u8()?;
                if marks & !(MARK_PAUSED | MARK_SKIP_NEXT | MARK_LAST_MANUAL) != 0 {
                    return Err("unknown marks in a schedule record");
                }
                counters.paused = marks & MARK_PAUSED != 0;
                counters.skip_next = marks & MARK_SKIP_NEXT != 0;
                counters.last_manual = marks & MARK_LAST_MANUAL != 0;
            }
            if h.ver == SCHEDULE_STATE_DURATIONS {
                counters.too_long = c.u64()?;
                counters.too_short = c.u64()?;
            }
            Record::ScheduleRan(ScheduleRan {
                entry: Bytes::copy_from_slice(&payload[c.at..]),
                fire_ms,
                outcome: 0,
                counters: Some(counters),
            })
        }
        RecordKind::FailedKept => {
            let id = c.u64()?;
            let attempts = c.u32()?;
            let first_ms = c.u64()?;
            let last_ms = c.u64()?;
            let flags = c.u8()?;
            if flags & !FLAG_ENTRY != 0 {
                return Err("unknown flags in a failed-job record");
            }
            let spans = c.lengths_then_fields::<5>()?;
            let all = Bytes::copy_from_slice(payload);
            let slice = |(a, b): (usize, usize)| all.slice(a..b);
            Record::FailedKept(FailedKept {
                id,
                handle: slice(spans[0]),
                func: slice(spans[1]),
                unique: slice(spans[2]),
                entry: (flags & FLAG_ENTRY != 0).then(|| slice(spans[3])),
                error: slice(spans[4]),
                data: all.slice(c.at..),
                attempts,
                first_ms,
                last_ms,
            })
        }
        RecordKind::FunctionRetry => {
            let retries = c.u32()?;
            let base_ms = c.u64()?;
            let max_ms = c.u64()?;
            Record::FunctionRetry(FunctionRetry {
                func: Bytes::copy_from_slice(&payload[c.at..]),
                retries,
                base_ms,
                max_ms,
            })
        }
        RecordKind::JobAttempts => {
            let id = c.u64()?;
            let failures = c.u32()?;
            let first_ms = c.u64()?;
            let flags = c.u8()?;
            if flags & !(ATTEMPTS_ENTRY | ATTEMPTS_MANUAL | ATTEMPTS_BACKFILL) != 0 {
                return Err("unknown flags in a job-attempts record");
            }
            let has_entry = flags & ATTEMPTS_ENTRY != 0;
            let rest = Bytes::copy_from_slice(&payload[c.at..]);
            if !has_entry && !rest.is_empty() {
                return Err("record longer than its fields");
            }
            Record::JobAttempts(JobAttempts {
                id,
                failures,
                first_ms,
                entry: has_entry.then_some(rest),
                manual: flags & ATTEMPTS_MANUAL != 0,
                backfill: flags & ATTEMPTS_BACKFILL != 0,
            })
        }
        RecordKind::FailedGone => Record::FailedGone {
            handle: Bytes::copy_from_slice(payload),
        },
        RecordKind::AfterSet => {
            let (a, b) = c.field()?;
            let entry = Bytes::copy_from_slice(&payload[a..b]);
            let mut parents = Vec::new();
            while c.at < payload.len() {
                let scheduled_ms = c.u64()?;
                let ended_ms = c.u64()?;
                let ok = match c.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err("unknown flags in an after-set record"),
                };
                let (a, b) = c.field()?;
                let id = Bytes::copy_from_slice(&payload[a..b]);
                let (a, b) = c.field()?;
                parents.push(AfterParent {
                    id,
                    handle: Bytes::copy_from_slice(&payload[a..b]),
                    scheduled_ms,
                    ended_ms,
                    ok,
                });
            }
            Record::AfterSet(AfterSet { entry, parents })
        }
        RecordKind::SchedulePending => {
            let queued = c.u64()?;
            let n = c.u32()? as usize;
            // Each span is checked against the payload as it is read: a count past the end is
            // an error, never an allocation.
            let mut spans = Vec::new();
            for _ in 0..n {
                let after_ms = c.u64()?;
                let to_ms = c.u64()?;
                let left = c.u64()?;
                let backfill = c.u8()? != 0;
                spans.push(PendingSpan {
                    after_ms,
                    to_ms,
                    left,
                    backfill,
                });
            }
            Record::SchedulePending(SchedulePending {
                entry: Bytes::copy_from_slice(&payload[c.at..]),
                queued_ms: (queued != 0).then_some(queued),
                spans,
            })
        }
        RecordKind::FunctionLease => Record::FunctionLease(FunctionLease {
            ms: c.u64()?,
            func: Bytes::copy_from_slice(&payload[FUNCTION_LEASE_FIXED..]),
        }),
        RecordKind::OutputKept => {
            let started_ms = c.u64()?;
            let ended_ms = c.u64()?;
            let output_bytes = c.u64()?;
            let scheduled = c.u64()?;
            let attempts = c.u32()?;
            let result_len = c.u32()?;
            let ending = c.u8()?;
            let flags = c.u8()?;
            let known = OUTPUT_ENTRY
                | OUTPUT_ERROR
                | OUTPUT_SCHEDULED
                | OUTPUT_RESULT
                | OUTPUT_MANUAL
                | OUTPUT_BACKFILL;
            if flags & !known != 0 {
                return Err("unknown flags in an output record");
            }
            let spans = c.lengths_then_fields::<5>()?;
            // One copy of the record, its fields slices of it: a kept output pins only its
            // own bytes, not the file buffer it was read from.
            let all = Bytes::copy_from_slice(payload);
            let slice = |(a, b): (usize, usize)| all.slice(a..b);
            Record::OutputKept(OutputKept {
                handle: slice(spans[0]),
                func: slice(spans[1]),
                worker: slice(spans[2]),
                entry: (flags & OUTPUT_ENTRY != 0).then(|| slice(spans[3])),
                error: (flags & OUTPUT_ERROR != 0).then(|| slice(spans[4])),
                output: all.slice(c.at..),
                ending,
                started_ms,
                ended_ms,
                attempts,
                scheduled_ms: (flags & OUTPUT_SCHEDULED != 0).then_some(scheduled),
                manual: flags & OUTPUT_MANUAL != 0,
                backfill: flags & OUTPUT_BACKFILL != 0,
                output_bytes,
                result_len: (flags & OUTPUT_RESULT != 0).then_some(result_len),
            })
        }
        RecordKind::HookQueued => {
            let id = c.u64()?;
            let queued_ms = c.u64()?;
            let (a, b) = c.field()?;
            Record::HookQueued(HookQueued {
                id,
                queued_ms,
                url: Bytes::copy_from_slice(&payload[a..b]),
                body: Bytes::copy_from_slice(&payload[c.at..]),
            })
        }
        RecordKind::HookDone => {
            let id = c.u64()?;
            c.end()?;
            Record::HookDone { id }
        }
        RecordKind::OutputGone => Record::OutputGone {
            handle: Bytes::copy_from_slice(payload),
        },
        RecordKind::FunctionLimits => Record::FunctionLimits(FunctionLimits {
            limit: c.u32()?,
            rate_count: c.u32()?,
            rate_window_ms: c.u64()?,
            paused: c.u8()? != 0,
            expire_ms: c.u64()?,
            func: Bytes::copy_from_slice(&payload[FUNCTION_LIMITS_FIXED..]),
        }),
        RecordKind::Audit => {
            let seq = c.u64()?;
            let floor = c.u64()?;
            let at_ms = c.u64()?;
            let mut lens = [0usize; 3];
            for l in &mut lens {
                *l = c.u32()? as usize;
            }
            let mut fields = [Bytes::new(), Bytes::new(), Bytes::new()];
            for (f, &n) in fields.iter_mut().zip(&lens) {
                *f = Bytes::copy_from_slice(c.take(n)?);
            }
            let [identity, peer, command] = fields;
            Record::Audit(Audit {
                seq,
                floor,
                at_ms,
                identity,
                peer,
                command,
                outcome: Bytes::copy_from_slice(&payload[c.at..]),
            })
        }
    };
    Ok(rec)
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], &'static str> {
        let end = self.at.checked_add(n).ok_or("length overflow")?;
        let s = self
            .b
            .get(self.at..end)
            .ok_or("record shorter than its fields")?;
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, &'static str> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, &'static str> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Result<u64, &'static str> {
        let s = self.take(8)?;
        let mut a = [0; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
    /// A u32-length-prefixed field, as a span of the payload.
    fn field(&mut self) -> Result<(usize, usize), &'static str> {
        let n = self.u32()? as usize;
        let start = self.at;
        self.take(n)?;
        Ok((start, start + n))
    }
    /// `N` u32 lengths, then the `N` fields they measure: each field's span in the payload.
    fn lengths_then_fields<const N: usize>(&mut self) -> Result<[(usize, usize); N], &'static str> {
        let mut spans = [(0, 0); N];
        for s in &mut spans {
            s.1 = self.u32()? as usize;
        }
        for s in &mut spans {
            let n = s.1;
            let start = self.at;
            self.take(n)?;
            *s = (start, start + n);
        }
        Ok(spans)
    }
    fn end(&self) -> Result<(), &'static str> {
        if self.at == self.b.len() {
            Ok(())
        } else {
            Err("record longer than its fields")
        }
    }
}
