"""The booking of a URL fetched by hand (``pipeline.one_url.booking``), on fake time: the keys
a crawl's site lane books, the spacing of one site's requests, the store's floors raised
first, and the operator's controls obeyed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from courtier.config import Config, load
from courtier.frontier.controls import SiteControl
from courtier.pipeline.one_url.booking import Clocks, StoreView
from courtier.pipeline.store_lock import running_crawl
from courtier.politeness.limiter import MemoryLimiter
from courtier.url import parse_url


class FakeTime:
    def __init__(self) -> None:
        self.now = time.time()
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _clocks(view: StoreView | None = None, config: Config | None = None) -> tuple[Clocks, FakeTime]:
    fake = FakeTime()
    limiter = MemoryLimiter(fake.clock)
    return Clocks(config or load(None, []), limiter, view, sleep=fake.sleep), fake


ADDRESSES = ("192.0.2.7",)


async def test_a_site_is_booked_on_its_key_and_its_address_sets_origin() -> None:
    clocks, _fake = _clocks()
    booked = await clocks.book(parse_url("http://shop.test/item/1"), ADDRESSES, target="/item/1")
    assert booked.keys == ("site:shop.test", "origin:addr=192.0.2.7")
    assert booked.cost == 2 and booked.waited == 0


async def test_the_store_places_the_site_and_a_www_twin_books_on_its_owner() -> None:
    view = StoreView(seed=frozenset({"shop.test"}), origins={"www.shop.test": "pin:shops"})
    clocks, _fake = _clocks(view)
    url = parse_url("http://www.shop.test/")
    booked = await clocks.book(url, ADDRESSES, target="/", scope=frozenset({"shop.test"}))
    assert booked.keys == ("site:shop.test", "origin:pin:shops")
    assert booked.cost == 4  # the home page is an index


async def test_requests_of_one_site_are_a_site_interval_apart() -> None:
    clocks, _fake = _clocks()
    url = parse_url("http://shop.test/robots.txt")
    await clocks.book(url, ADDRESSES, target="/robots.txt")
    second = await clocks.book(url, ADDRESSES, target="/item/2", crawl_delay=3.0)
    # The page after robots.txt: the site's interval, widened by its Crawl-delay.
    assert second.waited == pytest.approx(3.0 + 0.02, abs=0.01)


async def test_the_floors_a_store_keeps_are_raised_before_the_first_booking() -> None:
    now = time.time()
    view = StoreView(floors={"site:shop.test": now + 30.0})
    clocks, fake = _clocks(view)
    fake.now = now
    booked = await clocks.book(parse_url("http://shop.test/"), ADDRESSES, target="/")
    assert booked.waited == pytest.approx(30.0, abs=0.01)  # a Retry-After a crawl saved


def test_the_operators_controls_hold_a_site() -> None:
    now = time.time()
    view = StoreView(
        controls={
            "paused.test": SiteControl("paused.test", paused=True, paused_until=now + 60),
            "over.test": SiteControl("over.test", paused=True, paused_until=now - 1),
            "gone.test": SiteControl("gone.test", opted_out=True),
        },
        opted_out=frozenset({"left.test"}),
    )
    clocks, _fake = _clocks(view)
    assert "paused by the operator" in (clocks.held("paused.test", now) or "")
    assert clocks.held("over.test", now) is None
    assert "opted out" in (clocks.held("gone.test", now) or "")
    assert "opted out" in (clocks.held("left.test", now) or "")
    assert clocks.held("free.test", now) is None


def test_an_operators_rate_for_a_site_sets_its_interval() -> None:
    view = StoreView(controls={"slow.test": SiteControl("slow.test", rate=0.25)})
    clocks, _fake = _clocks(view)
    assert clocks.site_interval("slow.test", 0.0, time.time()) == pytest.approx(4.02)
    assert clocks.site_interval("other.test", 0.0, time.time()) == pytest.approx(1.02)


def test_a_crawl_running_on_a_store_is_told_without_taking_its_lock(tmp_path: Path) -> None:
    store = tmp_path / "frontier.sqlite3"
    lock = tmp_path / "frontier.sqlite3.lock"
    assert running_crawl(store) is None  # no lock file: no crawl ever ran
    record = {"state": "running", "pid": os.getpid(), "host": socket.gethostname()}
    lock.write_text(json.dumps(record))
    assert f"pid {os.getpid()}" in (running_crawl(store) or "")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    lock.write_text(json.dumps({**record, "pid": int(dead.stdout)}))
    assert running_crawl(store) is None  # a crawl that did not stop cleanly holds nothing
    lock.write_text(json.dumps({**record, "state": "stopped"}))
    assert running_crawl(store) is None
