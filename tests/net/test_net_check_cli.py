"""`courtier net check`: verdicts on stdout, one JSON object per line with --json."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from loopback_dns import LoopbackDnsServer

from courtier.cli import main


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]]]:
    code = main(["net", "check", "--json", *argv])
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines()]


def test_json_line_per_target_with_verdict_reason_and_addresses(
    capsys: pytest.CaptureFixture[str], dns_server: LoopbackDnsServer
) -> None:
    code, rows = run_json(
        capsys, "--dns", dns_server.address, "http://0x7f.1/", "[::ffff:169.254.169.254]", "8.8.8.8"
    )
    assert code == 1
    assert [(r["input"], r["verdict"], r["reason"], r["addresses"]) for r in rows] == [
        ("http://0x7f.1/", "refuse", "loopback", ["127.0.0.1"]),
        ("[::ffff:169.254.169.254]", "refuse", "ipv4-mapped:link-local", ["::ffff:a9fe:a9fe"]),
        ("8.8.8.8", "allow", "ok", ["8.8.8.8"]),
    ]
    assert dns_server.queries == []  # literals never reach DNS


def test_names_are_resolved_through_the_given_nameserver(
    capsys: pytest.CaptureFixture[str], dns_server: LoopbackDnsServer
) -> None:
    code, rows = run_json(
        capsys, "--dns", dns_server.address, "http://canary.test/x", "public.test", "nowhere.test"
    )
    assert code == 1
    assert [(r["verdict"], r["reason"], r["addresses"]) for r in rows] == [
        ("refuse", "link-local", ["169.254.169.254"]),
        ("allow", "ok", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]),
        ("refuse", "nxdomain", []),
    ]
    assert dns_server.query_count("canary.test", "A") == 1


def test_allow_net_is_repeatable_and_exit_code_is_zero_when_all_allowed(
    capsys: pytest.CaptureFixture[str], dns_server: LoopbackDnsServer
) -> None:
    code, rows = run_json(
        capsys,
        "--dns",
        dns_server.address,
        "--allow-net",
        "127.0.0.0/8",
        "--allow-net",
        "::1/128",
        "http://site.test/",
        "http://[::1]:8080/",
    )
    assert code == 0
    assert [(r["verdict"], r["reason"]) for r in rows] == [("allow", "allow-listed")] * 2


def test_targets_are_read_from_stdin_when_none_are_given(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin = "# bait links\nhttp://2130706433/\n\n  http://[64:ff9b::10.0.0.1]/  \nlocalhost\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code, rows = run_json(capsys, "--dns", "127.0.0.1:9")
    assert code == 1
    assert [(r["input"], r["reason"]) for r in rows] == [
        ("http://2130706433/", "loopback"),
        ("http://[64:ff9b::10.0.0.1]/", "nat64:private"),
        ("localhost", "localhost-name"),
    ]


def test_text_output_shows_verdict_reason_input_and_addresses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["net", "check", "--dns", "127.0.0.1:9", "http://[2002:a00:1::1]/"])
    line = capsys.readouterr().out.strip()
    assert code == 1
    assert line.split()[:3] == ["refuse", "6to4:private", "http://[2002:a00:1::1]/"]
    assert "[2002:a00:1::1]" in line
    assert "10.0.0.1" in line


def test_malformed_target_is_a_refusal_not_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    code, rows = run_json(capsys, "--dns", "127.0.0.1:9", "http://[::1/", "gopher://127.0.0.1/")
    assert code == 1
    assert [(r["verdict"], r["reason"]) for r in rows] == [("refuse", "invalid-url")] * 2


@pytest.mark.parametrize(
    "options", [["--allow-net", "127.0.0.1/8"], ["--allow-net", "loopback"], ["--dns", "dns:53"]]
)
def test_bad_option_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    code = main(["net", "check", *options, "127.0.0.1"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert "courtier net check:" in captured.err


def test_net_without_subcommand_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["net"]) == 2
    assert "check" in capsys.readouterr().err
