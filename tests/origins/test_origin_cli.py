"""``courtier origins infer | list | explain`` against a simulated web in a subprocess."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from courtier import cli
from courtier.simweb import SiteKind, WorldParams
from courtier.simweb.audit import audit
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import CDN_HOST


@pytest.fixture(autouse=True)
def only_the_origins_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("origins",))


@pytest.fixture(scope="module")
def inferred(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimWebProcess, Path, str]]:
    """A store filled by ``courtier origins infer --probe`` and the JSON it printed."""
    workdir = tmp_path_factory.mktemp("origins-cli")
    # The header-only tenants are the sites probed, one after another on their platform's
    # budget (2 units/s: a home page and a probe, 2.5 s each): 3 of them (not 6) take 8 s.
    with SimWebProcess(workdir, WorldParams(seed=7, n_header_tenants=3)) as web:
        hosts = workdir / "hosts.txt"
        lines = [f"http://{h}/" for h in web.world.seed_hosts[:3]]
        hosts.write_text("\n".join([*lines, *web.world.seed_hosts[3:], CDN_HOST, "# done", ""]))
        store = workdir / "crawl" / "frontier.sqlite3"
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(cli, "COMMAND_MODULES", ("origins",))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = cli.main(
                    [
                        "origins", "infer", "--dns", web.dns, "--allow-net", web.allow_net,
                        "--hosts", str(hosts), "--store", str(store), "--probe",
                        "--port", str(web.port), "--json",
                    ]
                )  # fmt: skip
        assert code == 0
        yield web, store, out.getvalue()


def _lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _first(web: SimWebProcess, kind: SiteKind) -> str:
    return next(h for h in web.world.seed_hosts if web.world.sites[h].kind is kind)


def test_infer_prints_one_object_per_site_with_the_documented_keys(
    inferred: tuple[SimWebProcess, Path, str],
) -> None:
    web, _store, printed = inferred
    records = _lines(printed)
    assert len(records) == len(web.world.seed_hosts) + 1
    for record in records:
        assert set(record) == {"site", "origin", "confidence", "evidence"}
        assert isinstance(record["evidence"], list) and record["evidence"]


def test_list_shows_every_stored_site(
    inferred: tuple[SimWebProcess, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    web, store, _ = inferred
    assert cli.main(["origins", "list", "--store", str(store), "--json"]) == 0
    listed = {r["site"]: r for r in _lines(capsys.readouterr().out)}
    assert set(listed) == {*web.world.seed_hosts, CDN_HOST}
    assert cli.main(["origins", "list", "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert f"{CDN_HOST}\tsite:{CDN_HOST}\t" in text


def test_explain_names_the_cname_evidence_of_a_platform_a_tenant(
    inferred: tuple[SimWebProcess, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    web, store, _ = inferred
    host = _first(web, SiteKind.CNAME_TENANT)
    assert cli.main(["origins", "explain", host.upper(), "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "origin:     cname:" in text
    assert "cname" in text and "tenants.platform-a.test" in text
    assert "ptr-address" in text and "web1.platform-a.test" in text
    tenants = sum(1 for s in web.world.sites.values() if s.kind is SiteKind.CNAME_TENANT)
    assert f"shares it with: {tenants - 1} other sites" in text


def test_explain_names_the_header_evidence_of_a_platform_b_tenant(
    inferred: tuple[SimWebProcess, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    web, store, _ = inferred
    host = _first(web, SiteKind.HEADER_TENANT)
    assert cli.main(["origins", "explain", host, "--store", str(store), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["site"] == host and str(record["origin"]).startswith("hdr:")
    kinds = {e["kind"] for e in record["evidence"]}
    assert "headers" in kinds
    assert "X-Powered-By: PlinthSites" in json.dumps(record["evidence"])
    assert record["changes"][0]["old"] is None


def test_explain_of_an_unknown_site_exits_1(
    inferred: tuple[SimWebProcess, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _web, store, _ = inferred
    assert cli.main(["origins", "explain", "never-seen.test", "--store", str(store)]) == 1
    assert "no origin stored" in capsys.readouterr().err


def test_a_missing_store_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["origins", "list", "--store", str(tmp_path / "nope.sqlite3")]) == 2
    assert "no store" in capsys.readouterr().err


def test_infer_without_a_nameserver_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("a.test\n")
    code = cli.main(["origins", "infer", "--hosts", str(hosts), "--store", str(tmp_path / "s")])
    assert code == 2
    assert "--dns" in capsys.readouterr().err


def test_infer_skips_lines_that_are_not_hosts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("bad host name!\n")
    args = ["origins", "infer", "--dns", "127.0.0.1:9", "--hosts", str(hosts)]
    assert cli.main([*args, "--store", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err
    assert "skipped: bad host name!" in err and "no hosts" in err


def test_probes_are_booked_requests_the_servers_find_polite(
    inferred: tuple[SimWebProcess, Path, str],
) -> None:
    """Each probe waited for a slot on its site and on its address set's origin key: the
    simulated platforms saw their budget kept while all their tenants were probed."""
    web, _store, _printed = inferred
    report = audit(web.log_path, web.world)
    probed = {s.host for s in report.sites}
    header_tenants = {
        h for h in web.world.seed_hosts if web.world.sites[h].kind is SiteKind.HEADER_TENANT
    }
    assert header_tenants <= probed
    for name in ("site-gap", "origin-budget", "robots", "canary", "outside-seed"):
        assert report.criterion(name).ok, report.criterion(name)
