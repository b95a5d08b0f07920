"""What every browser test stands on: a server process, a headless Chromium, and the few
questions the tests ask of the page."""

import contextlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "support"))
from client import free_port, request, request_json  # noqa: E402,F401  (the tests import them from here)
from server import Server  # noqa: E402
ARTIFACTS = pathlib.Path(os.environ.get("ARTIFACTS", ROOT / "artifacts"))
BINARY = os.environ.get("REFRESH_SERVER", str(ROOT / ".build" / "debug" / "refresh-server"))


@contextlib.contextmanager
def running_server(*flags, port=0, database=":memory:", kill=False):
    """A server with `flags` on `port` (a free one by default); yields its base URL. It is
    shown with its output when it does not start. With `kill`, it ends as a crash would
    (SIGKILL) rather than by SIGTERM."""
    process = Server(*flags, binary=BINARY, database=database, port=port or None).start(timeout=20)
    try:
        yield process.base
    finally:
        if kill:
            process.kill()
        else:
            process.stop(timeout=5)


def make_driver(width, height, reduced_motion=False, insecure=False, arguments=()):
    """A headless Chromium of that size; `arguments` are more command-line switches."""
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}", "--force-device-scale-factor=1", *arguments):
        options.add_argument(argument)
    if reduced_motion:
        options.add_argument("--force-prefers-reduced-motion")
    if insecure:
        # A front with a self-signed certificate, on loopback, in a test.
        options.add_argument("--ignore-certificate-errors")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")), options=options)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
    return driver


def publish(base, *titles):
    """Publishes one item per title, in one request; its `201` means every open session
    has its news queued."""
    body = {"title": titles[0]} if len(titles) == 1 else {"items": [{"title": title} for title in titles]}
    status, reply = request_json(base, "POST", "/api/items", body)
    assert status == 201, reply


def open_page(driver, base, query=""):
    driver.get(base + "/" + query)
    wait(driver, lambda d: d.execute_script("return document.querySelectorAll('.feed .item').length") >= 10)
    # Count what the page is told, to assert on actions without timing guesses.
    driver.execute_script("""
        window.done = [];
        document.getElementById('list').addEventListener('ptr-done', e => window.done.push(e.detail));
    """)


def wait(driver, condition, timeout=30):
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition)


def refreshes(driver):
    return driver.execute_script("return window.done.filter(d => d.kind === 'refresh' && d.outcome === 'completed').length")


def first_titles(driver, count=3):
    return driver.execute_script(
        f"return [...document.querySelectorAll('.feed .item h2')].slice(0, {count}).map(e => e.textContent)")


def dataset(driver, name):
    """A `data-*` attribute of the <pull-to-refresh> element, or None."""
    return driver.execute_script(f"return document.getElementById('list')?.dataset.{name} ?? null")


def item_count(driver):
    return driver.execute_script("return document.querySelectorAll('.feed .item').length")


def screenshot(driver, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / name))


def assert_no_console_errors(driver):
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
