"""What the console's browser tests share (console_browser.py, console_failed.py,
console_denied.py): headless Chromium through Debian's chromedriver, waiting for a condition,
reading a table as the page shows it, printing checks and screenshots."""
import os

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait


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
    try:
        return WebDriverWait(d, secs, poll_frequency=0.05).until(lambda _: cond())
    except TimeoutException:
        raise SystemExit(f"FAIL: {what} (within {secs} s)")


def rows(d, table):
    # Read in one script: the page rebuilds its tables as data changes.
    return d.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map("
        "tr => [...tr.cells].map(td => td.textContent));", f"#{table} tbody tr")


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
