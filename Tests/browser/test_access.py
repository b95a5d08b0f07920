"""A private feed on the page: read with the token an application's login put in the cookie
`ptr_token`, refused without it, and a stream that ends as its token expires and comes back
with the renewed cookie, missing nothing."""

import base64
import hashlib
import hmac
import json
import re
import time
import urllib.request

import pytest
from selenium.webdriver.common.by import By

from harness import request_json, running_server, screenshot, wait

SECRET = "a-secret-of-at-least-thirty-two-bytes-for-the-page"
PUBLISH = "the-publish-token-of-the-page-test"
FEED = "user:7"


def mint(seconds, read=(FEED,), sub="user-7"):
    """An HS256 token as the application's login would make it."""
    def part(data):
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    signing = part({"alg": "HS256", "typ": "JWT"}) + "." + part(
        {"exp": int(time.time()) + seconds, "sub": sub, "ptr": {"read": list(read)}})
    signature = hmac.new(SECRET.encode(), signing.encode(), hashlib.sha256).digest()
    return signing + "." + base64.urlsafe_b64encode(signature).rstrip(b"=").decode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    key = tmp_path_factory.mktemp("keys") / "page.key"
    key.write_text(SECRET + "\n")
    with running_server("--auth-key", str(key), "--publish-token", PUBLISH) as base:
        yield base


def publish(base, *titles):
    status, reply = request_json(base, "POST", f"/api/feeds/{FEED}/items", {"items": [{"title": t} for t in titles]},
                                 headers={"Authorization": f"Bearer {PUBLISH}"})
    assert status == 201, reply


def titles(driver):
    return driver.execute_script("return [...document.querySelectorAll('#list .feed .item h2')].map((e) => e.textContent)")


def streams_opened(base):
    text = urllib.request.urlopen(base + "/metrics").read().decode()
    match = re.search(r'ptr_http_requests_total\{route="/api/sessions/\{id\}/events",status="200"\} (\d+)', text)
    return int(match.group(1)) if match else 0


def set_token(driver, base, token):
    # A cookie is set on the page's own origin, as the application's login would.
    driver.add_cookie({"name": "ptr_token", "value": token, "path": "/", "httpOnly": True, "sameSite": "Lax"})


def test_without_the_cookie_the_private_feed_shows_nothing(server, phone):
    publish(server, "only for user 7")
    phone.get(server + f"/?feed={FEED}")
    wait(phone, lambda d: d.find_element(By.CSS_SELECTOR, "#list .ptr-error").is_displayed())
    assert titles(phone) == []
    assert "only for user 7" not in phone.page_source


def test_the_cookie_reads_the_feed_and_a_stream_that_expires_comes_back_renewed(server, phone):
    publish(server, "first for user 7", "second for user 7")
    phone.get(server + "/healthz")
    set_token(phone, server, mint(8))
    phone.get(server + f"/?feed={FEED}")
    wait(phone, lambda d: "second for user 7" in titles(d))
    opened = streams_opened(server)
    # The application renews the cookie before the token runs out; the stream the old token
    # opened ends within its last minute (here: its eight seconds), and the page comes back
    # with the new one.
    set_token(phone, server, mint(3600))
    wait(phone, lambda d: streams_opened(server) > opened, timeout=30)
    publish(server, "third for user 7")
    wait(phone, lambda d: d.execute_script("return document.getElementById('list').dataset.newsCount") == "1")
    screenshot(phone, "access-private-feed.png")
