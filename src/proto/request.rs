//! Typed requests: a binary frame's body split into the arguments its packet type declares,
//! always inside the declared body length.

use bytes::Bytes;

use super::frame::Frame;
use super::names::is_bad_name;
use super::packet::{Magic, PacketType};

/// Job priority. Ordered so that `High < Normal < Low` sorts the most urgent first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    High = 0,
    Normal = 1,
    Low = 2,
}

impl Priority {
    pub const ALL: [Priority; 3] = [Priority::High, Priority::Normal, Priority::Low];

    pub fn index(self) -> usize {
        self as usize
    }
}

/// Which of the three grab packets a worker sent; it decides the assign packet's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrabKind {
    /// GRAB_JOB -> JOB_ASSIGN
    Plain,
    /// GRAB_JOB_UNIQ -> JOB_ASSIGN_UNIQ
    Uniq,
    /// GRAB_JOB_ALL -> JOB_ASSIGN_ALL when the job has a reducer, else JOB_ASSIGN_UNIQ
    All,
}

/// A job's unique and its data as one refcounted slice, usually of the packet body itself:
/// the unique, whatever the packet has between the two (a NUL, or more arguments), then the
/// data. A job keeps this one `Bytes` instead of two (28 bytes less per job), and hands out
/// `unique()` and `data()` as slices of it (a reference count, never a copy).
#[derive(Clone)]
pub struct JobBody {
    bytes: Bytes,
    unique_len: u32,
    data_at: u32,
}

impl JobBody {
    /// A body whose unique is the first `unique_len` bytes of `bytes` and whose data runs
    /// from `data_at` to the end: no copy. Bounds out of range are clamped, and a body too
    /// large for 32-bit offsets is copied into a fresh one.
    pub fn from_span(bytes: Bytes, unique_len: usize, data_at: usize) -> JobBody {
        let data_at = data_at.min(bytes.len());
        let unique_len = unique_len.min(data_at);
        match (u32::try_from(unique_len), u32::try_from(data_at)) {
            (Ok(unique_len), Ok(data_at)) => JobBody {
                bytes,
                unique_len,
                data_at,
            },
            _ => JobBody::new(&bytes[..unique_len], &bytes[data_at..]),
        }
    }

    /// A body copied from a unique and data that are not one slice already (one allocation).
    pub fn new(unique: &[u8], data: &[u8]) -> JobBody {
        // A unique past 4 GiB cannot come from a packet, the HTTP listener or a journal.
        let unique = &unique[..unique.len().min(u32::MAX as usize)];
        let mut v = Vec::with_capacity(unique.len() + data.len());
        v.extend_from_slice(unique);
        v.extend_from_slice(data);
        JobBody {
            bytes: Bytes::from(v),
            unique_len: unique.len() as u32,
            data_at: unique.len() as u32,
        }
    }

    pub fn unique(&self) -> Bytes {
        self.bytes.slice(..self.unique_len as usize)
    }

    pub fn data(&self) -> Bytes {
        self.bytes.slice(self.data_at as usize..)
    }

    pub fn unique_bytes(&self) -> &[u8] {
        &self.bytes[..self.unique_len as usize]
    }

    pub fn data_bytes(&self) -> &[u8] {
        &self.bytes[self.data_at as usize..]
    }
}

/// Two bodies are equal when their uniques and their data are, wherever those lie.
impl PartialEq for JobBody {
    fn eq(&self, other: &Self) -> bool {
        self.unique_bytes() == other.unique_bytes() && self.data_bytes() == other.data_bytes()
    }
}

impl Eq for JobBody {}

impl std::fmt::Debug for JobBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobBody")
            .field("unique", &self.unique_bytes().escape_ascii().to_string())
            .field("data", &self.data_bytes().escape_ascii().to_string())
            .finish()
    }
}

/// One request from a client or worker, with its arguments as slices of the packet body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    CanDo {
        func: Bytes,
    },
    CantDo {
        func: Bytes,
    },
    ResetAbilities,
    PreSleep,
    /// SUBMIT_JOB, SUBMIT_JOB_BG and their HIGH and LOW variants.
    SubmitJob {
        func: Bytes,
        body: JobBody,
        priority: Priority,
        background: bool,
    },
    /// SUBMIT_REDUCE_JOB and SUBMIT_REDUCE_JOB_BACKGROUND. The aggregator argument is unused by
    /// every server and is not kept.
    SubmitReduceJob {
        func: Bytes,
        body: JobBody,
        reducer: Bytes,
        background: bool,
    },
    /// SUBMIT_JOB_EPOCH; the epoch is checked by the engine, which knows the clock.
    SubmitJobEpoch {
        func: Bytes,
        body: JobBody,
        epoch: Bytes,
    },
    /// SUBMIT_JOB_SCHED: minute, hour, day of month, month, day of week. Boxed: the five
    /// fields would double the size of every `Request`, which is moved on each packet's way
    /// into the engine.
    SubmitJobSched {
        func: Bytes,
        body: JobBody,
        fields: Box<[Bytes; 5]>,
    },
    GrabJob(GrabKind),
    WorkStatus {
        handle: Bytes,
        numerator: Bytes,
        denominator: Bytes,
    },
    WorkComplete {
        handle: Bytes,
        data: Bytes,
    },
    /// WORK_FAIL. `after_handle` is what followed a NUL after the handle (the Rust
    /// gearman-worker crate puts its failure message there): kept for the log, never matched.
    WorkFail {
        handle: Bytes,
        after_handle: Bytes,
    },
    WorkException {
        handle: Bytes,
        data: Bytes,
    },
    WorkData {
        handle: Bytes,
        data: Bytes,
    },
    WorkWarning {
        handle: Bytes,
        data: Bytes,
    },
    /// GET_STATUS; `after_handle` as for WORK_FAIL.
    GetStatus {
        handle: Bytes,
        after_handle: Bytes,
    },
    GetStatusUnique {
        unique: Bytes,
    },
    EchoReq {
        data: Bytes,
    },
    SetClientId {
        id: Bytes,
    },
    /// CAN_DO_TIMEOUT with its timeout in milliseconds.
    CanDoTimeout {
        func: Bytes,
        timeout_ms: u64,
    },
    OptionReq {
        name: Bytes,
    },
    /// ALL_YOURS: the protocol reserves it and no server acts on it; accepted without reply.
    AllYours,
}

/// A request that cannot be served. It becomes one ERROR packet; the stream stays in sync
/// because the frame was already consumed whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestError {
    pub code: &'static str,
    pub text: String,
}

impl RequestError {
    pub fn new(code: &'static str, text: impl Into<String>) -> Self {
        RequestError {
            code,
            text: text.into(),
        }
    }

    /// gearmand's reply to a packet type a client or worker must not send.
    pub fn not_expected() -> Self {
        RequestError::new("INVALID_COMMAND", "Command not expected")
    }
}

/// The unique may be at most this long (gearmand's `GEARMAN_MAX_UNIQUE_SIZE` less its NUL,
/// but kept whole instead of cut to 63 bytes).
pub const MAX_UNIQUE: usize = 64;

/// Split `body` into `n` NUL-terminated arguments followed by the rest.
fn split_terminated<const N: usize>(
    ptype: PacketType,
    body: &Bytes,
) -> Result<([Bytes; N], Bytes), RequestError> {
    let mut args: [Bytes; N] = std::array::from_fn(|_| Bytes::new());
    let mut start = 0;
    for (i, arg) in args.iter_mut().enumerate() {
        match body[start..].iter().position(|&b| b == 0) {
            Some(p) => {
                *arg = body.slice(start..start + p);
                start += p + 1;
            }
            None => {
                return Err(RequestError::new(
                    "INVALID_PACKET",
                    format!(
                        "{} needs {} NUL-separated arguments before its data, found {}",
                        ptype.name(),
                        N,
                        i
                    ),
                ));
            }
        }
    }
    Ok((args, body.slice(start..)))
}

/// A single argument that runs to the end of the body. A trailing NUL is tolerated, as some
/// clients send one.
fn single(body: &Bytes) -> Bytes {
    match body.last() {
        Some(0) => body.slice(..body.len() - 1),
        _ => body.clone(),
    }
}

/// A handle that is a packet's last argument, read as gearmand reads it: up to the first NUL
/// (gearmand copies it with `%.*s`), with the bytes after that NUL returned beside it. Both
/// are slices of the body, so nothing past the declared length is ever looked at, and an
/// argument with no NUL is the whole body, as before.
fn handle_arg(body: &Bytes) -> (Bytes, Bytes) {
    match body.iter().position(|&b| b == 0) {
        Some(p) => (body.slice(..p), body.slice(p + 1..)),
        None => (body.clone(), Bytes::new()),
    }
}

fn check_unique(unique: &Bytes) -> Result<(), RequestError> {
    if unique.len() > MAX_UNIQUE {
        return Err(RequestError::new(
            "ARGUMENT_TOO_LARGE",
            "Unique value too large",
        ));
    }
    Ok(())
}

/// The job body of a submit packet whose first two arguments are the function and the
/// unique: the packet body from the unique to the end, with no copy.
fn job_body(body: &Bytes, func: &Bytes, unique: &Bytes, data: &Bytes) -> JobBody {
    let start = func.len() + 1;
    let data_at = body.len() - data.len();
    JobBody::from_span(body.slice(start..), unique.len(), data_at - start)
}

fn submit(frame: &Frame, priority: Priority, background: bool) -> Result<Request, RequestError> {
    let ([func, unique], data) = split_terminated::<2>(frame.ptype, &frame.body)?;
    check_unique(&unique)?;
    Ok(Request::SubmitJob {
        body: job_body(&frame.body, &func, &unique, &data),
        func,
        priority,
        background,
    })
}

fn parse_u64(arg: &[u8]) -> Option<u64> {
    if arg.is_empty() || arg.len() > 20 || !arg.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(arg).ok()?.parse().ok()
}

/// The ERROR for a function name with a byte that forges a line or an argument.
pub fn bad_name() -> RequestError {
    RequestError::new(
        "INVALID_FUNCTION_NAME",
        "A function name cannot contain CR, LF or NUL",
    )
}

/// Refuse a request whose function name holds CR, LF or NUL (see `names`).
fn check_request(req: &Request) -> Result<(), RequestError> {
    let func = match req {
        Request::CanDo { func }
        | Request::CanDoTimeout { func, .. }
        | Request::SubmitJob { func, .. }
        | Request::SubmitReduceJob { func, .. }
        | Request::SubmitJobEpoch { func, .. }
        | Request::SubmitJobSched { func, .. } => func,
        // A name only ever looked up (CANT_DO) cannot enter a listing; the rest carry none.
        // Listed one by one, so that a new request with a function name is checked here.
        Request::CantDo { .. }
        | Request::ResetAbilities
        | Request::PreSleep
        | Request::GrabJob(_)
        | Request::WorkStatus { .. }
        | Request::WorkComplete { .. }
        | Request::WorkFail { .. }
        | Request::WorkException { .. }
        | Request::WorkData { .. }
        | Request::WorkWarning { .. }
        | Request::GetStatus { .. }
        | Request::GetStatusUnique { .. }
        | Request::EchoReq { .. }
        | Request::SetClientId { .. }
        | Request::OptionReq { .. }
        | Request::AllYours => return Ok(()),
    };
    if is_bad_name(func) {
        return Err(bad_name());
    }
    Ok(())
}

impl Request {
    /// Parse a frame into a request. Only `\0REQ` packets are requests, and a function name
    /// with CR, LF or NUL is refused (see `names`).
    pub fn parse(frame: &Frame) -> Result<Request, RequestError> {
        let req = Request::parse_frame(frame)?;
        check_request(&req)?;
        Ok(req)
    }

    fn parse_frame(frame: &Frame) -> Result<Request, RequestError> {
        use PacketType as T;
        if frame.magic != Magic::Req {
            return Err(RequestError::new("INVALID_MAGIC", "Request magic expected"));
        }
        let body = &frame.body;
        Ok(match frame.ptype {
            T::CanDo => Request::CanDo { func: single(body) },
            T::CantDo => Request::CantDo { func: single(body) },
            T::ResetAbilities => Request::ResetAbilities,
            T::PreSleep => Request::PreSleep,
            T::SubmitJob => submit(frame, Priority::Normal, false)?,
            T::SubmitJobBg => submit(frame, Priority::Normal, true)?,
            T::SubmitJobHigh => submit(frame, Priority::High, false)?,
            T::SubmitJobHighBg => submit(frame, Priority::High, true)?,
            T::SubmitJobLow => submit(frame, Priority::Low, false)?,
            T::SubmitJobLowBg => submit(frame, Priority::Low, true)?,
            T::SubmitReduceJob | T::SubmitReduceJobBackground => {
                let ([func, unique, reducer, _aggregator], data) =
                    split_terminated::<4>(frame.ptype, body)?;
                check_unique(&unique)?;
                let background = frame.ptype == T::SubmitReduceJobBackground;
                Request::SubmitReduceJob {
                    body: job_body(body, &func, &unique, &data),
                    func,
                    reducer,
                    background,
                }
            }
            T::SubmitJobEpoch => {
                let ([func, unique, epoch], data) = split_terminated::<3>(frame.ptype, body)?;
                check_unique(&unique)?;
                Request::SubmitJobEpoch {
                    body: job_body(body, &func, &unique, &data),
                    func,
                    epoch,
                }
            }
            T::SubmitJobSched => {
                let ([func, unique, min, hour, mday, mon, wday], data) =
                    split_terminated::<7>(frame.ptype, body)?;
                check_unique(&unique)?;
                Request::SubmitJobSched {
                    body: job_body(body, &func, &unique, &data),
                    func,
                    fields: Box::new([min, hour, mday, mon, wday]),
                }
            }
            T::GrabJob => Request::GrabJob(GrabKind::Plain),
            T::GrabJobUniq => Request::GrabJob(GrabKind::Uniq),
            T::GrabJobAll => Request::GrabJob(GrabKind::All),
            T::WorkStatus => {
                let ([handle, numerator], denominator) = split_terminated::<2>(frame.ptype, body)?;
                Request::WorkStatus {
                    handle,
                    numerator,
                    denominator,
                }
            }
            T::WorkComplete => {
                let ([handle], data) = split_terminated::<1>(frame.ptype, body)?;
                Request::WorkComplete { handle, data }
            }
            T::WorkException => {
                let ([handle], data) = split_terminated::<1>(frame.ptype, body)?;
                Request::WorkException { handle, data }
            }
            T::WorkData => {
                let ([handle], data) = split_terminated::<1>(frame.ptype, body)?;
                Request::WorkData { handle, data }
            }
            T::WorkWarning => {
                let ([handle], data) = split_terminated::<1>(frame.ptype, body)?;
                Request::WorkWarning { handle, data }
            }
            T::WorkFail => {
                let (handle, after_handle) = handle_arg(body);
                Request::WorkFail {
                    handle,
                    after_handle,
                }
            }
            T::GetStatus => {
                let (handle, after_handle) = handle_arg(body);
                Request::GetStatus {
                    handle,
                    after_handle,
                }
            }
            T::GetStatusUnique => Request::GetStatusUnique {
                unique: single(body),
            },
            T::EchoReq => Request::EchoReq { data: body.clone() },
            T::SetClientId => Request::SetClientId { id: single(body) },
            T::CanDoTimeout => {
                let ([func], timeout) = split_terminated::<1>(frame.ptype, body)?;
                let timeout_ms = parse_u64(&single(&timeout)).ok_or_else(|| {
                    RequestError::new(
                        "INVALID_ARGUMENT",
                        "CAN_DO_TIMEOUT timeout must be a whole number of milliseconds",
                    )
                })?;
                Request::CanDoTimeout { func, timeout_ms }
            }
            T::OptionReq => Request::OptionReq { name: single(body) },
            T::AllYours => Request::AllYours,
            // Server-to-peer packets and the unused number 5.
            T::Unused
            | T::Noop
            | T::JobCreated
            | T::NoJob
            | T::JobAssign
            | T::EchoRes
            | T::Error
            | T::StatusRes
            | T::OptionRes
            | T::JobAssignUniq
            | T::JobAssignAll
            | T::StatusResUnique => return Err(RequestError::not_expected()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_stays_small_enough_to_move_inline() {
        // Every packet's request is moved from parsing through the gate into the engine; past
        // about 128 bytes each move is a memcpy call (SUBMIT_JOB_SCHED's fields are boxed).
        assert!(std::mem::size_of::<Request>() <= 120);
    }

    fn frame(t: PacketType, body: &'static [u8]) -> Frame {
        Frame {
            magic: Magic::Req,
            ptype: t,
            body: Bytes::from_static(body),
        }
    }

    fn b(s: &'static [u8]) -> Bytes {
        Bytes::from_static(s)
    }

    #[test]
    fn submit_variants() {
        let cases = [
            (PacketType::SubmitJob, Priority::Normal, false),
            (PacketType::SubmitJobBg, Priority::Normal, true),
            (PacketType::SubmitJobHigh, Priority::High, false),
            (PacketType::SubmitJobHighBg, Priority::High, true),
            (PacketType::SubmitJobLow, Priority::Low, false),
            (PacketType::SubmitJobLowBg, Priority::Low, true),
        ];
        for (t, priority, background) in cases {
            assert_eq!(
                Request::parse(&frame(t, b"fn\0u1\0da\0ta")),
                Ok(Request::SubmitJob {
                    func: b(b"fn"),
                    body: JobBody::new(b"u1", b"da\0ta"),
                    priority,
                    background
                })
            );
        }
    }

    #[test]
    fn a_job_body_is_a_slice_of_the_packet() {
        let f = frame(PacketType::SubmitJobEpoch, b"fn\0u1\x00123\0data");
        let Ok(Request::SubmitJobEpoch { body, .. }) = Request::parse(&f) else {
            panic!()
        };
        assert_eq!((body.unique(), body.data()), (b(b"u1"), b(b"data")));
        assert_eq!(body.unique().as_ptr(), f.body[3..].as_ptr());
        assert_eq!(body.data().as_ptr(), f.body[10..].as_ptr());
        let empty = frame(PacketType::SubmitJob, b"fn\0\0");
        let Ok(Request::SubmitJob { body, .. }) = Request::parse(&empty) else {
            panic!()
        };
        assert_eq!(
            (body.unique_bytes(), body.data_bytes()),
            (&b""[..], &b""[..])
        );
        // Out-of-range bounds are clamped, never a panic.
        let odd = JobBody::from_span(b(b"abc"), 9, 7);
        assert_eq!(
            (odd.unique_bytes(), odd.data_bytes()),
            (&b"abc"[..], &b""[..])
        );
    }

    #[test]
    fn too_few_separators_is_an_error_not_a_read_into_the_next_packet() {
        let e = Request::parse(&frame(PacketType::SubmitJob, b"fnA\0payload")).unwrap_err();
        assert_eq!(e.code, "INVALID_PACKET");
        assert!(e.text.contains("SUBMIT_JOB needs 2"), "{}", e.text);
        let e = Request::parse(&frame(PacketType::WorkComplete, b"H:x:1")).unwrap_err();
        assert_eq!(e.code, "INVALID_PACKET");
        let e = Request::parse(&frame(PacketType::SubmitJobSched, b"f\0u\0\0\0\0")).unwrap_err();
        assert_eq!(e.code, "INVALID_PACKET");
    }

    #[test]
    fn unique_limit_is_64_kept_whole() {
        let mut body = b"f\0".to_vec();
        body.extend_from_slice(&[b'u'; 64]);
        body.extend_from_slice(b"\0d");
        let f = Frame {
            magic: Magic::Req,
            ptype: PacketType::SubmitJobBg,
            body: body.into(),
        };
        match Request::parse(&f) {
            Ok(Request::SubmitJob { body, .. }) => {
                assert_eq!(body.unique_bytes(), &[b'u'; 64]);
                assert_eq!(body.data(), b(b"d"));
            }
            other => panic!("{other:?}"),
        }
        let mut body = b"f\0".to_vec();
        body.extend_from_slice(&[b'u'; 65]);
        body.extend_from_slice(b"\0d");
        let f = Frame {
            magic: Magic::Req,
            ptype: PacketType::SubmitJob,
            body: body.into(),
        };
        assert_eq!(
            Request::parse(&f),
            Err(RequestError::new(
                "ARGUMENT_TOO_LARGE",
                "Unique value too large"
            ))
        );
    }

    #[test]
    fn worker_packets() {
        assert_eq!(
            Request::parse(&frame(PacketType::CanDo, b"rev")),
            Ok(Request::CanDo { func: b(b"rev") })
        );
        assert_eq!(
            Request::parse(&frame(PacketType::CanDoTimeout, b"rev\x002500")),
            Ok(Request::CanDoTimeout {
                func: b(b"rev"),
                timeout_ms: 2500
            })
        );
        assert_eq!(
            Request::parse(&frame(PacketType::CanDoTimeout, b"rev\0abc"))
                .unwrap_err()
                .code,
            "INVALID_ARGUMENT"
        );
        assert_eq!(
            Request::parse(&frame(
                PacketType::CanDoTimeout,
                b"rev\x00999999999999999999999"
            ))
            .unwrap_err()
            .code,
            "INVALID_ARGUMENT"
        );
        assert_eq!(
            Request::parse(&frame(PacketType::WorkStatus, b"H:x:1\x003\x0010")),
            Ok(Request::WorkStatus {
                handle: b(b"H:x:1"),
                numerator: b(b"3"),
                denominator: b(b"10")
            })
        );
        assert_eq!(
            Request::parse(&frame(PacketType::WorkFail, b"H:x:1\0")),
            Ok(Request::WorkFail {
                handle: b(b"H:x:1"),
                after_handle: b(b"")
            })
        );
        assert_eq!(
            Request::parse(&frame(PacketType::GrabJobAll, b"")),
            Ok(Request::GrabJob(GrabKind::All))
        );
        assert_eq!(
            Request::parse(&frame(PacketType::SubmitReduceJob, b"f\0u\0red\0agg\0data")),
            Ok(Request::SubmitReduceJob {
                func: b(b"f"),
                body: JobBody::new(b"u", b"data"),
                reducer: b(b"red"),
                background: false
            })
        );
        assert_eq!(
            Request::parse(&frame(PacketType::SubmitJobEpoch, b"f\0u\x00123\0d")),
            Ok(Request::SubmitJobEpoch {
                func: b(b"f"),
                body: JobBody::new(b"u", b"d"),
                epoch: b(b"123"),
            })
        );
    }

    /// gearmand reads a last-argument handle up to its first NUL; the Rust gearman-worker
    /// crate sends `WORK_FAIL handle\0message`.
    #[test]
    fn a_handle_ends_at_its_first_nul_and_the_rest_is_kept_apart() {
        for (body, handle, rest) in [
            (&b"H:x:1\0message"[..], &b"H:x:1"[..], &b"message"[..]),
            (b"H:x:1\0", b"H:x:1", b""),
            (b"H:x:1", b"H:x:1", b""),
            (b"H:x:1\0a\0b\0", b"H:x:1", b"a\0b\0"),
            (b"\0H:x:1", b"", b"H:x:1"),
            (b"", b"", b""),
        ] {
            let body = Bytes::copy_from_slice(body);
            let f = Frame {
                magic: Magic::Req,
                ptype: PacketType::WorkFail,
                body: body.clone(),
            };
            assert_eq!(
                Request::parse(&f),
                Ok(Request::WorkFail {
                    handle: Bytes::copy_from_slice(handle),
                    after_handle: Bytes::copy_from_slice(rest),
                }),
                "{body:?}"
            );
            let f = Frame {
                ptype: PacketType::GetStatus,
                ..f
            };
            assert_eq!(
                Request::parse(&f),
                Ok(Request::GetStatus {
                    handle: Bytes::copy_from_slice(handle),
                    after_handle: Bytes::copy_from_slice(rest),
                }),
                "{body:?}"
            );
        }
        // The handle and the rest are slices of the packet body: no copy, nothing read past
        // the declared body length.
        let f = frame(PacketType::WorkFail, b"H:x:1\0msg");
        let Ok(Request::WorkFail {
            handle,
            after_handle,
        }) = Request::parse(&f)
        else {
            panic!()
        };
        assert_eq!(handle.as_ptr(), f.body.as_ptr());
        assert_eq!(after_handle.as_ptr(), f.body[6..].as_ptr());
        // The other single-argument packets keep their rule: one trailing NUL tolerated, a NUL
        // inside is part of the argument.
        assert_eq!(
            Request::parse(&frame(PacketType::SetClientId, b"id\0x\0")),
            Ok(Request::SetClientId { id: b(b"id\0x") })
        );
        // A packet with data still needs its separator.
        assert_eq!(
            Request::parse(&frame(PacketType::WorkException, b"H:x:1"))
                .unwrap_err()
                .code,
            "INVALID_PACKET"
        );
    }

    #[test]
    fn server_packets_from_a_peer_are_not_expected() {
        for t in [
            PacketType::Noop,
            PacketType::JobCreated,
            PacketType::Unused,
            PacketType::EchoRes,
        ] {
            assert_eq!(
                Request::parse(&frame(t, b"")),
                Err(RequestError::not_expected())
            );
        }
        let f = Frame {
            magic: Magic::Res,
            ptype: PacketType::EchoReq,
            body: b(b"x"),
        };
        assert_eq!(
            Request::parse(&f),
            Err(RequestError::new("INVALID_MAGIC", "Request magic expected"))
        );
    }

    #[test]
    fn only_function_names_are_checked() {
        let bad = Bytes::from_static(b"status\r\nshutdown");
        assert!(check_request(&Request::CanDo { func: bad.clone() }).is_err());
        assert!(check_request(&Request::CantDo { func: bad.clone() }).is_ok());
        assert!(check_request(&Request::SetClientId { id: bad }).is_ok());
        let ok = Bytes::from_static(b"caf\xe9 space");
        assert!(check_request(&Request::CanDo { func: ok }).is_ok());
    }
}
