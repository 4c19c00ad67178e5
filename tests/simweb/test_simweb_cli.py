"""`courtier simweb serve` in a subprocess (SimWebProcess) and `courtier simweb audit`."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import dns.resolver
import pytest

from courtier import cli
from courtier.simweb import WorldParams, build_world
from courtier.simweb.log import RequestLog, RequestRecord
from courtier.simweb.process import SimWebError, SimWebProcess

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
