"""Items published while a page is open: the "N new items" button (badge), items put on
top as they come while the list rests there (live), and nothing until a refresh (off).

A publish is answered once every open session has its news queued, and a session's events
arrive in order: so what a page was told because of a publish is in before anything the
page asks for afterwards."""

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from harness import (assert_no_console_errors, request_json, dataset, first_titles, free_port, item_count, make_driver,
                     open_page, publish, refreshes, running_server, screenshot, wait)

# The default preset loads more when the end of the list comes this close (points).
PREFETCH_DISTANCE = 300

# Runs before the page's own scripts: keeps what the page is told, and which samples the
# server has taken, so that a test publishes only once the server knows where the list is.
RECORDER = """
    window.told = { news: [], items: [], progress: [], phases: [] };
    for (const name of ['news', 'items', 'progress']) {
        document.addEventListener('ptr-' + name, e => window.told[name].push(e.detail));
    }
    document.addEventListener('ptr-state', e => window.told.phases.push(e.detail.phase));
    window.taken = [];
    const send = window.fetch.bind(window);
    window.fetch = async (url, init) => {
        const reply = await send(url, init);
        if (reply.ok && String(url).endsWith('/samples')) window.taken.push(JSON.parse(init.body));
        return reply;
    };
"""


def open_news_page(driver, base, mode=None):
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER})
    open_page(driver, base, f"?news={mode}" if mode else "")
    settle(driver)


def told(driver, name):
    return driver.execute_script(f"return window.told.{name}")


def scroll_to(driver, top):
    driver.execute_script("document.getElementById('list').scroller.scrollTop = arguments[0]", top)
    settle(driver)


def settle(driver):
    """Waits until the server has taken the list's position as it is now, with no action
    running and the end of the list too far away for another page to load by itself."""
    def settled(d):
        return d.execute_script("""
            const list = document.getElementById('list');
            const sample = window.taken.at(-1);
            return list.dataset.phase === 'idle' && sample !== undefined
                && sample.y === list.scroller.scrollTop
                && sample.contentHeight - sample.viewportHeight - sample.y > arguments[0];
        """, PREFETCH_DISTANCE)
    wait(driver, settled)


def badge(driver):
    return driver.find_element(By.CSS_SELECTOR, "pull-to-refresh .ptr-news-button")


def badge_text(driver):
    """What the button reads, or None while it is hidden."""
    return driver.execute_script("""
        const button = document.querySelector('pull-to-refresh .ptr-news-button');
        return button.hidden ? null : button.textContent.trim();
    """)


def scroll_top(driver):
    return driver.execute_script("return document.getElementById('list').scroller.scrollTop")


def titles(driver):
    return driver.execute_script("return [...document.querySelectorAll('.feed .item h2')].map(e => e.textContent)")


def animations_done(driver, selector):
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].every(e => e.getAnimations().length === 0)", selector)


def assert_news_told(driver, count, titles_published):
    news = told(driver, "news")[-1]
    assert news["count"] == count
    assert news["newest"]["title"] in titles_published
    assert {"id", "published"} <= set(news["newest"])
    assert isinstance(news["head"], int)
    assert dataset(driver, "newsCount") == str(count)


def assert_brought_once_on_top(driver, published, before):
    """The new items, and only they, above what the page showed; none of them twice."""
    shown = titles(driver)
    assert set(shown[:len(published)]) == set(published)
    assert shown[len(published):len(published) + len(before)] == before
    for title in published:
        assert shown.count(title) == 1


def test_the_badge_offers_the_new_items_and_its_click_brings_them_on_top(server, phone):
    open_news_page(phone, server)
    scroll_to(phone, 250)
    before = titles(phone)
    published = ["Badge news one", "Badge news two"]
    publish(server, *published)

    wait(phone, lambda d: badge_text(d) == "2 new items")
    button = badge(phone)
    assert button.tag_name == "button"
    assert phone.execute_script("return arguments[0].parentElement.closest('[aria-live]').getAttribute('aria-live')",
                                button) == "polite"
    assert_news_told(phone, 2, published)
    assert titles(phone) == before, "nothing comes in before the reader asks"
    # It rides at the top of the list while the reader is further down.
    list_top, button_top = phone.execute_script("""
        return [document.getElementById('list').getBoundingClientRect().top, arguments[0].getBoundingClientRect().top];
    """, button)
    assert 0 <= button_top - list_top < 40
    wait(phone, lambda d: animations_done(d, "pull-to-refresh .ptr-news-button"))
    screenshot(phone, "news-badge.png")
    phone.execute_script("arguments[0].focus()", button)
    assert phone.switch_to.active_element == button, "the badge takes the keyboard's focus"

    button.click()
    wait(phone, lambda d: scroll_top(d) == 0)
    wait(phone, lambda d: refreshes(d) == 1)
    assert_brought_once_on_top(phone, published, before)
    assert badge_text(phone) is None
    assert dataset(phone, "newsCount") == "0"
    assert phone.execute_script("return document.activeElement.classList.contains('ptr-scroller')"), \
        "the focus goes on from the list once the button is gone"

    # Nothing is left to bring: a further refresh adds nothing.
    count = item_count(phone)
    phone.execute_script("document.getElementById('list').refresh()")
    wait(phone, lambda d: refreshes(d) == 2)
    assert phone.execute_script("return window.done.at(-1).added") == 0
    assert item_count(phone) == count
    assert_brought_once_on_top(phone, published, before)
    assert badge_text(phone) is None
    assert_no_console_errors(phone)


def test_the_badge_is_reached_with_tab_and_pressed_with_enter(server, phone):
    open_news_page(phone, server)
    scroll_to(phone, 250)
    before = titles(phone)
    published = ["Keyboard news one", "Keyboard news two"]
    publish(server, *published)
    wait(phone, lambda d: badge_text(d) == "2 new items")

    # The header's last control, then the next stop is the badge.
    phone.execute_script("document.getElementById('refresh').focus()")
    ActionChains(phone).send_keys(Keys.TAB).perform()
    assert phone.switch_to.active_element == badge(phone)
    ActionChains(phone).send_keys(Keys.ENTER).perform()

    wait(phone, lambda d: scroll_top(d) == 0)
    wait(phone, lambda d: refreshes(d) == 1)
    assert_brought_once_on_top(phone, published, before)
    assert badge_text(phone) is None
    assert dataset(phone, "newsCount") == "0"
    assert_no_console_errors(phone)


def test_past_ninety_nine_the_badge_reads_99_plus(server, phone):
    open_news_page(phone, server)
    publish(server, "One new item")
    wait(phone, lambda d: badge_text(d) == "1 new item")
    publish(server, *[f"Flood {index}" for index in range(100)])
    wait(phone, lambda d: badge_text(d) == "99+ new items")
    assert dataset(phone, "newsCount") == "101"


def test_a_live_list_at_rest_takes_new_items_at_once_and_elsewhere_shows_the_badge(server, phone):
    open_news_page(phone, server, "live")
    before = titles(phone)
    # From here on, no action may run.
    phone.execute_script("window.told.progress = []; window.told.phases = []")

    publish(server, "Live at the top")
    wait(phone, lambda d: first_titles(d, 1) == ["Live at the top"])
    assert titles(phone)[1:] == before
    items = told(phone, "items")[-1]
    assert items["op"] == "prepend" and items["actionId"] is None
    assert [item["title"] for item in items["items"]] == ["Live at the top"]
    assert told(phone, "news") == [], "a list at rest at the top gets the items, not the news"
    assert told(phone, "progress") == [] and "refreshing" not in told(phone, "phases")
    assert refreshes(phone) == 0
    assert badge_text(phone) is None
    animation = phone.execute_script("return getComputedStyle(document.querySelector('.feed .item')).animationName")
    assert "slide-in" in animation

    # Further down, the reader is not pushed around: the badge tells of the item instead.
    scroll_to(phone, 250)
    shown = titles(phone)
    publish(server, "Live while reading")
    wait(phone, lambda d: badge_text(d) == "1 new item")
    assert_news_told(phone, 1, ["Live while reading"])
    assert titles(phone) == shown
    assert scroll_top(phone) == 250

    # Back at the top, the list takes what waited.
    phone.execute_script("document.getElementById('list').scroller.scrollTop = 0")
    wait(phone, lambda d: first_titles(d, 2) == ["Live while reading", "Live at the top"])
    wait(phone, lambda d: badge_text(d) is None)
    assert titles(phone)[1:] == shown
    assert told(phone, "items")[-1]["actionId"] is None
    assert told(phone, "progress") == [] and "refreshing" not in told(phone, "phases")
    assert refreshes(phone) == 0
    assert dataset(phone, "newsCount") == "0"
    assert_no_console_errors(phone)


def test_with_news_off_nothing_comes_until_a_refresh(server, phone):
    open_news_page(phone, server, "off")
    before = titles(phone)
    publish(server, "Quiet news")
    # Anything the publish caused is in before the refresh's own events.
    phone.execute_script("document.getElementById('list').refresh()")
    wait(phone, lambda d: refreshes(d) == 1)
    assert told(phone, "news") == []
    prepends = [event for event in told(phone, "items") if event["op"] == "prepend"]
    assert len(prepends) == 1 and prepends[0]["actionId"] is not None
    assert titles(phone) == ["Quiet news", *before]
    assert badge_text(phone) is None
    assert dataset(phone, "newsCount") == "0"
    assert_no_console_errors(phone)


def test_items_put_on_top_keep_the_reader_further_down_in_place(server, phone):
    open_news_page(phone, server)
    scroll_to(phone, 600)
    place = """
        const scroller = document.getElementById('list').scroller;
        const top = scroller.getBoundingClientRect().top;
        const item = [...document.querySelectorAll('.feed .item')].find(e => e.getBoundingClientRect().bottom > top);
        return [item.dataset.id, item.getBoundingClientRect().top - top];
    """
    reading, offset = phone.execute_script(place)
    publish(server, "Above the reader one", "Above the reader two")
    wait(phone, lambda d: badge_text(d) == "2 new items")
    phone.find_element(By.ID, "refresh").click()
    wait(phone, lambda d: refreshes(d) == 1)
    assert set(first_titles(phone, 2)) == {"Above the reader one", "Above the reader two"}
    still_reading, still_offset = phone.execute_script(place)
    assert still_reading == reading
    assert abs(still_offset - offset) < 1


@pytest.mark.parametrize("mode", ["badge", "live", "off"])
def test_the_page_asks_for_the_mode_in_its_address(server, phone, mode):
    open_page(phone, server, f"?news={mode}")
    session = dataset(phone, "session")
    status, body = request_json(server, "GET", f"/api/sessions/{session}")
    assert status == 200 and body["config"]["news"] == mode
    assert phone.find_element(By.ID, "news-mode").get_attribute("value") == mode


def test_reduced_motion_jumps_to_the_top_and_slides_nothing(server):
    driver = make_driver(390, 844, reduced_motion=True)
    try:
        open_news_page(driver, server)
        scroll_to(driver, 250)
        publish(server, "Still news")
        wait(driver, lambda d: badge_text(d) == "1 new item")
        assert driver.execute_script(
            "return getComputedStyle(document.querySelector('pull-to-refresh .ptr-news-button')).animationName") == "none"
        top = driver.execute_script("""
            document.querySelector('pull-to-refresh .ptr-news-button').click();
            return document.getElementById('list').scroller.scrollTop;
        """)
        assert top == 0, "no smooth scrolling under reduced motion"
        wait(driver, lambda d: first_titles(d, 1) == ["Still news"])
        assert driver.execute_script(
            "return getComputedStyle(document.querySelector('.feed .item')).animationName") == "none"
        assert_no_console_errors(driver)
    finally:
        driver.quit()


@pytest.mark.parametrize("mode", ["live", "badge"])
def test_a_page_whose_server_died_keeps_its_list_and_gets_what_it_missed(tmp_path, mode):
    """The server is killed and comes back (as an instance behind a front is replaced by
    another): the page's session is gone, so it starts one that continues its list. What was
    published meanwhile comes once, on top; nothing it showed is lost or doubled."""
    port = free_port()
    database = str(tmp_path / "feed.sqlite")
    driver = make_driver(390, 844)
    try:
        with running_server(port=port, database=database, kill=True) as base:
            driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER + """
                window.sessions = [];
                document.addEventListener('ptr-session', e => window.sessions.push(e.detail));
                window.sent = [];
                document.addEventListener('ptr-items', e => window.sent.push(...e.detail.items.map(item => item.id)));
            """})
            open_page(driver, base, f"?news={mode}")
            before = titles(driver)
            lost = dataset(driver, "session")
        with running_server(port=port, database=database, kill=True) as base:
            published = ["Published while away", "Published while away too"]
            publish(base, *published)
            wait(driver, lambda d: dataset(d, "session") not in (None, lost), timeout=30)
            resumed = driver.execute_script("return window.sessions.at(-1)")
            assert resumed["resumed"] is True, "the new session continues the list"
            if mode == "badge":
                wait(driver, lambda d: badge_text(d) == "2 new items")
                assert titles(driver) == before, "nothing lost, nothing moved before the reader asks"
                badge(driver).click()
                wait(driver, lambda d: refreshes(d) == 1)
            wait(driver, lambda d: len(titles(d)) == len(before) + 2)
            assert_brought_once_on_top(driver, published, before)
            assert len(set(titles(driver))) == len(titles(driver)), "no item twice on the page"
            sent = driver.execute_script("return window.sent")
            assert len(sent) == len(set(sent)) == len(titles(driver)), "and none sent twice"
    finally:
        driver.quit()
