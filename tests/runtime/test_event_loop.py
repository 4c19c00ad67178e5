import asyncio

import pytest

from courtier.config import ConfigError, load
from courtier.runtime import event_loop


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_a_crawl_runs_on_uvloop_by_default() -> None:
    pytest.importorskip("uvloop")
    assert load(None, []).crawl.event_loop == "uvloop"
    assert event_loop.run(_loop_module()).startswith("uvloop")


def test_the_standard_loop_can_be_chosen() -> None:
    assert event_loop.loop_factory("asyncio") is None
    assert event_loop.run(_loop_module(), "asyncio").startswith("asyncio")


def test_an_unknown_loop_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="tornado"):
        event_loop.loop_factory("tornado")
    with pytest.raises(ConfigError, match="event_loop"):
        load(None, ["crawl.event_loop=tornado"])
