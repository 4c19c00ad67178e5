"""Project-wide fixtures: a throwaway PostgreSQL cluster (``postgres_dsn``, see tests/pg.py);
and, on pytest-xdist workers, turns for the tests marked ``alone`` (see tests/turns.py)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from pg import postgres_dsn
from turns import Turns, turns_for

__all__ = ["postgres_dsn"]

_TURNS = pytest.StashKey[Turns | None]()


def pytest_configure(config: pytest.Config) -> None:
    # xdist gives each worker a --basetemp of its own inside the run's temporary directory.
    basetemp = config.option.basetemp if hasattr(config, "workerinput") else None
    config.stash[_TURNS] = turns_for(Path(basetemp) if basetemp else None)


def pytest_unconfigure(config: pytest.Config) -> None:
    turns = config.stash.get(_TURNS, None)
    if turns is not None:
        turns.close()


def _alone(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("alone") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On xdist workers, the modules holding ``alone`` tests come first (the rest keep their
    order): handed out first, their exclusive turn begins while the other workers are on
    their first, short tests, instead of waiting for whatever long crawl they are running
    when it comes up. Every worker orders alike, as xdist requires."""
    if config.stash.get(_TURNS, None) is None:
        return
    first = {item.nodeid.split("::")[0] for item in items if _alone(item)}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in first)  # a stable sort


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """Outermost, so that waiting for a turn is not counted against a test's timeout."""
    turns = item.config.stash.get(_TURNS, None)
    if turns is None:
        return (yield)
    with turns.turn(alone=_alone(item), next_alone=_alone(nextitem)):
        return (yield)
