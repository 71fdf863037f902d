#!/usr/bin/env python3
"""Drive gearwheel's console in headless Chromium (selenium + chromedriver).

Usage: console_browser.py BASE_URL OUT_DIR
The server (started by tests/interop/browser_console.rs) has: 3 background jobs queued for
`console.q`, 2 for a function named `<img src=x onerror=alert(1)>`, a worker `console-worker`
running one `console.work` job, a future job for `console.later` due in 2100, and a schedules
file with `console.tick` and `nightly.backup`. Prints one line per check and the path of each
screenshot (saved into OUT_DIR); exits non-zero on the first failure.
"""
import sys
import time
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from console_page import chromium, ok, press_by_keyboard, ran_as_text, rows, shot, wait

BASE, OUT = sys.argv[1], sys.argv[2]
HOSTILE = "<img src=x onerror=alert(1)>"


def row(d, table, first):
    for r in rows(d, table):
        if r and r[0] == first:
            return r
    return None


d = chromium()
try:
    d.get(BASE + "/")
    assert d.title == "gearwheel", d.title
    wait(d, "console.q shows 3 queued", lambda: (row(d, "functions", "console.q") or [0, 0])[1] == "3")
    ok("overview reads 3 queued jobs of console.q")
    wait(d, "server facts", lambda: d.find_element(By.ID, "facts").text.count("Connections") == 1)
    ok("server facts shown")

    # A change on the server shows without a reload.
    d.execute_script("window.__sameDocument = 42;")
    req = urllib.request.Request(BASE + "/console.q", data=b"more", method="POST",
                                 headers={"X-Gearman-Background": "true"})
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200, r.status
    t0 = time.monotonic()
    wait(d, "the new job shows without reload", lambda: (row(d, "functions", "console.q") or [0, 0])[1] == "4", 3.0)
    took = time.monotonic() - t0
    assert d.execute_script("return window.__sameDocument;") == 42, "the page was reloaded"
    ok(f"a fourth job showed {took:.2f} s after it was submitted, same document")

    # The hostile function name is text, not an element, and ran nothing.
    r = row(d, "functions", HOSTILE)
    assert r is not None, rows(d, "functions")
    assert r[1] == "2", r
    ran_as_text(d, "the name")
    ok("a function named <img src=x onerror=alert(1)> shows as text")

    # The rate chart has bars for the submissions.
    wait(d, "rate chart bars", lambda: d.execute_script(
        "return [...document.querySelectorAll('#rates rect.submitted')].some(r => +r.getAttribute('height') > 0);"))
    ok("the rate chart shows the submissions")
    shot(d, OUT, "console-overview.png")

    # Keyboard: Tab reaches the navigation, Enter opens a view.
    body = d.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    for _ in range(6):
        if d.switch_to.active_element.get_attribute("id") == "nav-schedules":
            break
        d.switch_to.active_element.send_keys(Keys.TAB)
    assert d.switch_to.active_element.get_attribute("id") == "nav-schedules", \
        d.switch_to.active_element.get_attribute("outerHTML")
    d.switch_to.active_element.send_keys(Keys.ENTER)
    wait(d, "schedules view", lambda: any("console.tick" in r for r in rows(d, "schedule-list")))
    r = next(r for r in rows(d, "schedule-list") if "console.tick" in r)
    title = d.execute_script(
        "return document.querySelector('#schedule-list tbody tr td:nth-child(5)').title;")
    assert title.endswith(" UTC"), title
    # The browser runs in Asia/Kathmandu (UTC+5:45): the shown time is the viewer's.
    import re
    shown_min = int(re.search(r"\d{1,2}:(\d{2}):\d{2}", r[4]).group(1))
    utc_min = int(re.search(r"T\d{2}:(\d{2})", title).group(1))
    assert (shown_min - utc_min) % 60 == 45, (r[4], title)
    assert any("nightly.backup" in r for r in rows(d, "schedule-list"))
    ok(f"schedules listed by keyboard navigation; next run {r[4]!r}, UTC on hover {title!r}")
    # The webhooks table reads /webhooks: no webhook here, so its empty line.
    wait(d, "webhooks table", lambda: rows(d, "webhook-list") == [["no webhook alert since start"]])
    ok("webhooks table shown under the schedules")

    # Operate the entry from its row: pause, resume, run now.
    def tick_row():
        return next(r for r in rows(d, "schedule-list") if r[1] == "console.tick")

    def press(label):
        d.execute_script(
            "[...document.querySelectorAll('#schedule-list tbody tr')]"
            ".find(tr => tr.cells[1].textContent === 'console.tick')"
            ".querySelector('button[title^=\"' + arguments[0] + '\"]').click();", label)

    press("pause:")
    wait(d, "the entry shows paused", lambda: tick_row()[3] == "paused")
    ok("paused console.tick from its row")
    shot(d, OUT, "console-schedules.png")
    press("resume:")
    wait(d, "the entry shows active", lambda: tick_row()[3] == "active")
    ok("resumed it")
    runs = int(tick_row()[7])
    press("run now:")
    # `>=`: the entry's own minute may fire meanwhile (overlap=allow in the test's file, so a
    # queued tick never refuses the manual run); the note below is what proves the manual run.
    wait(d, "the manual run shows", lambda: int(tick_row()[7]) >= runs + 1)
    wait(d, "the note says so", lambda: "Started a run" in d.find_element(By.ID, "schedule-note").text)
    ok(f"ran it now: {runs + 1} runs, last run {tick_row()[5]!r}")

    d.find_element(By.ID, "nav-workers").click()
    wait(d, "worker listed", lambda: any("console-worker" in r for r in rows(d, "worker-list")))
    w = next(r for r in rows(d, "worker-list") if "console-worker" in r)
    assert "console.work" in w[4] and w[5].startswith("H:") and w[2].startswith("addr:"), w
    ok(f"worker console-worker ({w[2]}) runs {w[5]}")

    d.find_element(By.ID, "nav-jobs").click()
    wait(d, "future job listed", lambda: any("console.later" in r for r in rows(d, "future-list")))
    fut = next(r for r in rows(d, "future-list") if "console.later" in r)
    handle = fut[2]
    box = d.find_element(By.ID, "handle")
    box.send_keys(handle, Keys.ENTER)
    wait(d, "job lookup", lambda: "future" in d.find_element(By.ID, "job").text)
    assert d.current_url.endswith("#job/" + handle.replace(":", "%3A")), d.current_url
    ok(f"future job {handle} due {fut[0]!r}, looked up by handle: its page")
    shot(d, OUT, "console-jobs.png")
    d.back()
    wait(d, "the Jobs view again", lambda: any("console.later" in r for r in rows(d, "future-list")))

    # Cancel it from its row, by keyboard: the button is reachable and Enter presses it.
    press_by_keyboard(
        d,
        "[...document.querySelectorAll('#future-list tbody tr')]"
        ".find(tr => tr.cells[1].textContent === 'console.later').querySelector('button').focus();",
        "Cancel", Keys.ENTER)
    wait(d, "the cancelled job leaves the list",
         lambda: not any("console.later" in r for r in rows(d, "future-list")))
    wait(d, "the page says so", lambda: ("Cancelled " + handle) in d.find_element(By.ID, "note").text)
    ok(f"cancelled {handle} from its row (POST with the console's header)")

    # The Audit tab lists what the page did, newest first, with who did it.
    d.find_element(By.ID, "nav-audit").click()
    cancel = "POST /ui/api/cancel " + handle
    wait(d, "the cancel in the audit tab",
         lambda: any(len(r) == 5 and r[3] == cancel for r in rows(d, "audit-list")))
    audit = rows(d, "audit-list")
    a = next(r for r in audit if r[3] == cancel)
    assert a[1] == "addr:127.0.0.1" and a[2].startswith("127.0.0.1:") and a[4] == "OK", a
    assert audit[0] == a, audit
    assert any(r[3] == "POST /ui/api/schedule pause console.tick" for r in audit), audit
    ok(f"the audit tab lists {len(audit)} actions, the cancel first, by {a[1]}")

    # A phone: nothing wider than the screen (tables scroll inside their box).
    d.set_window_size(390, 844)
    d.find_element(By.ID, "nav-overview").click()
    wait(d, "overview on a phone", lambda: row(d, "functions", "console.q") is not None)
    wide = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth;")
    assert wide <= 1, f"the page is {wide} px wider than a phone screen"
    ok("readable on a 390 px screen")
    shot(d, OUT, "console-phone.png")

    # No Content-Security-Policy violation, no script error.
    # (A 404 for the looked-up job after it was cancelled is the answer the page expects.)
    bad = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"
           and not (e.get("source") == "network" and "/jobs/" in e.get("message", "")
                    and "404" in e.get("message", ""))]
    assert not bad, bad
    ok("no CSP violation or script error in the browser log")
finally:
    d.quit()
