//! The test support's own promise: a server that exits at start fails the test with its
//! whole log, read to its end, so that the reason is in the failure.

use crate::support;

use support::*;

#[test]
#[should_panic(expected = "no-such-schedules-file")]
fn a_server_that_exits_at_start_shows_why() {
    Server::start(&["--schedules", "/nonexistent/no-such-schedules-file"]);
}
