//! The Gearman binary packets the load generator speaks: the packet types it needs, request
//! framing, and argument splitting.

// Packet types (the Gearman protocol's numbers; kept here so that the load generator does
// not depend on the server's code).
pub(crate) const CAN_DO: u32 = 1;
pub(crate) const PRE_SLEEP: u32 = 4;
pub(crate) const NOOP: u32 = 6;
pub(crate) const SUBMIT_JOB: u32 = 7;
pub(crate) const JOB_CREATED: u32 = 8;
pub(crate) const NO_JOB: u32 = 10;
pub(crate) const JOB_ASSIGN: u32 = 11;
pub(crate) const WORK_COMPLETE: u32 = 13;
pub(crate) const WORK_FAIL: u32 = 14;
pub(crate) const ECHO_REQ: u32 = 16;
pub(crate) const ECHO_RES: u32 = 17;
pub(crate) const SUBMIT_JOB_BG: u32 = 18;
pub(crate) const ERROR: u32 = 19;
pub(crate) const WORK_EXCEPTION: u32 = 25;
pub(crate) const GRAB_JOB_UNIQ: u32 = 30;
pub(crate) const JOB_ASSIGN_UNIQ: u32 = 31;
pub(crate) const SUBMIT_JOB_EPOCH: u32 = 36;

/// Append a request packet whose body is written by `body`.
pub(crate) fn put_with(out: &mut Vec<u8>, ptype: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(b"\0REQ");
    out.extend_from_slice(&ptype.to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    body(out);
    let len = (out.len() - at - 12) as u32;
    out[at + 8..at + 12].copy_from_slice(&len.to_be_bytes());
}

pub(crate) fn put(out: &mut Vec<u8>, ptype: u32, parts: &[&[u8]]) {
    put_with(out, ptype, |o| {
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                o.push(0);
            }
            o.extend_from_slice(p);
        }
    });
}

/// The `n`-th of `of` NUL-separated arguments; the last one runs to the end of the body.
pub(crate) fn arg(body: &[u8], n: usize, of: usize) -> &[u8] {
    let mut rest = body;
    for _ in 0..n {
        match rest.iter().position(|&b| b == 0) {
            Some(p) => rest = &rest[p + 1..],
            None => return &[],
        }
    }
    if n + 1 < of {
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        &rest[..end]
    } else {
        rest
    }
}

pub(crate) fn error_text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).replace('\0', " ")
}
