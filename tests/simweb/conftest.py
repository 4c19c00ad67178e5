"""Fixtures for the simulated-web tests: a small world, a running SimWeb, a loopback client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from simweb_helpers import SMALL, Client

from courtier.simweb import SimWeb, World, build_world


@pytest.fixture(scope="session")
def world() -> World:
    return build_world(SMALL)


@pytest.fixture
async def web(world: World, tmp_path: Path) -> AsyncIterator[SimWeb]:
    async with SimWeb(world, log_path=tmp_path / "requests.jsonl") as running:
        yield running


@pytest.fixture
async def client(web: SimWeb) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(web, session)
