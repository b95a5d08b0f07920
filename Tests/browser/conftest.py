"""Fixtures every browser test module may ask for: a server of its own, and a phone."""

import pytest

from harness import make_driver, running_server


@pytest.fixture(scope="module")
def server():
    """One server per test module; refreshes last long enough to be seen mid-way."""
    with running_server("--min-refresh-ms", "700") as base:
        yield base


@pytest.fixture
def phone():
    driver = make_driver(390, 844)
    yield driver
    driver.quit()
