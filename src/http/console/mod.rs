//! The console: a page in the browser served from the binary on the HTTP listener (`GET /`
//! and `/ui/...`). Its HTML, CSS and JavaScript are embedded here, written for gearwheel with
//! no framework and nothing fetched from elsewhere; the page polls the JSON endpoints and
//! inserts every value as text. `--no-console` turns it off.
//!
//! - `api`: the JSON only the console asks for (server facts, future jobs, failed jobs).
//! - `lists`: the paged job lists per function and the failed jobs' filter (their queries).
//! - `action`: the page's buttons: cancel a job, operate a schedule entry, retry or drop a
//!   failed job (POSTs, CSRF-checked, loopback only).
//! - `rates`: the fixed ring of job counts behind the rate chart.

pub mod action;
pub mod api;
pub mod lists;
pub mod rates;

use super::response::Reply;

/// Only the server's own scripts, styles and images, no inline script or style, no framing,
/// no request to another origin.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// One embedded file.
#[derive(Debug, PartialEq, Eq)]
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static str,
}

/// The page and its files; the page is also `/` and `/ui/`. The script is two files, the
/// views that read the job lists apart (`console-jobs.js`), each kept small.
pub const ASSETS: [Asset; 5] = [
    Asset {
        path: "ui/index.html",
        content_type: "text/html; charset=utf-8",
        body: include_str!("index.html"),
    },
    Asset {
        path: "ui/console.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("console.css"),
    },
    Asset {
        path: "ui/console.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("console.js"),
    },
    Asset {
        path: "ui/favicon.svg",
        content_type: "image/svg+xml",
        body: include_str!("favicon.svg"),
    },
    Asset {
        path: "ui/console-jobs.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("console-jobs.js"),
    },
];

/// What a console request asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Page {
    /// `ASSETS[i]`.
    Asset(usize),
    /// `/ui/api/server`: version, uptime, connections, memory, journal, job rates.
    Server,
    /// `/ui/api/future`: future jobs, soonest first.
    Future,
    /// `/ui/api/failed?function=F&entry=E&handle=H`: the newest failed jobs the filter names
    /// (all without one), with previews.
    Failed(lists::FailedFilter),
    /// `/ui/api/jobs?function=F&state=S&offset=N&limit=N`: a page of one function's jobs.
    Jobs(lists::JobsQuery),
    /// `/ui/api/audit`: the newest operators' actions (`GET /audit`'s body).
    Audit,
}

/// Is this (decoded, without its leading `/`) path the console's? `/` and everything under
/// `/ui/` are, whatever the method: those names never submit a job.
pub fn owns(path: &[u8]) -> bool {
    // A browser asks for /favicon.ico by itself whenever it shows any page of this listener
    // (a JSON endpoint opened in a tab): it must get the icon, never submit a job "favicon.ico".
    path.is_empty() || path == b"ui" || path.starts_with(b"ui/") || path == b"favicon.ico"
}

/// The page a console path names (with the request's query string, undecoded), or its 404
/// (400 for a bad query).
pub fn page(path: &[u8], query: &[u8]) -> Result<Page, Reply> {
    let path = match path {
        b"" | b"ui" | b"ui/" => b"ui/index.html".as_slice(),
        b"favicon.ico" => b"ui/favicon.svg".as_slice(),
        p => p,
    };
    if let Some(i) = ASSETS.iter().position(|a| a.path.as_bytes() == path) {
        return Ok(Page::Asset(i));
    }
    match path {
        b"ui/api/server" => Ok(Page::Server),
        b"ui/api/future" => Ok(Page::Future),
        b"ui/api/failed" => lists::failed_filter(query)
            .map(Page::Failed)
            .map_err(|why| Reply::text(400, why)),
        b"ui/api/jobs" => lists::jobs_query(query)
            .map(Page::Jobs)
            .map_err(|why| Reply::text(400, why)),
        b"ui/api/audit" => Ok(Page::Audit),
        _ => Err(Reply::text(404, "no such page in the console")),
    }
}

/// Headers every console response carries.
pub fn guarded(r: Reply) -> Reply {
    r.header("Content-Security-Policy", CSP)
        .header("X-Content-Type-Options", "nosniff")
        .header("Referrer-Policy", "no-referrer")
        .header("X-Frame-Options", "DENY")
        // The files change with the binary: revalidate rather than keep a stale page.
        .header("Cache-Control", "no-cache")
}

/// An embedded file's response.
pub fn asset(i: usize) -> Reply {
    match ASSETS.get(i) {
        Some(a) => guarded(Reply::new(200, Some(a.content_type), a.body)),
        None => Reply::text(404, "no such page in the console"),
    }
}

/// The answer when the console is off.
pub fn off() -> Reply {
    Reply::text(404, "the console is turned off (--no-console)")
}

/// The embedded files' total size in bytes (the page weight).
pub fn weight() -> usize {
    ASSETS.iter().map(|a| a.body.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_to_pages() {
        for p in [&b""[..], b"ui", b"ui/", b"ui/index.html"] {
            assert_eq!(page(p, b""), Ok(Page::Asset(0)), "{p:?}");
        }
        assert_eq!(page(b"ui/console.js", b""), Ok(Page::Asset(2)));
        assert_eq!(page(b"ui/console-jobs.js", b""), Ok(Page::Asset(4)));
        assert_eq!(page(b"ui/api/server", b""), Ok(Page::Server));
        assert_eq!(page(b"ui/api/future", b""), Ok(Page::Future));
        assert_eq!(
            page(b"ui/api/failed", b""),
            Ok(Page::Failed(lists::FailedFilter::default()))
        );
        assert!(matches!(
            page(b"ui/api/failed", b"function=f"),
            Ok(Page::Failed(f)) if f.function.as_deref() == Some(&b"f"[..])
        ));
        assert!(matches!(
            page(b"ui/api/jobs", b"function=f&state=future"),
            Ok(Page::Jobs(q)) if q.phase == crate::engine::JobPhase::Future
        ));
        assert_eq!(page(b"ui/api/jobs", b"").unwrap_err().status, 400);
        assert_eq!(page(b"ui/nope", b"").unwrap_err().status, 404);
        assert!(owns(b"") && owns(b"ui") && owns(b"ui/x"));
        assert!(!owns(b"uix") && !owns(b"status") && !owns(b"reverse"));
    }

    #[test]
    fn assets_carry_their_type_and_the_policy() {
        let r = asset(2);
        assert_eq!(r.content_type, Some("text/javascript; charset=utf-8"));
        assert!(
            r.headers
                .iter()
                .any(|(k, v)| *k == "Content-Security-Policy" && &v[..] == CSP.as_bytes())
        );
        assert_eq!(asset(99).status, 404);
        // The policy forbids inline script: the page has none, nor inline styles or handlers.
        let html = ASSETS[0].body;
        assert!(!html.contains("<script>") && !html.contains("style="));
        let handler = html.split(" on").skip(1).any(|rest| {
            let name: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
            !name.is_empty() && rest[name.len()..].starts_with('=')
        });
        assert!(!handler, "an inline event handler in the page");
        assert!(html.contains("<script src=\"/ui/console.js\""));
        // The page names nothing outside its origin.
        for a in &ASSETS {
            let rest = a.body.replace("http://www.w3.org/2000/svg", "");
            assert!(
                !rest.contains("http:") && !rest.contains("https:"),
                "{}",
                a.path
            );
            assert!(
                !rest.contains("//") || a.path.ends_with(".js"),
                "{}",
                a.path
            );
        }
        // Server values reach the page as text only.
        for js in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            assert!(
                !js.body.contains("innerHTML") && !js.body.contains("insertAdjacentHTML"),
                "{}",
                js.path
            );
            assert!(
                js.body.lines().count() < 800,
                "{}: split it by view",
                js.path
            );
        }
        assert!(html.contains("<script src=\"/ui/console-jobs.js\""));
        assert!(weight() < 60 * 1024, "{} bytes", weight());
    }
}
