//! The load generator built without the `tls` feature: `--tls-*` flags are refused, and no
//! connection ever has a session (the types below have no values).

use std::io;
use std::net::TcpStream;
use std::path::Path;

use crate::opts::Opts;
use crate::report::Report;

#[derive(Clone, Debug)]
pub(crate) enum Tls {}

pub(crate) enum Session {}

impl Tls {
    pub(crate) fn new(
        _ca: &Path,
        _identity: (&Path, &Path),
        _name: &str,
        _version: Option<&str>,
    ) -> Result<Tls, String> {
        Err("this build has no TLS (cargo feature tls)".into())
    }

    pub(crate) fn handshake(&self, _tcp: &mut TcpStream) -> io::Result<Session> {
        match *self {}
    }
}

pub(crate) fn read(c: &mut Session, _s: &mut impl io::Read, _buf: &mut [u8]) -> io::Result<usize> {
    match *c {}
}

pub(crate) fn write(c: &mut Session, _s: &mut impl io::Write, _buf: &[u8]) -> io::Result<usize> {
    match *c {}
}

pub(crate) fn flush(c: &mut Session, _s: &mut impl io::Write) -> io::Result<()> {
    match *c {}
}

pub(crate) fn wants_write(c: &Session) -> bool {
    match *c {}
}

pub(crate) fn mode_handshake(_o: &Opts) -> io::Result<Report> {
    Err(io::Error::other(
        "this build has no TLS (cargo feature tls)",
    ))
}
