"""Two lists on two feeds in one page: each shows its own feed's items, hears only of its
own feed's news, and a list moved to another feed starts over rather than continuing.

A publish is answered once every open session of its feed has its news queued: what a list
was told because of a publish is in before the test looks."""

import pytest
from selenium.webdriver.common.by import By

from harness import assert_no_console_errors, request_json, running_server, screenshot, wait

TEAM = "team.eng"


@pytest.fixture(scope="module")
def server():
    with running_server() as base:
        yield base


def publish(base, feed, *titles):
    status, reply = request_json(base, "POST", f"/api/feeds/{feed}/items", {"items": [{"title": title} for title in titles]})
    assert status == 201, reply
    return reply


# A second element on the page, on `main`, whose items the test keeps (the demo list renders
# only its own): titles in order, and every `news` it is told.
SECOND = """
    const second = document.createElement('pull-to-refresh');
    second.id = 'second';
    second.setAttribute('feed', 'main');
    second.style.height = '200px';
    window.second = { titles: [], news: [] };
    second.addEventListener('ptr-items', (e) => {
        const titles = e.detail.items.map((item) => item.title);
        if (e.detail.op === 'prepend') window.second.titles.unshift(...titles);
        else window.second.titles.push(...titles);
    });
    second.addEventListener('ptr-news', (e) => window.second.news.push(e.detail.count));
    document.body.append(second);
"""


def titles(driver):
    return driver.execute_script("return [...document.querySelectorAll('#list .feed .item h2')].map((e) => e.textContent)")


def news_of(driver, element):
    return driver.execute_script(f"return document.getElementById('{element}').dataset.newsCount")


def test_two_lists_on_two_feeds_show_and_hear_only_their_own(server, phone):
    publish(server, TEAM, "eng one", "eng two")
    phone.get(server + f"/?feed={TEAM}")
    wait(phone, lambda d: len(titles(d)) == 2)
    assert sorted(titles(phone)) == ["eng one", "eng two"], "the demo list reads the feed in its address, nothing of main"
    assert phone.find_element(By.CSS_SELECTOR, ".feed-name").text == TEAM
    assert phone.find_element(By.CSS_SELECTOR, "#list .feed").get_attribute("aria-label") == f"Latest items in {TEAM}"

    phone.execute_script(SECOND)
    wait(phone, lambda d: len(d.execute_script("return window.second.titles")) >= 10)
    second = phone.execute_script("return window.second.titles")
    assert not any(title.startswith("eng ") for title in second), "the list on main shows nothing of team.eng"

    publish(server, "main", "main news")
    wait(phone, lambda d: news_of(d, "second") == "1")
    assert news_of(phone, "list") == "0", "a publish to main is not news to a list on team.eng"

    publish(server, TEAM, "eng three")
    wait(phone, lambda d: news_of(d, "list") == "1")
    assert news_of(phone, "second") == "1", "nor is one to team.eng news to the list on main"
    assert phone.execute_script("return window.second.news") == [1]
    screenshot(phone, "feeds-two-lists.png")

    # Another feed is another list: nothing of team.eng is continued on user:42.
    phone.execute_script("document.getElementById('list').setAttribute('feed', 'user:42')")
    wait(phone, lambda d: d.find_element(By.CSS_SELECTOR, ".feed-name").text == "user:42")
    wait(phone, lambda d: titles(d) == [] and news_of(d, "list") == "0")
    publish(server, "user:42", "for you")
    phone.find_element(By.ID, "refresh").click()
    wait(phone, lambda d: titles(d) == ["for you"])
    assert_no_console_errors(phone)


def test_a_list_on_a_feed_with_a_bad_name_says_so(server, phone):
    phone.get(server + "/?feed=no%20spaces")
    wait(phone, lambda d: d.execute_script("return !document.querySelector('#list .ptr-error').hidden"))
    text = phone.find_element(By.CSS_SELECTOR, "#list .ptr-error-text").text
    assert "feed" in text.lower(), text
