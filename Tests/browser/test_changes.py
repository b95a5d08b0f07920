"""Rows edited and removed while the page shows them: an edited row is drawn again where it
stands, a removed one collapses (at once under reduced motion), the row the reader is looking
at does not move, and the news badge is corrected when an item it counted is removed. All
without a pull: the server sends `changes` as they happen.

Each test reads a feed of its own, seeded through the API, so the module's server is shared
without one test's changes reaching another's page."""

import itertools
import urllib.parse

import pytest

from harness import (assert_no_console_errors, make_driver, open_page, refreshes, request_json, screenshot, wait)
from test_news import RECORDER, badge_text, scroll_to, settle

FEEDS = itertools.count(1)

# Kept by the page as it is told: each `ptr-changes`, and, right after the page's handler
# ran, whether each removed row was gone or on its way out.
CHANGES_RECORDER = """
    window.changed = [];
    document.addEventListener('ptr-changes', e => {
        const removed = e.detail.changes.filter(c => c.op === 'remove').map(c => {
            const row = document.querySelector(`.feed [data-id="${CSS.escape(c.id)}"]`);
            return { id: c.id, state: row == null ? 'gone' : row.dataset.ptrRemoving != null ? 'collapsing' : 'shown' };
        });
        window.changed.push({ detail: e.detail, removed });
    });
"""


def seeded_feed(base, count=30):
    """A new feed with `count` items, `row-0` the oldest (so the page shows `row-{count-1}`
    first); answers its name."""
    name = f"changes-{next(FEEDS)}"
    items = [{"id": f"row-{index}", "title": f"Row {index}", "summary": "A line of text under the title.",
              "published": f"2030-01-01T{index // 60:02d}:{index % 60:02d}:00Z"} for index in range(count)]
    status, reply = request_json(base, "POST", f"/api/feeds/{name}/items", {"items": items})
    assert status == 201, reply
    return name


def change(base, feed, method, item, body=None):
    path = f"/api/feeds/{feed}/items/{urllib.parse.quote(item, safe='')}"
    status, reply = request_json(base, method, path, body)
    assert status in (200, 204), reply
    return reply


def open_feed(driver, base, feed, query=""):
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER + CHANGES_RECORDER})
    open_page(driver, base, f"?feed={feed}{query}")
    settle(driver)


def rows(driver):
    """The rows shown, top to bottom, that are not on their way out: [id, title, posinset]."""
    return driver.execute_script("""
        return [...document.querySelectorAll('.feed .item')].filter(r => r.dataset.ptrRemoving == null)
            .map(r => [r.dataset.id, r.querySelector('h2').textContent, r.getAttribute('aria-posinset')]);
    """)


def ids(driver):
    return [row[0] for row in rows(driver)]


def on_screen(driver, item):
    """Where the row of `item` is, from the top of the list's view, in CSS pixels."""
    return driver.execute_script("""
        const row = document.querySelector(`.feed [data-id="${CSS.escape(arguments[0])}"]`);
        return row.getBoundingClientRect().top - document.getElementById('list').scroller.getBoundingClientRect().top;
    """, item)


def looked_at(driver):
    """The id of the row the reader is looking at: the first whose bottom is in view."""
    return driver.execute_script("""
        const top = document.getElementById('list').scroller.getBoundingClientRect().top;
        return [...document.querySelectorAll('.feed .item')].find(r => r.getBoundingClientRect().bottom > top).dataset.id;
    """)


def changes_told(driver):
    return driver.execute_script("return window.changed.length")


@pytest.fixture
def reduced():
    driver = make_driver(390, 844, reduced_motion=True)
    yield driver
    driver.quit()


def test_an_edited_row_is_drawn_again_where_it_stands(server, phone):
    feed = seeded_feed(server)
    open_feed(phone, server, feed)
    before = rows(phone)
    assert before[2][:2] == ["row-27", "Row 27"]

    change(server, feed, "PATCH", "row-27", {"title": "Row 27, corrected", "author": "Editor"})
    wait(phone, lambda d: rows(d)[2][1] == "Row 27, corrected")
    after = rows(phone)
    assert [row[0] for row in after] == [row[0] for row in before], "nothing moved"
    assert after[2][2] == "3", "its place in the feed for assistive technology too"
    assert [row for index, row in enumerate(after) if index != 2] == [row for index, row in enumerate(before) if index != 2]
    assert phone.execute_script("""
        return document.querySelector('.feed [data-id="row-27"] .meta').textContent.includes('Editor')
    """)
    assert refreshes(phone) == 0, "no pull, no refresh"
    told = phone.execute_script("return window.changed[0].detail")
    assert told["changes"][0]["op"] == "update" and told["changes"][0]["item"]["version"] == told["version"]

    # A refresh now has nothing to bring: the edit is not told twice.
    phone.execute_script("document.getElementById('list').refresh()")
    wait(phone, lambda d: refreshes(d) == 1)
    assert changes_told(phone) == 1
    assert rows(phone) == after
    assert_no_console_errors(phone)


def test_a_removed_row_collapses_and_the_rows_below_close_up(server, phone):
    feed = seeded_feed(server)
    open_feed(phone, server, feed)
    before = ids(phone)
    change(server, feed, "DELETE", "row-28")
    wait(phone, lambda d: changes_told(d) == 1)
    assert phone.execute_script("return window.changed[0].removed") == [{"id": "row-28", "state": "collapsing"}]
    wait(phone, lambda d: d.execute_script("return document.querySelector('.feed [data-id=\"row-28\"]') == null"))
    assert ids(phone) == [item for item in before if item != "row-28"]
    assert [row[2] for row in rows(phone)[:3]] == ["1", "2", "3"], "the positions counted again"
    announced = phone.execute_script("return document.querySelector('pull-to-refresh .ptr-live').textContent")
    assert announced == "1 item removed"
    screenshot(phone, "changes-removed.png")
    assert_no_console_errors(phone)


def test_under_reduced_motion_a_removed_row_goes_at_once(server, reduced):
    feed = seeded_feed(server)
    open_feed(reduced, server, feed)
    change(server, feed, "DELETE", "row-28")
    wait(reduced, lambda d: changes_told(d) == 1)
    assert reduced.execute_script("return window.changed[0].removed") == [{"id": "row-28", "state": "gone"}]
    assert "row-28" not in ids(reduced)
    assert_no_console_errors(reduced)


def test_the_row_the_reader_is_looking_at_stays_where_it_is(server, phone):
    feed = seeded_feed(server)
    open_feed(phone, server, feed)
    scroll_to(phone, 700)
    anchor = looked_at(phone)
    where = on_screen(phone, anchor)
    above = ids(phone)[:ids(phone).index(anchor)]
    assert len(above) >= 3, above

    # Rows above it grow, shrink and go, out of the reader's sight.
    change(server, feed, "PATCH", above[0], {"summary": "A much longer summary. " * 20})
    change(server, feed, "DELETE", above[1])
    change(server, feed, "PATCH", above[2], {"summary": None})
    wait(phone, lambda d: changes_told(d) == 3)
    wait(phone, lambda d: above[1] not in ids(d))
    assert looked_at(phone) == anchor
    assert abs(on_screen(phone, anchor) - where) <= 1, (on_screen(phone, anchor), where)

    # The row itself changes: it is drawn again in the same place.
    change(server, feed, "PATCH", anchor, {"title": "Edited under the reader's eyes"})
    wait(phone, lambda d: changes_told(d) == 4)
    assert abs(on_screen(phone, anchor) - where) <= 1
    assert_no_console_errors(phone)


def test_the_badge_no_longer_counts_a_removed_item(server, phone):
    feed = seeded_feed(server)
    open_feed(phone, server, feed)
    scroll_to(phone, 250)
    status, reply = request_json(server, "POST", f"/api/feeds/{feed}/items",
                                 {"items": [{"id": "new-1", "title": "New one"}, {"id": "new-2", "title": "New two"}]})
    assert status == 201, reply
    wait(phone, lambda d: badge_text(d) == "2 new items")
    change(server, feed, "DELETE", "new-2")
    wait(phone, lambda d: badge_text(d) == "1 new item")
    change(server, feed, "DELETE", "new-1")
    wait(phone, lambda d: badge_text(d) is None)
    assert phone.execute_script("return document.getElementById('list').dataset.newsCount") == "0"
    # Nothing to bring: the refresh adds nothing, and no removed item appears.
    phone.execute_script("document.getElementById('list').refresh()")
    wait(phone, lambda d: refreshes(d) == 1)
    assert not {"new-1", "new-2"} & set(ids(phone))
    assert_no_console_errors(phone)
