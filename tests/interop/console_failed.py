#!/usr/bin/env python3
"""Retry and drop failed jobs from gearwheel's console, and watch a worker's job age, in
headless Chromium (selenium + chromedriver).

Usage: console_failed.py BASE_URL GEARMAN_HOST:PORT OUT_DIR
The server (started by tests/interop/browser_console.rs) has two failed jobs of `console.flaky`: the
older with the workload `retry me` and the error "disk full on /var", the newer with a 3000-byte
workload and an error that is HTML; a worker `console-worker` runs one `console.work` job.
Prints one line per check and the path of each screenshot; exits non-zero on the first failure.
"""
import re
import sys

from selenium.webdriver.common.by import By

from console_page import Worker, chromium, ok, press_by_keyboard, ran_as_text, rows, shot, wait

BASE, GEARMAN, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
HOSTILE = "<img src=x onerror=alert(1)>"


def failed_rows(d):
    return [r for r in rows(d, "failed-list") if len(r) > 1]


def press(d, handle, label):
    d.execute_script(
        "[...document.querySelectorAll('#failed-list tbody tr')]"
        ".find(tr => tr.cells[2].textContent === arguments[0])"
        ".querySelector('button[title^=\"' + arguments[1] + '\"]').click();", handle, label)


d = chromium()
try:
    d.get(BASE + "/#failed")
    wait(d, "two failed jobs listed", lambda: len(failed_rows(d)) == 2)
    newer, older = failed_rows(d)
    assert older[1] == "console.flaky" and older[4] == "disk full on /var", older
    assert older[5] == "retry me", older
    # The newer one's error is HTML shown as text; its 3000-byte workload is a cut preview.
    assert newer[4] == HOSTILE, newer
    assert newer[5].startswith("\u20ac" * 60) and newer[5].endswith("…(2.9 KiB)"), newer[5]
    ran_as_text(d, "the error text")
    ok(f"failed jobs listed newest first with error text and workload preview: {older[2]}, {newer[2]}")
    shot(d, OUT, "console-failed.png")

    # Retry the older one: it leaves the list, a new job is queued, a worker runs it.
    retried = older[2]
    press(d, retried, "retry failed job")
    wait(d, "the retried job leaves the failed list",
         lambda: [r[2] for r in failed_rows(d)] == [newer[2]])
    # The note names the new job the retry queued (a link to its page).
    wait(d, "the page says so", lambda: ("Retried " + retried + " as new job H:") in d.find_element(By.ID, "failed-note").text)
    new_job = d.find_element(By.CSS_SELECTOR, "#failed-note a").text
    ok(f"retried {retried} from its row: it left the failed list; the note names {new_job}")
    w = Worker(GEARMAN, "console-retrier", "console.flaky")
    got = w.grab()
    assert got is not None, "no job for console.flaky after the retry"
    handle, data = got
    assert data == b"retry me", data
    assert handle == new_job, (handle, new_job)
    ok(f"a worker took the retried job as {handle} with its workload")

    # The Workers view shows it running, and for how long; the age moves.
    d.find_element(By.ID, "nav-workers").click()

    def running(client):
        r = next((r for r in rows(d, "worker-list") if len(r) > 3 and r[3] == client), None)
        return r[5] if r else ""

    wait(d, "the retrier runs the job", lambda: running("console-retrier").startswith(handle + " for "))
    first = running("console-retrier")
    wait(d, "its age grows", lambda: re.search(r"for ([1-9]\d*) s$", running("console-retrier")), 6.0)
    ok(f"worker console-retrier shows {first!r}, then {running('console-retrier')!r}")
    held = running("console-worker")
    assert re.match(r"H:\S+ for \d+ (s|min \d+ s)$", held), held
    title = d.execute_script(
        "return [...document.querySelectorAll('#worker-list tbody tr')]"
        ".find(tr => tr.cells[3].textContent === 'console-worker').querySelector('.job').title;")
    assert title.startswith("console.work, since "), title
    ok(f"worker console-worker shows {held!r} ({title})")
    shot(d, OUT, "console-workers.png")

    # Drop the other one from its row, by keyboard.
    d.find_element(By.ID, "nav-failed").click()
    wait(d, "the failed list again", lambda: len(failed_rows(d)) == 1)
    dropped = newer[2]
    press_by_keyboard(
        d,
        "[...document.querySelectorAll('#failed-list tbody tr')]"
        ".find(tr => tr.cells[2].textContent === arguments[0])"
        ".querySelector('button[title^=\"drop failed job\"]').focus();",
        "Drop", "\n", dropped)
    wait(d, "the failed list is empty", lambda: rows(d, "failed-list") == [["no failed jobs"]])
    wait(d, "the page says so", lambda: "Dropped " + dropped + "." in d.find_element(By.ID, "failed-note").text)
    wait(d, "the count says 0", lambda: d.find_element(By.ID, "failed-count").text == "(0)")
    ok(f"dropped {dropped} from its row")
    shot(d, OUT, "console-failed-empty.png")

    bad = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert not bad, bad
    ok("no CSP violation or script error in the browser log")
finally:
    d.quit()
