//! HTTP: start the server with an HTTP listener on port 0 (its address learnt from the
//! "gearwheel: HTTP listening on ADDR" line), and a small raw HTTP/1.x client that reads
//! responses byte-exactly (so that keep-alive, pipelining and closes are visible).

use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::gearman::{Conn, connect, read_more, read_to_eof, t};
use super::server::{Server, Serves};
use super::wait::poll;

/// A server with an HTTP listener.
pub struct HttpServer<S = Server> {
    pub server: S,
    pub http: SocketAddr,
}

impl HttpServer<super::in_process::InProcess> {
    /// `start`, in-process on a manual clock (in_process.rs).
    pub fn in_process(extra: &[&str]) -> Self {
        let mut args = vec!["--http-port", "0"];
        args.extend_from_slice(extra);
        let server = super::in_process::InProcess::start(&args);
        let http = server.http_addr();
        HttpServer { server, http }
    }
}

impl HttpServer {
    /// Start with `--http-port 0` plus `extra`.
    pub fn start(extra: &[&str]) -> HttpServer {
        let mut args = vec!["--http-port", "0"];
        args.extend_from_slice(extra);
        let server = Server::start(&args);
        let http = http_addr(&server);
        HttpServer { server, http }
    }
}

impl<S: Serves> HttpServer<S> {
    pub fn connect(&self) -> Http {
        Http::connect(self.http)
    }

    /// A Gearman connection.
    pub fn gearman(&self) -> Conn {
        self.server.connect()
    }

    /// One request on a fresh connection.
    pub fn call(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        let mut h = self.connect();
        h.send(&request(method, path, headers, body));
        if method == "HEAD" {
            h.read_head()
        } else {
            h.read()
        }
    }

    pub fn get(&self, path: &str) -> Resp {
        self.call("GET", path, &[], b"")
    }
}

/// The HTTP address the server printed.
pub fn http_addr(server: &Server) -> SocketAddr {
    server.listener("HTTP listening on ")
}

/// An HTTP/1.1 request with Host and Content-Length (when there is a body or the method is
/// POST/PUT).
pub fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut v = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (k, val) in headers {
        v.push_str(&format!("{k}: {val}\r\n"));
    }
    if !body.is_empty() || method == "POST" || method == "PUT" {
        v.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    v.push_str("\r\n");
    let mut v = v.into_bytes();
    v.extend_from_slice(body);
    v
}

/// A response as read off the wire.
#[derive(Clone, Debug)]
pub struct Resp {
    pub version: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The server said it closes the connection.
    pub fn closes(&self) -> bool {
        self.header("Connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// A raw HTTP connection with a read timeout (5 s by default).
pub struct Http {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Http {
    pub fn connect(addr: SocketAddr) -> Http {
        Http {
            stream: connect(addr),
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    pub fn set_timeout(&mut self, d: Duration) {
        self.stream.set_read_timeout(Some(d)).unwrap();
    }

    fn fill(&mut self) -> std::io::Result<usize> {
        read_more(&mut self.stream, &mut self.buf)
    }

    /// Read one response; panics on timeout or EOF.
    pub fn read(&mut self) -> Resp {
        self.try_read()
            .unwrap_or_else(|e| panic!("no response: {e}"))
    }

    /// Read one response (its body by Content-Length; a 1xx has none).
    pub fn try_read(&mut self) -> Result<Resp, String> {
        self.read_inner(true)
    }

    /// Read the response to a HEAD request: Content-Length is announced, no body follows.
    pub fn read_head(&mut self) -> Resp {
        self.read_inner(false)
            .unwrap_or_else(|e| panic!("no response: {e}"))
    }

    fn read_inner(&mut self, with_body: bool) -> Result<Resp, String> {
        loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                let mut lines = head.split("\r\n");
                let status_line = lines.next().unwrap_or("");
                let mut parts = status_line.splitn(3, ' ');
                let version = parts.next().unwrap_or("").to_string();
                let status: u16 = parts
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| format!("bad status line {status_line:?}"))?;
                let headers: Vec<(String, String)> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .collect();
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .map(|(_, v)| v.parse().unwrap())
                    .filter(|_| with_body)
                    .unwrap_or(0);
                while self.buf.len() < end + 4 + len {
                    match self.fill() {
                        Ok(0) => return Err("EOF in body".into()),
                        Ok(_) => {}
                        Err(e) => return Err(e.to_string()),
                    }
                }
                let body = self.buf[end + 4..end + 4 + len].to_vec();
                self.buf.drain(..end + 4 + len);
                return Ok(Resp {
                    version,
                    status,
                    headers,
                    body,
                });
            }
            match self.fill() {
                Ok(0) => return Err(format!("EOF; got {:?}", String::from_utf8_lossy(&self.buf))),
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// The server closed the connection, with nothing more sent.
    pub fn expect_eof(&mut self) {
        read_to_eof(|| self.fill());
        assert!(
            self.buf.is_empty(),
            "unexpected bytes before EOF: {:?}",
            String::from_utf8_lossy(&self.buf)
        );
    }

    /// Whether the server has closed the connection (with nothing sent), looking without
    /// waiting (for a server on a manual clock that has settled).
    pub fn closed_now(&mut self) -> bool {
        self.set_timeout(Duration::from_millis(1));
        let r = self.fill();
        self.set_timeout(Duration::from_secs(5));
        match r {
            Ok(0) => true,
            Ok(_) => panic!("unexpected: {:?}", String::from_utf8_lossy(&self.buf)),
            Err(_) => false,
        }
    }

    /// Nothing arrives within `ms`.
    pub fn expect_silence(&mut self, ms: u64) {
        self.set_timeout(Duration::from_millis(ms));
        let r = self.fill();
        self.set_timeout(Duration::from_secs(5));
        match r {
            Ok(0) => panic!("connection closed"),
            Ok(_) => panic!("unexpected: {:?}", String::from_utf8_lossy(&self.buf)),
            Err(_) => {}
        }
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// Grab a job, waiting (PRE_SLEEP/NOOP) until one comes; returns (handle, data).
pub fn grab(w: &mut Conn) -> (String, Vec<u8>) {
    loop {
        if let Some((h, _, _, data)) = w.grab_uniq() {
            return (h, data);
        }
        w.send_req(t::PRE_SLEEP, &[]);
        assert_eq!(w.read_packet().ptype, t::NOOP);
    }
}

/// Wait until `cond` holds for the server's `/status` JSON body (polled).
pub fn wait_status_json(s: &HttpServer, what: &str, cond: impl Fn(&str) -> bool) -> String {
    poll(5, what, || {
        let body = s.get("/status").text();
        if cond(&body) { Ok(body) } else { Err(body) }
    })
}

/// Check that `text` is valid JSON with python's strict parser (python3 is always there).
pub fn assert_json(text: &str) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import json,sys; json.loads(sys.stdin.buffer.read().decode('utf-8'))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(text.as_bytes())?;
            c.wait_with_output()
        });
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "not valid JSON: {text}\n{}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => eprintln!("SKIP JSON check: python3: {e}"),
    }
}

/// `name{labels}` -> value, from the Prometheus text format (a simple reading; the python
/// parser of `prometheus_python` is the strict check).
pub fn prometheus_samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').expect("sample line");
            (k.to_string(), v.parse().expect("number"))
        })
        .collect()
}

/// Run a python script that reads Prometheus text on stdin with `prometheus_client`'s parser;
/// its stdout. Panics if the parser refuses the text.
pub fn prometheus_python(script: &str, text: &str) -> String {
    use std::process::{Command, Stdio};
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus_client refused the text:\n{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
