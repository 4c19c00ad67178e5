"""The event loop a crawl runs on: uvloop by default where it is installed, the standard loop
where it is not. Both branches are tested on every machine: uvloop is made importable (a
stand-in module) or missing (``sys.modules["uvloop"] = None``) for the test, so what is
installed here decides nothing."""

from __future__ import annotations

import asyncio
import logging
import sys
import types
from collections.abc import Iterator

import pytest

from courtier.cli import simweb as simweb_cli
from courtier.config import ConfigError, load
from courtier.runtime import event_loop


async def _loop_type() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


class StandInLoop(asyncio.SelectorEventLoop):
    """What the stand-in uvloop makes: a standard loop of a type of its own."""


class StandInPolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return StandInLoop()


@pytest.fixture
def uvloop_installed(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    stand_in = types.ModuleType("uvloop")
    stand_in.new_event_loop = StandInLoop  # type: ignore[attr-defined]
    stand_in.EventLoopPolicy = StandInPolicy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "uvloop", stand_in)
    return stand_in


@pytest.fixture
def uvloop_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # ``import uvloop`` raises ImportError


@pytest.fixture
def policy_restored() -> Iterator[asyncio.AbstractEventLoopPolicy]:
    policy = asyncio.get_event_loop_policy()
    yield policy
    asyncio.set_event_loop_policy(policy)


def test_a_crawl_asks_for_uvloop_by_default() -> None:
    assert load(None, []).crawl.event_loop == "uvloop"


def test_with_uvloop_installed_a_crawl_runs_on_it(uvloop_installed: types.ModuleType) -> None:
    assert event_loop.loop_factory("uvloop") is uvloop_installed.new_event_loop
    assert event_loop.run(_loop_type()) is StandInLoop


def test_without_uvloop_a_crawl_runs_on_the_standard_loop_and_says_so(
    uvloop_missing: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="courtier.runtime.event_loop"):
        assert event_loop.loop_factory("uvloop") is None
    assert "uvloop is not installed" in caplog.text
    loop_type = event_loop.run(_loop_type())
    assert loop_type is not StandInLoop and loop_type.__module__.startswith("asyncio")


def test_the_simulated_web_serves_on_uvloop_where_it_is_installed(
    uvloop_installed: types.ModuleType, policy_restored: asyncio.AbstractEventLoopPolicy
) -> None:
    simweb_cli._use_uvloop()
    assert isinstance(asyncio.get_event_loop_policy(), StandInPolicy)


def test_the_simulated_web_serves_on_the_standard_loop_without_uvloop(
    uvloop_missing: None, policy_restored: asyncio.AbstractEventLoopPolicy
) -> None:
    simweb_cli._use_uvloop()
    assert asyncio.get_event_loop_policy() is policy_restored


def test_the_standard_loop_can_be_chosen(uvloop_installed: types.ModuleType) -> None:
    assert event_loop.loop_factory("asyncio") is None
    loop_type = event_loop.run(_loop_type(), "asyncio")
    assert loop_type is not StandInLoop and loop_type.__module__.startswith("asyncio")


def test_an_unknown_loop_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="tornado"):
        event_loop.loop_factory("tornado")
    with pytest.raises(ConfigError, match="event_loop"):
        load(None, ["crawl.event_loop=tornado"])
