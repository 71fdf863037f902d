#!/usr/bin/env python3
"""The console's working pages in headless Chromium: a function's jobs page by page with
Cancel, the failed jobs filtered by function and schedule entry with Retry all and Drop all, a
job's page (facts, output live while it runs, result, Retry), the chart's axes, and the layout
at 1400 px and on a 390 px phone (no word cut in a card, times on one line, nothing wider
than the screen, the header stays when the navigation is used).

Usage: console_pages.py BASE_URL GEARMAN_HOST:PORT OUT_DIR
The server (started by tests/interop/browser_console.rs) has: 59 background jobs queued for
`video.transcode` and one running on worker `encoder-1`; two failed jobs of `reports.flaky`
and one failed run of the schedule entry `nightly-report` (function `report.build`); one
queued job of `console.live` that this script's own worker runs, writing output as it goes.
Prints one line per check and the path of each screenshot; exits non-zero on the first failure.
"""
import json
import re
import sys
import urllib.request

from selenium.webdriver.common.by import By

from console_page import WORK_COMPLETE, WORK_DATA, WORK_FAIL, Worker, chromium, ok, rows, shot, wait

BASE, GEARMAN, OUT = sys.argv[1], sys.argv[2], sys.argv[3]


def text(d, id_):
    return d.find_element(By.ID, id_).text


def lines_of(d, selector):
    """How many lines each matching element's text takes (its line boxes)."""
    return d.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => {"
        " const r = document.createRange(); r.selectNodeContents(e);"
        " const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));"
        " return [e.textContent, tops.size]; });", selector)


def wider(d):
    return d.execute_script("return document.documentElement.scrollWidth - window.innerWidth;")


def job_json(handle):
    req = urllib.request.Request(BASE + "/jobs/" + urllib.request.quote(handle))
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read())


d = chromium()
try:
    d.set_window_size(1400, 900)
    # ---- The chart's axes ----
    d.get(BASE + "/")
    wait(d, "the chart's count axis", lambda: len(d.find_elements(By.CSS_SELECTOR, "#rates text.axis")) >= 3)
    # Read in one script: the chart is drawn again as the rates change.
    labels = d.execute_script(
        "return [...document.querySelectorAll('#rates text.axis')].map(e => e.textContent);")
    counts = [x for x in labels if re.fullmatch(r"\d+(\.\d)?", x)]
    times = [x for x in labels if re.search(r"\d{1,2}:\d{2}", x)]
    assert counts[0] == "0" and len(counts) == 3 and float(counts[2]) > float(counts[1]) > 0, labels
    assert len(times) >= 3, labels
    ok(f"the chart has a count axis {counts} and a time axis {times[:3]}...")
    shot(d, OUT, "console-1400-overview.png")

    # ---- A function's jobs, page by page ----
    d.get(BASE + "/#jobs?function=video.transcode")
    wait(d, "50 queued jobs of video.transcode", lambda: len(rows(d, "job-list")) == 50)
    assert text(d, "page-at") == "1–50 of 59", text(d, "page-at")
    first = rows(d, "job-list")[0]
    assert first[0].startswith("H:") and first[1] == "v1" and first[2] == "normal", first
    # Its age (since it was submitted) and its place in the queue.
    assert re.fullmatch(r"\d+ (s|min \d+ s) old, #1", first[3]) and first[5] == '{"file":"movie-1.mp4"}', first
    d.find_element(By.ID, "page-next").click()
    wait(d, "the second page", lambda: text(d, "page-at") == "51–59 of 59")
    assert len(rows(d, "job-list")) == 9 and rows(d, "job-list")[0][3].endswith(" old, #51")
    ok("video.transcode's 59 queued jobs in pages of 50, in the order workers get them")
    wait(d, "the header's role", lambda: text(d, "role") == "standalone")
    ok("the header says the server is standalone on the jobs page too")
    d.find_element(By.ID, "state-running").click()
    wait(d, "the running job", lambda: len(rows(d, "job-list")) == 1 and rows(d, "job-list")[0][1] == "v0")
    run = rows(d, "job-list")[0]
    assert run[3].startswith("for ") and run[4] == "addr:127.0.0.1", run
    ok(f"the running one shows its worker and age: {run[3]!r} on {run[4]}")
    d.find_element(By.ID, "state-queued").click()
    wait(d, "back to the first page of queued jobs", lambda: text(d, "page-at") == "1–50 of 59")
    victim = rows(d, "job-list")[0][0]
    d.execute_script(
        "[...document.querySelectorAll('#job-list tbody tr')]"
        ".find(tr => tr.cells[0].textContent === arguments[0]).querySelector('button').click();", victim)
    wait(d, "the cancelled job leaves the list", lambda: text(d, "page-at") == "1–50 of 58")
    assert victim not in [r[0] for r in rows(d, "job-list")]
    wait(d, "the note says so", lambda: text(d, "jobs-note") == f"Cancelled {victim}.")
    ok(f"cancelled {victim} from the list")
    shot(d, OUT, "console-1400-jobs.png")

    # ---- A job's page with live output ----
    w = Worker(GEARMAN, "console-live", "console.live")
    live, _ = w.grab()
    w.send(WORK_DATA, live.encode(), b"step 1 of 2: reading\n")
    kept = "output_bytes" in job_json(live)
    d.get(BASE + "/#job/" + live)
    wait(d, "the running job's page", lambda: "running" in text(d, "job"))
    facts = dict(d.execute_script(
        "return [...document.querySelectorAll('#job > div')].map(x => [x.querySelector('dt').textContent, x.querySelector('dd').textContent]);"))
    assert facts.get("Function") == "console.live", facts
    if kept:
        wait(d, "its output so far", lambda: "step 1 of 2" in text(d, "job-output"))
        w.send(WORK_DATA, live.encode(), b"step 2 of 2: writing\n")
        wait(d, "more output, live", lambda: "step 2 of 2" in text(d, "job-output"))
        ok("a running job's output shows live on its page")
    else:
        wait(d, "no output kept", lambda: text(d, "job-output") == "no output kept")
        ok("a server that keeps no output: the page says 'no output kept'")
    shot(d, OUT, "console-1400-job-running.png")
    w.send(WORK_COMPLETE, live.encode(), b"42 files written")
    if kept:
        wait(d, "the kept result", lambda: "complete" in text(d, "job") and text(d, "job-result") == "42 files written")
        assert "step 2 of 2" in text(d, "job-output"), text(d, "job-output")
        ok("when it ends, its page shows the outcome, the result and the output")
    else:
        wait(d, "the job ends", lambda: "not known" in text(d, "job"))
        ok("when it ends, its page says it is not known any more")
    shot(d, OUT, "console-1400-job-done.png")

    # ---- Failed jobs: filters, a job's page with Retry, Retry all, Drop all ----
    d.get(BASE + "/#failed")
    wait(d, "three failed jobs", lambda: len([r for r in rows(d, "failed-list") if len(r) > 1]) == 3)
    for row in lines_of(d, "#failed-list td.time"):
        assert row[1] == 1, f"a time on {row[1]} lines: {row[0]!r}"
    ok("times in the failed list stay on one line at 1400 px")
    shot(d, OUT, "console-1400-failed.png")
    d.execute_script("const s = document.getElementById('filter-entry'); s.value = 'nightly-report';"
                     "s.dispatchEvent(new Event('change'));")
    wait(d, "the entry's failed run", lambda: len(rows(d, "failed-list")) == 1 and rows(d, "failed-list")[0][1] == "report.build")
    run = rows(d, "failed-list")[0][2]
    ok(f"filtered by schedule entry nightly-report: {run}")
    d.find_element(By.LINK_TEXT, run).click()
    wait(d, "the run's page", lambda: "failed" in text(d, "job") and "nightly-report" in text(d, "job"))
    d.find_element(By.CSS_SELECTOR, "#job-actions button").click()
    wait(d, "the retry's note names the new job", lambda: text(d, "job-note").startswith(f"Retried {run} as new job H:"))
    new = d.find_element(By.CSS_SELECTOR, "#job-note a").text
    d.find_element(By.CSS_SELECTOR, "#job-note a").click()
    wait(d, "the new job's page", lambda: "queued" in text(d, "job") and text(d, "job-handle") == new)
    ok(f"retried the failed run {run} from its page; the note links to the new job {new}")
    shot(d, OUT, "console-1400-job-retried.png")

    d.get(BASE + "/#failed?function=reports.flaky")
    wait(d, "two failed jobs of reports.flaky", lambda: len(rows(d, "failed-list")) == 2)
    bulk = d.find_element(By.CSS_SELECTOR, "#bulk button")
    assert bulk.text == "Retry all 2", bulk.text
    bulk.click()
    wait(d, "the button asks again", lambda: d.find_element(By.CSS_SELECTOR, "#bulk button").text == "Retry all 2? Press again")
    d.find_element(By.CSS_SELECTOR, "#bulk button").click()
    wait(d, "retried", lambda: text(d, "failed-note") == "Retried 2 failed jobs of reports.flaky.")
    wait(d, "none left of the filter", lambda: rows(d, "failed-list") == [["no failed jobs of reports.flaky"]])
    ok("Retry all of function reports.flaky: 2 queued again")
    # They fail again (as new jobs), then Drop all with no filter.
    f = Worker(GEARMAN, "console-failer", "reports.flaky")
    for _ in range(2):
        h, _ = f.grab()
        f.send(WORK_FAIL, h.encode())
    d.get(BASE + "/#failed")
    wait(d, "two failed again", lambda: len([r for r in rows(d, "failed-list") if len(r) > 1]) == 2)
    d.find_elements(By.CSS_SELECTOR, "#bulk button")[1].click()
    d.find_elements(By.CSS_SELECTOR, "#bulk button")[1].click()
    wait(d, "dropped", lambda: text(d, "failed-note") == "Dropped 2 failed jobs.")
    wait(d, "no failed job left", lambda: rows(d, "failed-list") == [["no failed jobs"]])
    ok("Drop all with no filter: the failed list is empty")

    # ---- A phone ----
    d.set_window_size(390, 844)
    for view in ("", "#schedules", "#workers", "#jobs?function=video.transcode", "#failed", "#job/" + new):
        d.get(BASE + "/" + view)
        wait(d, "the view " + (view or "#overview"), lambda: text(d, "live") == "live")
        wait(d, "nothing wider than the phone on " + (view or "#overview"), lambda: wider(d) <= 1)
        name = (view.strip("#").split("?")[0].split("/")[0] or "overview")
        shot(d, OUT, f"console-390-{name}.png")
    ok("no view is wider than a 390 px screen")
    d.get(BASE + "/")
    wait(d, "facts", lambda: len(lines_of(d, ".facts dd")) >= 10)
    for value, n in lines_of(d, ".facts dd"):
        assert n == 1 or " " in value.strip(), f"{value!r} is cut over {n} lines"
    d.get(BASE + "/#job/" + new)
    wait(d, "the new job's page on a phone", lambda: "queued" in text(d, "job"))
    cut = [v for v, n in lines_of(d, "#job dd") if n > 1 and " " not in v.strip() and len(v) < 30]
    assert not cut, cut
    ok("no name is cut inside a word, on a card or a job's page")
    # The navigation from far down the page: the header stays on screen.
    d.get(BASE + "/#jobs?function=video.transcode")
    wait(d, "the list on a phone", lambda: len(rows(d, "job-list")) == 50)
    d.execute_script("window.scrollTo(0, document.body.scrollHeight);")
    d.find_element(By.ID, "nav-failed").click()
    wait(d, "the Failed view", lambda: d.find_element(By.ID, "view-failed").is_displayed())
    top = d.execute_script("return document.querySelector('header').getBoundingClientRect().top;")
    h2 = d.execute_script("return document.getElementById('h-failed').getBoundingClientRect().top;")
    assert top == 0 and 0 <= h2 < 844, (top, h2)
    ok("a click in the navigation keeps the header and shows the view from its top")

    bad = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"
           and not (e.get("source") == "network" and "/jobs/" in e.get("message", "")
                    and "404" in e.get("message", ""))]
    assert not bad, bad
    ok("no CSP violation or script error in the browser log")
finally:
    d.quit()
