//! A record to its bytes: the header, the payload of each kind, the checksum.

use super::*;

/// Appends `rec` to `buf` and returns the record's whole length, or `Err(payload length)`
/// when it does not fit the 32-bit length field. Allocates only if `buf` must grow.
pub(crate) fn encode(buf: &mut Vec<u8>, rec: &Record) -> Result<u32, u64> {
    let plen = rec.payload_len();
    if plen > u64::from(u32::MAX) - HEADER_LEN as u64 {
        return Err(plen);
    }
    let start = buf.len();
    buf.reserve(HEADER_LEN + plen as usize);
    buf.extend_from_slice(&(plen as u32).to_le_bytes());
    buf.push(rec.kind() as u8);
    buf.push(rec.version());
    let pre = crc32c::crc32c(&buf[start..start + 6]);
    buf.extend_from_slice(&(pre as u16).to_le_bytes());
    buf.extend_from_slice(&[0; 4]);
    match rec {
        Record::JobAdded(j) => {
            let mut flags = 0;
            if j.due_ms.is_some() {
                flags |= FLAG_DUE;
            }
            if j.reducer.is_some() {
                flags |= FLAG_REDUCER;
            }
            buf.extend_from_slice(&j.id.to_le_bytes());
            buf.push(j.priority);
            buf.push(flags);
            buf.extend_from_slice(&j.due_ms.unwrap_or(0).to_le_bytes());
            for f in [&j.handle, &j.func, &j.unique] {
                put_field(buf, f);
            }
            put_field(buf, j.reducer.as_deref().unwrap_or(&[]));
            buf.extend_from_slice(&j.data);
        }
        Record::JobFinished { id, reason } => {
            buf.extend_from_slice(&id.to_le_bytes());
            buf.push(reason.code());
        }
        Record::JobRetried { id, retries } => {
            buf.extend_from_slice(&id.to_le_bytes());
            buf.extend_from_slice(&retries.to_le_bytes());
        }
        Record::ScheduleRan(ScheduleRan {
            entry,
            fire_ms,
            outcome,
            counters,
        }) => {
            buf.extend_from_slice(&fire_ms.to_le_bytes());
            match counters {
                None => buf.push(*outcome),
                Some(c) => {
                    for n in [c.seen_ms, c.runs, c.failures, c.skips] {
                        buf.extend_from_slice(&n.to_le_bytes());
                    }
                    match c.layout().0 {
                        SCHEDULE_STATE_DURATIONS => {
                            buf.push(c.marks());
                            buf.extend_from_slice(&c.too_long.to_le_bytes());
                            buf.extend_from_slice(&c.too_short.to_le_bytes());
                        }
                        SCHEDULE_STATE_MARKED => buf.push(c.marks()),
                        _ => {}
                    }
                }
            }
            buf.extend_from_slice(entry);
        }
        Record::FailedKept(f) => {
            buf.extend_from_slice(&f.id.to_le_bytes());
            buf.extend_from_slice(&f.attempts.to_le_bytes());
            buf.extend_from_slice(&f.first_ms.to_le_bytes());
            buf.extend_from_slice(&f.last_ms.to_le_bytes());
            buf.push(if f.entry.is_some() { FLAG_ENTRY } else { 0 });
            // The lengths first, so the handle sits at a fixed offset (`failed_handle`).
            let entry = f.entry.as_deref().unwrap_or(&[]);
            let fields: [&[u8]; 5] = [&f.handle, &f.func, &f.unique, entry, &f.error];
            for x in fields {
                // Fits: the whole payload was checked against u32 above.
                buf.extend_from_slice(&(x.len() as u32).to_le_bytes());
            }
            for x in fields {
                buf.extend_from_slice(x);
            }
            buf.extend_from_slice(&f.data);
        }
        Record::FailedGone { handle } => buf.extend_from_slice(handle),
        Record::FunctionRetry(FunctionRetry {
            func,
            retries,
            base_ms,
            max_ms,
        }) => {
            buf.extend_from_slice(&retries.to_le_bytes());
            buf.extend_from_slice(&base_ms.to_le_bytes());
            buf.extend_from_slice(&max_ms.to_le_bytes());
            buf.extend_from_slice(func);
        }
        Record::JobAttempts(JobAttempts {
            id,
            failures,
            first_ms,
            entry,
            manual,
            backfill,
        }) => {
            buf.extend_from_slice(&id.to_le_bytes());
            buf.extend_from_slice(&failures.to_le_bytes());
            buf.extend_from_slice(&first_ms.to_le_bytes());
            let flags = [
                (entry.is_some(), ATTEMPTS_ENTRY),
                (*manual, ATTEMPTS_MANUAL),
                (*backfill, ATTEMPTS_BACKFILL),
            ]
            .iter()
            .filter(|(set, _)| *set)
            .fold(0, |f, (_, bit)| f | bit);
            buf.push(flags);
            buf.extend_from_slice(entry.as_deref().unwrap_or(&[]));
        }
        Record::AfterSet(s) => {
            put_field(buf, &s.entry);
            for p in &s.parents {
                buf.extend_from_slice(&p.scheduled_ms.to_le_bytes());
                buf.extend_from_slice(&p.ended_ms.to_le_bytes());
                buf.push(u8::from(p.ok));
                put_field(buf, &p.id);
                put_field(buf, &p.handle);
            }
        }
        Record::SchedulePending(p) => {
            buf.extend_from_slice(&p.queued_ms.unwrap_or(0).to_le_bytes());
            buf.extend_from_slice(&(p.spans.len() as u32).to_le_bytes());
            for s in &p.spans {
                for n in [s.after_ms, s.to_ms, s.left] {
                    buf.extend_from_slice(&n.to_le_bytes());
                }
                buf.push(u8::from(s.backfill));
            }
            buf.extend_from_slice(&p.entry);
        }
        Record::FunctionLease(FunctionLease { func, ms }) => {
            buf.extend_from_slice(&ms.to_le_bytes());
            buf.extend_from_slice(func);
        }
        Record::OutputKept(o) => {
            for n in [
                o.started_ms,
                o.ended_ms,
                o.output_bytes,
                o.scheduled_ms.unwrap_or(0),
            ] {
                buf.extend_from_slice(&n.to_le_bytes());
            }
            buf.extend_from_slice(&o.attempts.to_le_bytes());
            buf.extend_from_slice(&o.result_len.unwrap_or(0).to_le_bytes());
            buf.push(o.ending);
            let flags = [
                (o.entry.is_some(), OUTPUT_ENTRY),
                (o.error.is_some(), OUTPUT_ERROR),
                (o.scheduled_ms.is_some(), OUTPUT_SCHEDULED),
                (o.result_len.is_some(), OUTPUT_RESULT),
                (o.manual, OUTPUT_MANUAL),
                (o.backfill, OUTPUT_BACKFILL),
            ]
            .iter()
            .filter(|(set, _)| *set)
            .fold(0, |f, (_, bit)| f | bit);
            buf.push(flags);
            // The lengths first, so the handle sits at a fixed offset (`output_handle`).
            let fields: [&[u8]; 5] = [
                &o.handle,
                &o.func,
                &o.worker,
                o.entry.as_deref().unwrap_or(&[]),
                o.error.as_deref().unwrap_or(&[]),
            ];
            for x in fields {
                // Fits: the whole payload was checked against u32 above.
                buf.extend_from_slice(&(x.len() as u32).to_le_bytes());
            }
            for x in fields {
                buf.extend_from_slice(x);
            }
            buf.extend_from_slice(&o.output);
        }
        Record::OutputGone { handle } => buf.extend_from_slice(handle),
        Record::HookQueued(h) => {
            buf.extend_from_slice(&h.id.to_le_bytes());
            buf.extend_from_slice(&h.queued_ms.to_le_bytes());
            put_field(buf, &h.url);
            buf.extend_from_slice(&h.body);
        }
        Record::HookDone { id } => buf.extend_from_slice(&id.to_le_bytes()),
        Record::FunctionLimits(l) => {
            buf.extend_from_slice(&l.limit.to_le_bytes());
            buf.extend_from_slice(&l.rate_count.to_le_bytes());
            buf.extend_from_slice(&l.rate_window_ms.to_le_bytes());
            buf.push(u8::from(l.paused));
            buf.extend_from_slice(&l.expire_ms.to_le_bytes());
            buf.extend_from_slice(&l.func);
        }
        Record::Audit(a) => {
            for n in [a.seq, a.floor, a.at_ms] {
                buf.extend_from_slice(&n.to_le_bytes());
            }
            let fields: [&[u8]; 3] = [&a.identity, &a.peer, &a.command];
            for x in fields {
                // Fits: the whole payload was checked against u32 above.
                buf.extend_from_slice(&(x.len() as u32).to_le_bytes());
            }
            for x in fields {
                buf.extend_from_slice(x);
            }
            buf.extend_from_slice(&a.outcome);
        }
    }
    let crc = crc32c::crc32c_append(pre, &buf[start + HEADER_LEN..]);
    buf[start + 8..start + 12].copy_from_slice(&crc.to_le_bytes());
    Ok((HEADER_LEN as u64 + plen) as u32)
}

fn put_field(buf: &mut Vec<u8>, f: &[u8]) {
    // Fits: the whole payload was checked against u32 above.
    buf.extend_from_slice(&(f.len() as u32).to_le_bytes());
    buf.extend_from_slice(f);
}
