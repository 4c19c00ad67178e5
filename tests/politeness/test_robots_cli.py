import io
import json
from pathlib import Path

import pytest

from courtier.cli import main

ROBOTS = "User-agent: *\nDisallow: /private\nCrawl-delay: 3\n\nUser-agent: acme\nDisallow: /\n"


@pytest.fixture
def robots_file(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_text(ROBOTS)
    return path


def run(capsys, *argv: str) -> tuple[int, list[dict]]:
    code = main(["robots", "check", "--json", *argv])
    return code, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_check_reports_allowed_and_crawl_delay_per_url(capsys, robots_file):
    code, rows = run(
        capsys, "--robots-file", str(robots_file), "http://a.test/private/x", "http://a.test/ok"
    )
    assert code == 1  # one URL is disallowed (0 only when every URL is allowed)
    assert rows == [
        {"url": "http://a.test/private/x", "allowed": False, "crawl_delay": 3.0},
        {"url": "http://a.test/ok", "allowed": True, "crawl_delay": 3.0},
    ]


def test_user_agent_token_selects_its_group(capsys, robots_file):
    _code, rows = run(capsys, "--robots-file", str(robots_file), "--ua", "acme", "http://a.test/ok")
    assert rows == [{"url": "http://a.test/ok", "allowed": False, "crawl_delay": None}]


@pytest.mark.parametrize(("status", "allowed"), [(404, True), (500, False), (503, False)])
def test_status_rules_of_rfc_9309(capsys, robots_file, status, allowed):
    _code, rows = run(
        capsys, "--robots-file", str(robots_file), "--status", str(status), "http://a.test/private"
    )
    assert rows[0]["allowed"] is allowed


def test_urls_are_read_from_stdin_and_bad_ones_reported(capsys, robots_file, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("http://a.test/ok\nhttp://[::1\n"))
    code, rows = run(capsys, "--robots-file", str(robots_file))
    assert code == 1
    assert rows[0]["allowed"] is True
    assert "error" in rows[1]


def test_live_robots_of_a_simulated_site_is_fetched_through_the_guard(capsys, tmp_path):
    from courtier.simweb.process import SimWebProcess
    from courtier.simweb.world import Behaviour, WorldParams

    with SimWebProcess(tmp_path / "web", WorldParams(seed=2)) as web:
        site = web.world.site_with(Behaviour.CRAWL_DELAY)
        url = f"http://{site.host}{'' if web.port == 80 else f':{web.port}'}/"
        net = ["--dns", web.dns, "--allow-net", web.allow_net]
        code = main(["robots", url, *net, "--json"])
        out = capsys.readouterr().out
        refused = main(["robots", url, "--dns", web.dns])  # no --allow-net: loopback refused
        refused_out = capsys.readouterr().out
    assert code == 0
    assert f"GET {url}robots.txt -> 200" in out
    verdict = json.loads(out.strip().splitlines()[-1])
    assert verdict["crawl_delay"] == web.world.params.crawl_delay
    assert "refused by the SSRF guard: loopback" in refused_out
    assert "disallowed" in refused_out  # unreachable robots.txt: RFC 9309 says disallow all
    assert refused == 1
