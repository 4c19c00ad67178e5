"""`courtier site`: an operator's pause, rate, drop and opt-out, written to the store with the
action that a running crawl reads; bad input writes nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cli_helpers import Run, json_lines

from courtier.cli.actions import command_line
from courtier.cli.site import parse_until
from courtier.cli.store_input import UsageError
from courtier.frontier.base import SiteState
from courtier.frontier.sqlite_store import SqliteFrontier


def _store(path: Path) -> tuple[dict[str, object], dict[str, str], list[str]]:
    store = SqliteFrontier(path)
    try:
        controls = {s: c for s, c in store.site_controls().items()}
        actions = [f"{a.action} {a.target}" for a in store.control_actions()]
        return controls, store.site_states(), actions  # type: ignore[return-value]
    finally:
        store.close()


def test_pause_limit_and_resume_are_written_with_their_actions(store_path: Path, run: Run) -> None:
    before = time.time()
    code, out, _ = run("site", "pause", "ALPHA.test", "--until", "30m", "--store", store_path)
    assert code == 0 and "paused until" in out
    assert run("site", "limit", "bravo.test", "--rate", "0.2", "--store", store_path)[0] == 0
    controls, _states, actions = _store(store_path)
    alpha = controls["alpha.test"]
    assert alpha.paused and 1790 <= alpha.paused_until - before <= 1810  # type: ignore[attr-defined]
    assert controls["bravo.test"].interval(time.time()) == 5.0  # type: ignore[attr-defined]
    assert actions == ["site pause alpha.test", "site limit bravo.test"]
    assert run("site", "resume", "alpha.test", "--store", store_path)[0] == 0
    assert run("site", "limit", "bravo.test", "--clear", "--store", store_path)[0] == 0
    controls, _states, actions = _store(store_path)
    assert controls["alpha.test"].held_until(time.time()) == 0.0  # type: ignore[attr-defined]
    assert controls["bravo.test"].interval(time.time()) is None  # type: ignore[attr-defined]
    assert len(actions) == 4


def test_an_opt_out_is_for_good(store_path: Path, run: Run) -> None:
    code, out, _ = run("site", "drop", "charlie.test", "--opt-out", "--store", store_path, "--json")
    assert code == 0
    assert json_lines(out) == [
        {"site": "charlie.test", "state": "opted-out", "control": "opted out"}
    ]
    # Nothing brings it back: seed add refuses it, a pause cannot touch it.
    assert run("seed", "add", "charlie.test", "--store", store_path)[0] == 1
    assert run("site", "pause", "charlie.test", "--store", store_path)[0] == 1
    _controls, states, actions = _store(store_path)
    assert states["charlie.test"] == SiteState.OPTED_OUT
    assert actions == ["site drop charlie.test"]


def test_drop_and_seed_remove_take_sites_out_of_the_seed(store_path: Path, run: Run) -> None:
    assert run("site", "drop", "alpha.test", "--store", store_path)[0] == 0
    assert run("seed", "remove", "bravo.test", "--store", store_path)[0] == 0
    _controls, states, actions = _store(store_path)
    assert states["alpha.test"] == states["bravo.test"] == SiteState.HORIZON
    assert actions == ["site drop alpha.test", "site drop bravo.test"]
    # Seeding them again brings them back (only an opt-out is for good).
    assert run("seed", "add", "alpha.test", "--store", store_path)[0] == 0
    _controls, states, actions = _store(store_path)
    assert states["alpha.test"] == SiteState.REQUESTED and actions[-1] == "seed add alpha.test"


def test_bad_input_writes_nothing(store_path: Path, run: Run) -> None:
    code, _out, err = run("site", "pause", "alpha.test", "--until", "3pm", "--store", store_path)
    assert code == 2 and "--until" in err
    code, _out, err = run("site", "limit", "alpha.test", "--rate", "0", "--store", store_path)
    assert code == 2 and "above 0" in err
    code, _out, err = run("site", "pause", "http://", "--store", store_path)
    assert code == 2
    assert _store(store_path)[2] == []


def test_until_reads_durations_and_utc_times() -> None:
    now = 1_800_000_000.0
    assert parse_until("90s", now) == now + 90
    assert parse_until("2h", now) == now + 7200
    assert parse_until("2027-01-16T00:00:00Z", now) == now + 86400 - 28800
    with pytest.raises(UsageError, match="has passed"):
        parse_until("2020-01-01T00:00:00Z", now)


def test_the_logged_command_line_never_carries_the_stores_address() -> None:
    line = command_line(["site", "pause", "a.test", "--store", "postgresql://u:secret@db/x"])
    assert "secret" not in line and line.endswith("--store ...")
    assert "secret" not in command_line(["site", "drop", "--store=postgresql://u:secret@db/"])


def test_render_modes_and_rules_are_written_and_cleared(store_path: Path, run: Run) -> None:
    code, out, _ = run("site", "render", "alpha.test", "--mode", "always", "--store", store_path)
    assert code == 0 and "render always" in out
    args = ("site", "render", "alpha.test", "--mode", "never", "--rule", "/blog/")
    assert run(*args, "--store", store_path)[0] == 0
    controls, _states, actions = _store(store_path)
    alpha = controls["alpha.test"]
    assert alpha.render == "always" and alpha.render_rules == ("/blog/ => never",)  # type: ignore[attr-defined]
    assert actions == ["site render alpha.test"] * 2
    args = ("site", "render", "alpha.test", "--clear", "--rule", "/blog/")
    assert run(*args, "--store", store_path)[0] == 0
    alpha = _store(store_path)[0]["alpha.test"]
    assert alpha.render == "always" and alpha.render_rules == ()  # type: ignore[attr-defined]
    assert run("site", "render", "alpha.test", "--clear", "--store", store_path)[0] == 0
    assert _store(store_path)[0]["alpha.test"].render is None  # type: ignore[attr-defined]
    # Bad input: exit 2, nothing written.
    for bad in (("--mode", "sometimes"), ("--mode", "always", "--rule", "(")):
        code, _out, err = run("site", "render", "alpha.test", *bad, "--store", store_path)
        assert code == 2, err
    assert len(_store(store_path)[2]) == 4
