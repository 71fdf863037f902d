#!/usr/bin/env python3
"""gearwheel's console under --acl, in headless Chromium (selenium + chromedriver).

Usage: console_denied.py NO_STATUS_URL STATUS_ONLY_URL OUT_DIR
NO_STATUS_URL: a server whose ACL grants this machine submit and work but not status: the page
loads (its files need no grant) and says plainly that the server refuses its views.
STATUS_ONLY_URL: one that grants submit, work and status but not admin, with one failed job of
`console.flaky`: the views show, and no button is offered. Prints one line per check and the
path of each screenshot; exits non-zero on the first failure.
"""
import sys

from selenium.webdriver.common.by import By

from console_page import chromium, ok, shot, wait

NO_STATUS, STATUS_ONLY, OUT = sys.argv[1], sys.argv[2], sys.argv[3]


d = chromium()
try:
    d.get(NO_STATUS + "/")
    assert d.title == "gearwheel", d.title
    denied = d.find_element(By.ID, "denied")
    wait(d, "the page says it is refused", lambda: denied.is_displayed() and "403" in denied.text)
    assert "status" in denied.text and "not granted" in denied.text, denied.text
    assert d.find_element(By.ID, "live").text == "not allowed", d.find_element(By.ID, "live").text
    ok(f"refused views are said plainly: {denied.text!r}")
    shot(d, OUT, "console-denied.png")

    d.get(STATUS_ONLY + "/#failed")
    wait(d, "the failed job listed", lambda: "console.flaky" in d.find_element(By.ID, "failed-list").text)
    assert not d.find_element(By.ID, "denied").is_displayed()
    # No action button anywhere (the views' own controls, a state or a page, are not actions).
    assert d.execute_script(
        "return document.querySelectorAll('td.actions button, #bulk button, #job-actions button').length;") == 0
    ok("with status but not admin the views show and no button is offered")
    shot(d, OUT, "console-status-only.png")
    # The browser logs the 403s of the first page as network errors; nothing else.
    bad = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"
           and not (e.get("source") == "network" and "403" in e.get("message", ""))]
    assert not bad, bad
    ok("no script error in the browser log")
finally:
    d.quit()
