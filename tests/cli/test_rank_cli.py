"""`courtier rank`: ranking output, promotion into the same store, and what never rises."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from cli_helpers import ADDRESS, BUCKET, CDN, FARM, ONCE, POPULAR, RUNNER_UP, Run, json_lines

from courtier.frontier.base import UrlStatus
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.graph.cycle import is_media_host


def _states(path: Path) -> dict[str, str]:
    store = SqliteFrontier(path)
    try:
        return store.site_states()
    finally:
        store.close()


def test_promote_one_moves_the_best_horizon_host_into_the_seed_with_its_root_queued(
    store_path: Path, run: Run, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="courtier.graph")
    code, out, _ = run("rank", "--store", store_path, "--promote", "1", "--json")
    assert code == 0
    promoted = [line for line in json_lines(out) if line["type"] == "promoted"]
    assert [line["host"] for line in promoted] == [POPULAR]
    assert promoted[0]["seed_sources"] == 3 and promoted[0]["dry_run"] is False
    states = _states(store_path)
    assert states[POPULAR] == "seed" and states[RUNNER_UP] == "horizon"
    store = SqliteFrontier(store_path)
    try:
        root = store.schedule_of(f"http://{POPULAR}/")
    finally:
        store.close()
    assert root is not None and root.depth == 0 and root.status is UrlStatus.QUEUED
    (message,) = [r.getMessage() for r in caplog.records if r.name == "courtier.graph"]
    assert POPULAR in message and f"score {promoted[0]['score']:.6g}" in message


def test_json_output_is_one_typed_object_per_line_ending_with_the_summary(
    store_path: Path, run: Run
) -> None:
    code, out, _ = run("rank", "--store", store_path, "--top", "3", "--json")
    lines = json_lines(out)
    assert code == 0
    assert [line["type"] for line in lines] == ["host", "host", "host", "summary"]
    assert [line["position"] for line in lines[:3]] == [1, 2, 3]
    for line in lines[:3]:
        assert set(line) == {"type", "position", "host", "state", "score"}
        assert isinstance(line["score"], float)
    scores = [float(str(line["score"])) for line in lines[:3]]
    assert scores == sorted(scores, reverse=True)
    summary = lines[-1]
    assert summary["promoted"] == [] and summary["promote"] == 0 and summary["converged"] is True
    assert summary["hosts"] == len(_states(store_path))


def test_once_linked_hosts_farms_media_and_addresses_are_never_promoted(
    store_path: Path, run: Run
) -> None:
    code, out, _ = run("rank", "--store", store_path, "--promote", "50", "--json")
    lines = json_lines(out)
    promoted = {line["host"] for line in lines if line["type"] == "promoted"}
    assert code == 0
    assert promoted == {POPULAR, RUNNER_UP}
    held = {line["host"]: line["reason"] for line in lines if line["type"] == "held_back"}
    assert "linked from 1 seed host" in str(held[ONCE])
    states = _states(store_path)
    for host in (ONCE, CDN, BUCKET, ADDRESS, *FARM):
        assert states[host] == "horizon", host


def test_a_link_farm_scores_zero_however_densely_it_links_itself(
    store_path: Path, run: Run
) -> None:
    _, out, _ = run("rank", "--store", store_path, "--top", "100", "--json")
    scores = {line["host"]: line["score"] for line in json_lines(out) if line["type"] == "host"}
    assert all(scores[host] == 0.0 for host in FARM)


def test_media_hosts_and_addresses_are_ranked_but_shown_as_not_candidates(
    store_path: Path, run: Run
) -> None:
    _, out, _ = run("rank", "--store", store_path, "--top", "100", "--json")
    states = {line["host"]: line["state"] for line in json_lines(out) if line["type"] == "host"}
    assert states[CDN] == "media" and states[BUCKET] == "media" and states[ADDRESS] == "address"


def test_dry_run_reports_the_promotion_and_changes_nothing(store_path: Path, run: Run) -> None:
    before = _states(store_path)
    code, out, _ = run("rank", "--store", store_path, "--promote", "1", "--dry-run")
    assert code == 0
    assert f"would promote {POPULAR}" in out
    assert _states(store_path) == before


def test_text_output_names_the_promoted_host_and_its_score(store_path: Path, run: Run) -> None:
    code, out, _ = run("rank", "--store", store_path, "--promote", "1")
    assert code == 0
    assert f"promoted {POPULAR}: score " in out
    assert "held back" not in out.split(f"promoted {POPULAR}")[0]


def test_a_second_cycle_promotes_the_next_host_not_the_same_one(store_path: Path, run: Run) -> None:
    run("rank", "--store", store_path, "--promote", "1")
    _, out, _ = run("rank", "--store", store_path, "--promote", "1", "--json")
    promoted = [line["host"] for line in json_lines(out) if line["type"] == "promoted"]
    assert promoted == [RUNNER_UP]


def test_a_missing_store_is_a_usage_error_and_is_not_created(tmp_path: Path, run: Run) -> None:
    missing = tmp_path / "nope" / "frontier.sqlite3"
    code, out, err = run("rank", "--store", missing)
    assert code == 2 and out == ""
    assert "no store there" in err
    assert not missing.exists()


def test_a_file_that_is_not_a_store_is_a_usage_error(tmp_path: Path, run: Run) -> None:
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not a database" * 100)
    code, _, err = run("rank", "--store", junk)
    assert code == 2 and "courtier rank:" in err


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_bad_promote_count_is_refused_by_the_parser(
    store_path: Path, run: Run, value: str
) -> None:
    code, _, err = run("rank", "--store", store_path, "--promote", value)
    assert code == 2 and "--promote" in err


@pytest.mark.parametrize(
    ("site", "media"),
    [
        ("cdn.simcdn.test", True),
        ("img.simresize.test", True),
        ("media-x.s3.simstore.test", True),
        ("s3.simstore.test", True),
        ("bucket.s3.amazonaws.com", True),
        ("cdn.simcdn.test:8080", True),
        ("www.example.test", False),
        ("cdn-photos.example", False),
    ],
)
def test_media_hosts_are_recognised(site: str, media: bool) -> None:
    assert is_media_host(site) is media
