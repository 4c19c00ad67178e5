"""The audit's extra seeds: promoted hosts count as seed for every check, nothing else does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simweb_helpers import request_record as _record

from courtier.cli import main
from courtier.simweb import World
from courtier.simweb.audit import audit_records
from courtier.simweb.log import RequestLog, RequestRecord

T0 = 1_800_000_000.0


def _polite(host: str) -> list[RequestRecord]:
    return [_record(host, path, T0 + 1.5 * i) for i, path in enumerate(["/robots.txt", "/"])]


def test_a_promoted_host_is_outside_the_seed_until_named_an_extra_seed(world: World) -> None:
    host = world.popular_horizon_host
    plain = audit_records(_polite(host), world)
    assert not plain.criterion("outside-seed").ok and plain.outside_seed == {"horizon": 2}
    promoted = audit_records(_polite(host), world, extra_seeds=[host])
    assert promoted.ok and promoted.outside_seed == {}
    assert [s.host for s in promoted.sites] == [host]


def test_any_spelling_of_an_extra_seed_counts(world: World) -> None:
    host = world.popular_horizon_host
    report = audit_records(_polite(host), world, extra_seeds=[f" {host.upper()}.:8080 "])
    assert report.ok


def test_an_extra_seed_is_held_to_the_gap_and_duplicate_checks(world: World) -> None:
    host = world.popular_horizon_host
    records = [_record(host, "/", T0), _record(host, "/", T0 + 0.2)]
    report = audit_records(records, world, extra_seeds=[host])
    assert not report.criterion("site-gap").ok
    assert report.duplicate_fetches == 1


def test_other_horizon_and_farm_hosts_stay_outside(world: World) -> None:
    other = next(h for h in world.horizon_hosts if h != world.popular_horizon_host)
    records = _polite(world.popular_horizon_host) + _polite(other) + _polite(world.farm_hosts[0])
    report = audit_records(records, world, extra_seeds=[world.popular_horizon_host])
    assert not report.ok
    assert report.outside_seed == {"farm": 2, "horizon": 2}


def test_an_extra_seed_the_world_does_not_know_is_an_error(world: World) -> None:
    with pytest.raises(ValueError, match="not a host of this world"):
        audit_records([], world, extra_seeds=["nowhere.test"])


def _audit_files(tmp_path: Path, world: World, host: str) -> tuple[Path, Path]:
    log_path = tmp_path / "requests.jsonl"
    log = RequestLog(log_path)
    for record in _polite(host):
        log.write(record)
    log.close()
    info = tmp_path / "info.json"
    info.write_text(json.dumps({"world": world.params.to_json(), "log": str(log_path)}))
    return info, log_path


def test_the_audit_command_reads_extra_seeds_from_a_file(
    tmp_path: Path, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    host = world.popular_horizon_host
    info, _ = _audit_files(tmp_path, world, host)
    seeds = tmp_path / "promoted.txt"
    # The shape `courtier seed list` prints: site, a tab, its state.
    seeds.write_text(f"# promoted by courtier rank\n\n{host}\tseed  # the popular one\n")
    assert main(["simweb", "audit", "--info", str(info), "--json", "-"]) == 1
    capsys.readouterr()
    code = main(
        ["simweb", "audit", "--info", str(info), "--extra-seeds", str(seeds), "--json", "-"]
    )
    report = json.loads(capsys.readouterr().out.splitlines()[0])
    assert code == 0 and report["ok"] and report["outside_seed"] == {}


def test_the_audit_command_refuses_an_unknown_extra_seed(
    tmp_path: Path, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    info, _ = _audit_files(tmp_path, world, world.popular_horizon_host)
    seeds = tmp_path / "promoted.txt"
    seeds.write_text("nowhere.test\n")
    assert main(["simweb", "audit", "--info", str(info), "--extra-seeds", str(seeds)]) == 2
    assert "not a host of this world" in capsys.readouterr().err
    missing = tmp_path / "missing.txt"
    assert main(["simweb", "audit", "--info", str(info), "--extra-seeds", str(missing)]) == 2
