//! `GET /limits`, `PUT` and `DELETE /limits/FUNCTION` and the console's pause button
//! (`POST /ui/api/function`) over real sockets: what they change is what the admin lines see.

use crate::support;

use support::*;

#[test]
fn limits_are_read_set_and_lifted_over_http() {
    let s = HttpServer::start(&[]);
    assert_eq!(s.get("/limits").text(), "{\"limits\":[]}\n");
    let r = s.call(
        "PUT",
        "/limits/resize",
        &[],
        b"limit=4&rate=100/1m&paused=true&expire=1h",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.text(),
        "{\"function\":\"resize\",\"limit\":4,\"running\":0,\"rate_count\":100,\
         \"rate_window_ms\":60000,\"window\":0,\"paused\":true,\"expire_ms\":3600000,\"held\":0}\n"
    );
    let mut admin = s.gearman();
    assert_eq!(
        admin.admin("show limits", true),
        "resize\t4\t0\t100/60000ms\t0\tpaused\t3600000\t0\n.\n"
    );
    // Only the settings named change.
    let r = s.call("PUT", "/limits/resize", &[], b"paused=false&rate=off");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        admin.admin("show limits", true),
        "resize\t4\t0\t-\t-\t-\t3600000\t0\n.\n"
    );
    assert!(
        s.get("/limits")
            .text()
            .starts_with("{\"limits\":[{\"function\":\"resize\",\"limit\":4,")
    );
    // Bad bodies and methods change nothing.
    for body in [&b""[..], b"limit=0", b"speed=2", b"limit=1&limit=2"] {
        assert_eq!(
            s.call("PUT", "/limits/resize", &[], body).status,
            400,
            "{body:?}"
        );
    }
    assert_eq!(
        s.call("POST", "/limits/resize", &[], b"limit=1").status,
        405
    );
    assert_eq!(s.call("GET", "/limits/resize", &[], b"").status, 405);
    let r = s.call("DELETE", "/limits/resize", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "{\"limits\":null}\n");
    assert_eq!(admin.admin("show limits", true), ".\n");
}

#[test]
fn the_console_pauses_and_resumes_a_function() {
    let s = HttpServer::start(&[]);
    let page = [("X-Gearwheel-Console", "1"), ("Origin", "http://127.0.0.1")];
    // Without the page's proof nothing happens.
    let r = s.call("POST", "/ui/api/function", &[], b"pause email");
    assert_eq!(r.status, 403);
    assert_eq!(s.get("/limits").text(), "{\"limits\":[]}\n");
    let r = s.call("POST", "/ui/api/function", &page, b"pause email");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"paused\":true"), "{}", r.text());
    let status = s.get("/status").text();
    assert!(status.contains("\"name\":\"email\""), "{status}");
    assert!(status.contains("\"paused\":true}"), "{status}");
    let mut c = s.gearman();
    c.submit(t::SUBMIT_JOB_BG, "email", "", b"x");
    let mut w = worker(&s.server, &["email"]);
    assert!(w.grab_uniq().is_none(), "a paused function's job ran");
    let r = s.call("POST", "/ui/api/function", &page, b"resume email");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(w.grab_uniq().is_some());
}
