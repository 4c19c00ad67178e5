"""`courtier simweb serve` in a subprocess (SimWebProcess) and `courtier simweb audit`."""

from __future__ import annotations

import dataclasses
import json
import os
import urllib.request
from pathlib import Path

import dns.resolver
import pytest

from courtier import cli
from courtier.simweb import WorldParams, build_world
from courtier.simweb.log import RequestLog, RequestRecord
from courtier.simweb.process import SimWebError, SimWebProcess
from courtier.simweb.world import CDN_HOST, STORE_HOST

T0 = 1_800_000_000.0


@pytest.fixture(autouse=True)
def only_the_simweb_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests exercise this command alone, whatever state the other commands are in."""
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("simweb",))


def _write_run(tmp_path: Path, records: list[RequestRecord]) -> Path:
    params = WorldParams(seed=4)
    log_path = tmp_path / "log.jsonl"
    log = RequestLog(log_path)
    for record in records:
        log.write(record)
    log.close()
    info = tmp_path / "info.json"
    info.write_text(json.dumps({"world": params.to_json(), "log": str(log_path)}))
    return info


def _request(host: str, target: str, start: float) -> RequestRecord:
    return RequestRecord(
        start,
        start + 0.01,
        "127.1.0.1:80",
        host,
        "GET",
        target,
        200,
        10,
        None,
        None,
        "t",
        False,
        None,
    )


def test_audit_command_prints_tables_writes_json_and_fails_a_rude_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = build_world(WorldParams(seed=4)).seed_hosts[0]
    info = _write_run(tmp_path, [_request(host, "/", T0), _request(host, "/", T0 + 0.2)])
    out = tmp_path / "audit.json"
    assert cli.main(["simweb", "audit", "--info", str(info), "--json", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "Simulated-web audit" in printed and "site-gap" in printed and "FAIL" in printed
    data = json.loads(out.read_text())
    assert data["ok"] is False and data["requests"] == 2


def test_audit_command_passes_a_polite_log_and_can_print_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = build_world(WorldParams(seed=4)).seed_hosts[0]
    info = _write_run(tmp_path, [_request(host, "/robots.txt", T0), _request(host, "/", T0 + 1)])
    assert cli.main(["simweb", "audit", "--info", str(info), "--json", "-"]) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert json.loads(first_line)["ok"] is True


def test_audit_command_shows_media_criteria_and_buckets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = build_world(WorldParams(seed=4))
    bucket, customer = next(iter(world.buckets.items()))
    store = [  # 320 requests in 0.8 s: over the default 50 × (1 + 5) + 1 = 301
        dataclasses.replace(
            _request(STORE_HOST, f"/{bucket}/img/1.jpg", T0 + i / 400), bucket=bucket
        )
        for i in range(320)
    ]
    misses = [
        dataclasses.replace(_request(CDN_HOST, f"/{customer}/img/{n}.jpg", T0 + n / 10), cache=c)
        for n, c in ((1, "MISS"), (2, "MISS"), (3, "MISS"), (4, "MISS"), (5, "HIT"))
    ]
    info = _write_run(tmp_path, [*store, *misses])
    args = ["simweb", "audit", "--info", str(info), "--allow-media", "--json", "-"]
    assert cli.main(args) == 0  # the media criteria are reported, not required
    captured = capsys.readouterr()
    data = json.loads(captured.out.splitlines()[0])
    criteria = {c["name"]: c for c in data["criteria"]}
    assert not criteria["bucket-rate"]["ok"] and not criteria["cdn-misses"]["ok"]
    assert data["buckets"][0]["bucket"] == bucket and data["buckets"][0]["over_limit"]
    assert data["buckets"][0]["max_1s"] == 320 and data["buckets"][0]["limit_1s"] == 301
    assert data["media"]["cache_misses"] == 4 and data["media"]["cache_hits"] == 1
    printed = captured.err  # the tables go to stderr when the JSON takes stdout
    assert "bucket-rate" in printed and "cdn-misses" in printed and "Buckets" in printed
    assert bucket in printed and "cache hits 1, misses 4" in printed


def test_audit_command_reports_a_missing_info_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["simweb", "audit", "--info", str(tmp_path / "none.json")]) == 2
    assert "courtier simweb audit:" in capsys.readouterr().err


def test_serve_refuses_a_world_too_small(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["simweb", "serve", "--sites", "3"]) == 2
    assert "at least" in capsys.readouterr().err


def test_process_serves_dns_and_http_and_flushes_its_log_on_sigterm(tmp_path: Path) -> None:
    with SimWebProcess(tmp_path, WorldParams(seed=4)) as web:
        assert web.allow_net.endswith(".0.0/16") and web.dns.startswith("127.")
        seeds = web.seeds_path.read_text().split()
        assert len(seeds) == len(web.world.seed_hosts)
        host = seeds[0].removeprefix("http://").split("/")[0].split(":")[0]
        resolver = dns.resolver.Resolver(configure=False)
        dns_host, dns_port = web.dns.split(":")
        resolver.nameservers, resolver.port = [dns_host], int(dns_port)
        address = resolver.resolve(host, "A")[0].address
        assert address.startswith(web.allow_net.split(".0.0/")[0] + ".")
        request = urllib.request.Request(
            f"http://{address}:{web.port}/robots.txt", headers={"Host": host}
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert answer.status == 200
    assert web.stop() == 0
    (record,) = [json.loads(line) for line in web.log_path.read_text().splitlines()]
    assert record["host"] == host and record["target"] == "/robots.txt"
    assert cli.main(["simweb", "audit", "--info", str(web.info_path)]) == 0


def test_process_reports_a_server_that_cannot_start(tmp_path: Path) -> None:
    with pytest.raises(SimWebError, match="exited"):
        SimWebProcess(tmp_path, WorldParams(n_standalone=0)).start()


def test_process_runs_ahead_of_its_caller_when_allowed(tmp_path: Path) -> None:
    """The demo and the benchmarks raise the server's priority (its stamps are the audit's
    ground truth); unprivileged, the request is refused and the server keeps ours."""
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    with SimWebProcess(tmp_path, WorldParams(seed=4), nice=-5) as web:
        pid = int(str(web.info["pid"]))
        expected = -5 if os.geteuid() == 0 else ours
        assert os.getpriority(os.PRIO_PROCESS, pid) == expected
