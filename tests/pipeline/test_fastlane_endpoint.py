"""The fastlane over HTTP (``[control] http_port``): a bearer token, URLs of the seed only,
and what it schedules is in the store's fastlane with the action logged for every worker."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import aiohttp
import pytest

from courtier.frontier.base import NewUrl, SiteState, UrlLane
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.pipeline.feed.frontier_io import FrontierIO
from courtier.pipeline.lanes.fastlane_endpoint import FastlaneEndpoint

TOKEN = "a-token-of-twenty-chars"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def endpoint(tmp_path: Path):
    store = SqliteFrontier(tmp_path / "f.sqlite3")
    store.add_sites(["shop.test"], SiteState.SEED, time.time())
    page = "http://shop.test/sale"
    store.write_batch([NewUrl(page, page, "shop.test", 1)], [], [], time.time())
    frontier = FrontierIO(store, queue_per_site=4)
    served = FastlaneEndpoint(frontier, {"shop.test"}, TOKEN)
    port = free_port()
    await served.start("127.0.0.1", port)
    try:
        yield f"http://127.0.0.1:{port}/recrawl", store
    finally:
        await served.close()
        await frontier.close()


async def _post(url: str, body: object, token: str | None = TOKEN) -> tuple[int, dict]:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body, headers=headers) as answer,
    ):
        return answer.status, await answer.json()


async def test_a_recrawl_is_due_now_in_the_fastlane_and_logged_for_the_workers(endpoint) -> None:
    url, store = endpoint
    status, said = await _post(url, {"urls": ["http://shop.test/sale", "http://shop.test/new"]})
    assert (status, said) == (200, {"urls": 2, "scheduled": 2})
    for page in ("http://shop.test/sale", "http://shop.test/new"):
        schedule = store.schedule_of(page)
        assert schedule is not None and schedule.lane is UrlLane.FASTLANE
    (action,) = store.control_actions()
    assert (action.action, action.target, action.command) == (
        "recrawl",
        "shop.test",
        "POST /recrawl",
    )
    assert action.actor.startswith("http 127.0.0.1") and TOKEN not in action.actor


async def test_no_token_a_bad_body_or_a_site_outside_the_seed_schedules_nothing(endpoint) -> None:
    url, store = endpoint
    assert (await _post(url, {"urls": ["http://shop.test/x"]}, token=None))[0] == 401
    assert (await _post(url, {"urls": ["http://shop.test/x"]}, token="wrong" * 5))[0] == 401
    assert (await _post(url, {"pages": []}))[0] == 400
    assert (await _post(url, {"urls": ["http://[bad/"]}))[0] == 400
    status, said = await _post(url, {"urls": ["http://shop.test/x", "http://other.test/"]})
    assert status == 422 and said["sites"] == ["other.test"]
    assert store.control_actions() == [] and store.schedule_of("http://shop.test/x") is None
