"""What the console's browser tests share (console_browser.py, console_failed.py,
console_denied.py): headless Chromium through Debian's chromedriver, waiting for a condition,
reading a table as the page shows it, printing checks and screenshots, and a Gearman worker
over a raw socket."""
import os
import socket
import struct

from selenium import webdriver
from selenium.common.exceptions import (NoAlertPresentException, StaleElementReferenceException,
                                        TimeoutException)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

CAN_DO, GRAB_JOB, JOB_ASSIGN, NO_JOB, NOOP, SET_CLIENT_ID = 1, 9, 11, 10, 6, 22
WORK_COMPLETE, WORK_DATA, WORK_FAIL = 13, 28, 14


def chromium():
    o = webdriver.ChromeOptions()
    o.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1280,900", "--force-color-profile=srgb"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver: selenium-manager would try the network.
    svc = Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(options=o, service=svc)


def wait(d, what, cond, secs=5.0):
    # An element the page replaced while `cond` read it is "not yet": read it again.
    try:
        return WebDriverWait(d, secs, poll_frequency=0.05,
                             ignored_exceptions=[StaleElementReferenceException]).until(lambda _: cond())
    except TimeoutException:
        raise SystemExit(f"FAIL: {what} (within {secs} s)")


def rows(d, table):
    # Read in one script: the page rebuilds its tables as data changes.
    return d.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map("
        "tr => [...tr.cells].map(td => td.textContent));", f"#{table} tbody tr")


def press_by_keyboard(d, focus_script, label, key, *args):
    """Focus a table row's button with `focus_script` (its arguments `args`), check that it is
    the `label` button and press `key` on it. The page rebuilds its tables as data changes, so
    the button focused may be replaced before the key reaches it: selenium then sends nothing
    (the element is stale) and the press is tried again on the new button."""
    seen = None
    for _ in range(20):
        d.execute_script(focus_script, *args)
        try:
            el = d.switch_to.active_element
            seen = el.get_attribute("outerHTML")
            if el.text == label:
                el.send_keys(key)
                return
        except StaleElementReferenceException:
            pass
    raise SystemExit(f"FAIL: no {label} button took the focus and the key; last focused: {seen}")


def ok(msg):
    print("ok:", msg, flush=True)


def shot(d, out, name):
    path = os.path.join(out, name)
    d.save_screenshot(path)
    print("screenshot:", path, flush=True)


def ran_as_text(d, what):
    """Hostile HTML from the server made no element and opened no alert."""
    assert d.execute_script("return document.querySelectorAll('main img').length;") == 0
    try:
        d.switch_to.alert
        raise SystemExit(f"FAIL: an alert opened: {what} ran as HTML")
    except NoAlertPresentException:
        pass


class Worker:
    """A Gearman worker over a raw socket: the job it takes stays running until it leaves."""

    def __init__(self, addr, client_id, func):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host.strip("[]"), int(port)), timeout=5)
        self.send(SET_CLIENT_ID, client_id.encode())
        self.send(CAN_DO, func.encode())

    def send(self, ptype, *args):
        body = b"\0".join(args)
        self.s.sendall(b"\0REQ" + struct.pack(">II", ptype, len(body)) + body)

    def read(self):
        head = self.exact(12)
        assert head[:4] == b"\0RES", head
        ptype, n = struct.unpack(">II", head[4:])
        return ptype, self.exact(n).split(b"\0")

    def exact(self, n):
        buf = b""
        while len(buf) < n:
            more = self.s.recv(n - len(buf))
            if not more:
                raise SystemExit("FAIL: the server closed the worker's connection")
            buf += more
        return buf

    def grab(self):
        self.send(GRAB_JOB)
        while True:
            ptype, args = self.read()
            if ptype == JOB_ASSIGN:
                return args[0].decode(), args[2]
            if ptype != NOOP:
                return None
