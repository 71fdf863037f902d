//! One submitted job's engine replies, turned into one HTTP response.
//!
//! The result is gathered, not streamed: WORK_DATA chunks are kept and sent, followed by the
//! WORK_COMPLETE data, as one body with a Content-Length once the job ends. A streamed
//! (chunked) body would have to commit to `200 OK` at the first chunk, and a job that then
//! fails could no longer answer 502: that is gearmand's "200 when the worker failed". The
//! gathered body is bounded (`max_body`); WORK_STATUS is kept for the `X-Gearman-Status`
//! header, WORK_WARNING is dropped.

use bytes::{Bytes, BytesMut};

use super::response::Reply;
use crate::proto::packet::PacketType;
use crate::proto::response::{Handle, Response};

/// Waiting for a job's outcome.
#[derive(Debug)]
pub struct JobWait {
    background: bool,
    handle: Option<Handle>,
    data: BytesMut,
    status: Option<(Bytes, Bytes)>,
    /// The last Gearman command seen, for `X-Gearman-Command` of a 504.
    last: &'static str,
    max_body: usize,
}

/// What one engine reply did to the wait.
#[derive(Debug, PartialEq, Eq)]
pub enum Progress {
    /// Not for this job, or nothing to answer yet.
    Pending,
    /// Answer with this. `job_over` is false when the job goes on (the client must be
    /// released from it in the engine).
    Done { reply: Reply, job_over: bool },
}

/// The status an engine ERROR to a submit gets.
fn error_status(code: &str) -> u16 {
    match code {
        "QUEUE_ERROR" => 503,
        "INVALID_ARGUMENT" | "ARGUMENT_TOO_LARGE" | "INVALID_PACKET" => 400,
        _ => 500,
    }
}

impl JobWait {
    pub fn new(background: bool, max_body: usize) -> Self {
        JobWait {
            background,
            handle: None,
            data: BytesMut::new(),
            status: None,
            last: "SUBMIT_JOB",
            max_body,
        }
    }

    /// A foreground wait: the answer is the job's result, which may take any time.
    pub fn foreground(&self) -> bool {
        !self.background
    }

    /// The job's handle, once JOB_CREATED came.
    pub fn handle(&self) -> Option<Bytes> {
        self.handle.as_ref().map(Handle::to_bytes)
    }

    fn reply(&self, status: u16, command: &'static str, body: Bytes) -> Reply {
        let mut r = Reply::new(status, None, body);
        if let Some(h) = &self.handle {
            r = r.header("X-Gearman-Job-Handle", h.to_bytes());
        }
        r = r.header("X-Gearman-Command", command);
        if let Some((n, d)) = &self.status {
            let mut v = BytesMut::with_capacity(n.len() + d.len() + 1);
            v.extend_from_slice(n);
            v.extend_from_slice(b"/");
            v.extend_from_slice(d);
            r = r.header("X-Gearman-Status", v.freeze());
        }
        r
    }

    fn done(&self, status: u16, command: &'static str, body: Bytes, job_over: bool) -> Progress {
        Progress::Done {
            reply: self.reply(status, command, body),
            job_over,
        }
    }

    /// Take one engine reply addressed to this connection.
    pub fn on_response(&mut self, r: &Response) -> Progress {
        let Some(handle) = &self.handle else {
            return match r {
                Response::JobCreated { handle } => {
                    self.handle = Some(handle.clone());
                    self.last = "JOB_CREATED";
                    if self.background {
                        self.done(200, "JOB_CREATED", Bytes::new(), true)
                    } else {
                        Progress::Pending
                    }
                }
                Response::Error { code, text } => Progress::Done {
                    reply: Reply::text(error_status(code), &format!("{code}: {text}"))
                        .header("X-Gearman-Command", "ERROR"),
                    job_over: true,
                },
                _ => Progress::Pending,
            };
        };
        match r {
            Response::WorkWithData {
                ptype,
                handle: h,
                data,
            } if h == handle => match ptype {
                PacketType::WorkData => {
                    self.last = "WORK_DATA";
                    if self.data.len() + data.len() > self.max_body {
                        return self.done(
                            502,
                            "WORK_DATA",
                            Bytes::from_static(b"the job's output is over the server's limit\n"),
                            false,
                        );
                    }
                    self.data.extend_from_slice(data);
                    Progress::Pending
                }
                PacketType::WorkComplete => {
                    if self.data.len() + data.len() > self.max_body {
                        return self.done(
                            502,
                            "WORK_COMPLETE",
                            Bytes::from_static(b"the job's output is over the server's limit\n"),
                            true,
                        );
                    }
                    let body = if self.data.is_empty() {
                        data.clone()
                    } else {
                        let mut b = std::mem::take(&mut self.data);
                        b.extend_from_slice(data);
                        b.freeze()
                    };
                    self.done(200, "WORK_COMPLETE", body, true)
                }
                PacketType::WorkException => self.done(502, "WORK_EXCEPTION", data.clone(), true),
                // WORK_WARNING: there is no good place for it in one response.
                _ => Progress::Pending,
            },
            Response::WorkStatus {
                handle: h,
                numerator,
                denominator,
            } if h == handle => {
                self.last = "WORK_STATUS";
                self.status = Some((numerator.clone(), denominator.clone()));
                Progress::Pending
            }
            Response::WorkFail { handle: h } if h == handle => {
                self.done(502, "WORK_FAIL", Bytes::new(), true)
            }
            _ => Progress::Pending,
        }
    }

    /// No answer within `X-Gearman-Timeout`: 504, and the job goes on.
    pub fn timeout_reply(&self, ms: u64) -> Reply {
        self.reply(
            504,
            self.last,
            Bytes::from(format!(
                "no result from a worker within {ms} ms; the job goes on\n"
            )),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &'static str) -> Bytes {
        Bytes::from_static(s.as_bytes())
    }

    fn hd(s: &'static str) -> Handle {
        Handle::from_static(s.as_bytes())
    }

    fn data(ptype: PacketType, handle: &'static str, d: &'static str) -> Response {
        Response::WorkWithData {
            ptype,
            handle: hd(handle),
            data: h(d),
        }
    }

    fn header<'a>(r: &'a Reply, name: &str) -> Option<&'a [u8]> {
        r.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| &v[..])
    }

    fn done(p: Progress) -> (Reply, bool) {
        match p {
            Progress::Done { reply, job_over } => (reply, job_over),
            Progress::Pending => panic!("still pending"),
        }
    }

    #[test]
    fn foreground_gathers_data_and_status_then_completes() {
        let mut w = JobWait::new(false, 1000);
        assert_eq!(
            w.on_response(&Response::JobCreated { handle: hd("H:1") }),
            Progress::Pending
        );
        assert_eq!(w.handle(), Some(Bytes::from_static(b"H:1")));
        assert_eq!(
            w.on_response(&data(PacketType::WorkData, "H:1", "ab")),
            Progress::Pending
        );
        // Another job's packets (a stale earlier job on this connection) are not ours.
        assert_eq!(
            w.on_response(&data(PacketType::WorkData, "H:0", "zz")),
            Progress::Pending
        );
        w.on_response(&Response::WorkStatus {
            handle: hd("H:1"),
            numerator: h("1"),
            denominator: h("2"),
        });
        w.on_response(&data(PacketType::WorkWarning, "H:1", "careful"));
        w.on_response(&data(PacketType::WorkData, "H:1", "cd"));
        let (r, over) = done(w.on_response(&data(PacketType::WorkComplete, "H:1", "!")));
        assert!(over);
        assert_eq!(r.status, 200);
        assert_eq!(&r.body[..], b"abcd!");
        assert_eq!(header(&r, "X-Gearman-Job-Handle"), Some(&b"H:1"[..]));
        assert_eq!(header(&r, "X-Gearman-Command"), Some(&b"WORK_COMPLETE"[..]));
        assert_eq!(header(&r, "X-Gearman-Status"), Some(&b"1/2"[..]));
    }

    #[test]
    fn fail_exception_and_errors() {
        let mut w = JobWait::new(false, 1000);
        w.on_response(&Response::JobCreated { handle: hd("H:2") });
        let (r, _) = done(w.on_response(&Response::WorkFail { handle: hd("H:2") }));
        assert_eq!((r.status, &r.body[..]), (502, &b""[..]));
        assert_eq!(header(&r, "X-Gearman-Command"), Some(&b"WORK_FAIL"[..]));

        let mut w = JobWait::new(false, 1000);
        w.on_response(&Response::JobCreated { handle: hd("H:3") });
        let (r, _) = done(w.on_response(&data(PacketType::WorkException, "H:3", "bad input")));
        assert_eq!((r.status, &r.body[..]), (502, &b"bad input"[..]));
        assert_eq!(
            header(&r, "X-Gearman-Command"),
            Some(&b"WORK_EXCEPTION"[..])
        );

        let mut w = JobWait::new(false, 1000);
        let (r, over) = done(w.on_response(&Response::error("QUEUE_ERROR", "Job queue is full")));
        assert!(over);
        assert_eq!(r.status, 503);
        assert_eq!(&r.body[..], b"QUEUE_ERROR: Job queue is full\n");
        let mut w = JobWait::new(true, 1000);
        let (r, _) = done(w.on_response(&Response::error("INVALID_ARGUMENT", "Epoch")));
        assert_eq!(r.status, 400);
    }

    #[test]
    fn background_answers_at_job_created() {
        let mut w = JobWait::new(true, 1000);
        assert_eq!(
            w.on_response(&Response::OptionRes {
                name: h("exceptions")
            }),
            Progress::Pending
        );
        let (r, over) = done(w.on_response(&Response::JobCreated { handle: hd("H:4") }));
        assert!(over);
        assert_eq!((r.status, r.body.len()), (200, 0));
        assert_eq!(header(&r, "X-Gearman-Command"), Some(&b"JOB_CREATED"[..]));
        assert_eq!(header(&r, "X-Gearman-Job-Handle"), Some(&b"H:4"[..]));
    }

    #[test]
    fn timeout_and_output_limit() {
        let mut w = JobWait::new(false, 4);
        w.on_response(&Response::JobCreated { handle: hd("H:5") });
        let r = w.timeout_reply(250);
        assert_eq!(r.status, 504);
        assert_eq!(header(&r, "X-Gearman-Command"), Some(&b"JOB_CREATED"[..]));
        assert_eq!(header(&r, "X-Gearman-Job-Handle"), Some(&b"H:5"[..]));
        w.on_response(&data(PacketType::WorkData, "H:5", "abc"));
        let (r, over) = done(w.on_response(&data(PacketType::WorkData, "H:5", "de")));
        assert_eq!(r.status, 502);
        assert!(!over, "the job goes on; the client must be released");
    }
}
