"""The `courtier` command itself: lazy subcommands, global options anywhere, exit statuses,
`config show`, store URLs, and the warning about the default contact URL."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import Run

from courtier.api import _warn_default_contact
from courtier.cli.logs import JsonFormatter
from courtier.config import Config, FetchSection, load
from courtier.inputs import (
    InputError,
    PostgresStore,
    SqliteStore,
    is_local_host,
    parse_store,
    redact,
)
from courtier.url import parse_url

HEAVY = ("scipy", "numpy", "aiohttp", "courtier.config", "courtier.pipeline.engine", "rich")


def test_version_imports_no_subcommand_and_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from courtier.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit as exit:\n    assert exit.code == 0\n"
        f"loaded = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "loaded += [m for m in sys.modules if m.startswith('courtier.cli.')]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("courtier ")


def test_the_crawl_command_leaves_the_ranking_and_aiohttp_unimported() -> None:
    # scipy is the ranking's (``[frontier] promote``, off by default): a crawl imports it on
    # its store thread at its first ranking cycle, never before its first request. aiohttp
    # is only the header probe's (``courtier origins``): the crawl fetches with its own client.
    code = (
        "import sys\n"
        "import courtier.cli.crawl\n"
        "unwanted = ('scipy', 'courtier.graph.pagerank', 'aiohttp')\n"
        "loaded = [m for m in unwanted if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_version_answers_quickly() -> None:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "courtier", "--version"], capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    import courtier

    assert done.stdout == f"courtier {courtier.__version__}\n"
    assert elapsed < 1.0  # ~0.12 s on an idle machine: Python's own start-up, no subcommand


def test_the_version_is_written_once() -> None:
    root = Path(__file__).parent.parent.parent
    pyproject = (root / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "courtier.__version__" }' in pyproject


def test_help_lists_every_command_without_importing_them(run: Run) -> None:
    code, out, _ = run("--help")
    from courtier.cli import COMMANDS

    assert code == 0
    for command in COMMANDS:
        assert command.name in out


@pytest.mark.parametrize(
    "args",
    [
        ["-v", "config", "show"],
        ["config", "show", "-v"],
        ["config", "-v", "show", "--log-format", "json"],
        ["--log-format", "json", "config", "show", "-vv"],
    ],
)
def test_global_options_go_before_or_after_the_subcommand(run: Run, args: list[str]) -> None:
    code, out, err = run(*args)
    assert code == 0, err
    assert "[crawl]" in out


def test_json_log_lines_are_one_object_each() -> None:
    record = logging.LogRecord("courtier.x", logging.WARNING, __file__, 1, "a %s", ("b",), None)
    line = JsonFormatter().format(record)
    assert json.loads(line) | {"time": None} == {
        "time": None,
        "level": "warning",
        "logger": "courtier.x",
        "message": "a b",
    }


# -- exit statuses of the check commands ------------------------------------------------------


@pytest.fixture
def robots(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_text("User-agent: *\nDisallow: /private\n")
    return path


def test_robots_check_exits_0_when_all_allowed_1_when_any_disallowed(
    run: Run, robots: Path
) -> None:
    allowed = run("robots", "check", "--robots-file", robots, "http://a.test/ok")
    disallowed = run("robots", "check", "--robots-file", robots, "http://a.test/private/x")
    assert (allowed[0], disallowed[0]) == (0, 1)
    assert "disallowed" in disallowed[1]


def test_robots_shorthand_works_after_global_options(run: Run) -> None:
    code, _, err = run("-v", "robots", "not-a-url")  # read as `robots explain not-a-url`
    assert code == 2 and "courtier robots explain: URL not-a-url" in err


def test_net_check_exits_1_for_a_refused_target_and_2_for_bad_input(run: Run) -> None:
    assert run("net", "check", "--dns", "127.0.0.1:9", "127.0.0.1")[0] == 1
    assert run("net", "check", "--dns", "127.0.0.1:9", "192.0.2.1/x")[0] == 1
    assert run("net", "check", "--dns", "127.0.0.1:99999", "127.0.0.1")[0] == 2


# -- config show ------------------------------------------------------------------------------


@pytest.fixture
def layered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "crawl.toml"
    path.write_text(
        "[crawl]\nmax_depth = 7\n\n[limits.cdn-miss]\nrate = 3\n"
        '[fetch]\nallowed_types = ["text/", "image/"]\n'
    )
    monkeypatch.setenv("COURTIER_CRAWL__MAX_DEPTH", "8")
    monkeypatch.setenv("COURTIER_POLITENESS__MAX_LEAD", "4.5")
    monkeypatch.setenv("COURTIER_HOME", "/not/a/setting")  # no __: not a setting, ignored
    return path


def test_config_show_names_the_source_of_every_value(run: Run, layered: Path) -> None:
    code, out, err = run("config", "show", "--json", "--config", layered, "-s", "crawl.max_depth=9")
    assert code == 0, err
    shown = json.loads(out)
    sources = shown["$sources"]
    assert shown["crawl"]["max_depth"] == 9
    assert sources["crawl.max_depth"] == {"layer": "-s", "where": "crawl.max_depth=9"}
    assert sources["politeness.max_lead"] == {
        "layer": "env",
        "where": "COURTIER_POLITENESS__MAX_LEAD",
    }
    assert sources["limits.cdn_miss.rate"] == {"layer": "file", "where": f"{layered}:5:8"}
    assert sources["crawl.parse_workers"] == {"layer": "default", "where": ""}
    assert set(sources) == {
        name for name, _ in __import__("courtier.config").config.settings(Config())
    }


def test_config_show_output_used_as_a_config_file_gives_the_same_configuration(
    run: Run, layered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = (
        "--config",
        layered,
        "-s",
        "limits.site.rate=inf",
        "-s",
        "fetch.contact_url=mailto:a@b.c",
    )
    effective = load(layered, ["limits.site.rate=inf", "fetch.contact_url=mailto:a@b.c"])
    _, as_json, _ = run("config", "show", "--json", *args)
    _, as_toml, _ = run("config", "show", *args)
    (tmp_path / "effective.json").write_text(as_json)
    (tmp_path / "effective.toml").write_text(as_toml)
    for name in [n for n in __import__("os").environ if n.startswith("COURTIER_")]:
        monkeypatch.delenv(name)
    assert load(tmp_path / "effective.json") == effective
    assert load(tmp_path / "effective.toml") == effective
    assert effective.crawl.max_depth == 8 and effective.politeness.max_lead == 4.5
    again = json.loads(run("config", "show", "--json", "--config", tmp_path / "effective.json")[1])
    assert {k: v for k, v in again.items() if k != "$sources"} == {
        k: v for k, v in json.loads(as_json).items() if k != "$sources"
    }
    assert "# file " in as_toml and "# env COURTIER_CRAWL__MAX_DEPTH" in as_toml


def test_config_check_exits_0_or_2(run: Run, layered: Path) -> None:
    assert run("config", "check", "--config", layered) == (0, "", "")
    code, _, err = run("config", "check", "-s", "crawl.max_depth=-1")
    assert code == 2 and "crawl.max_depth=-1" in err


# -- stores -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://crawler@db.example:5432/crawl",
        "postgres://db.example/crawl",
        "postgresql:///crawl?host=/run/pg",
        "postgresql://crawler:secret@db1.example,db2.example:5433/crawl?sslmode=require",
    ],
)
def test_postgresql_urls_are_a_postgres_store(url: str) -> None:
    spec = parse_store(url)
    assert spec == PostgresStore(url)
    assert "secret" not in str(spec)


def test_paths_are_a_sqlite_store(tmp_path: Path) -> None:
    assert parse_store(str(tmp_path / "x.sqlite3")) == SqliteStore(tmp_path / "x.sqlite3")
    assert parse_store("mysql:crawl.db") == SqliteStore(Path("mysql:crawl.db"))  # no //: a path


def test_passwords_never_appear_in_messages() -> None:
    assert redact("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    assert redact("postgresql://h/db?password=pw&x=1") == "postgresql://h/db?password=***&x=1"
    with pytest.raises(InputError) as raised:
        parse_store("postgresql://u:pw@h:0/db")
    assert "pw" not in str(raised.value)


def test_a_postgresql_url_without_psycopg_asks_for_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.setitem(sys.modules, "psycopg.conninfo", None)
    with pytest.raises(InputError, match=r"courtier\[postgres\]"):
        parse_store("postgresql:///crawl")


# -- the contact URL --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seeds", "contact", "warned"),
    [
        (["http://example.org/"], None, True),
        (["http://a.test/", "http://example.org/"], None, True),
        (
            ["http://a.test:8080/", "http://127.0.0.2/", "http://[::1]/", "http://x.localhost/"],
            None,
            False,
        ),
        (["http://example.org/"], "mailto:ops@example.org", False),
    ],
)
def test_a_crawl_outside_loopback_warns_while_contact_url_is_the_default(
    caplog: pytest.LogCaptureFixture, seeds: list[str], contact: str | None, warned: bool
) -> None:
    config = Config() if contact is None else Config(fetch=FetchSection(contact_url=contact))
    with caplog.at_level(logging.WARNING, logger="courtier"):
        _warn_default_contact(config, [parse_url(seed) for seed in seeds])
    assert any("fetch.contact_url" in r.getMessage() for r in caplog.records) is warned


def test_local_hosts() -> None:
    assert is_local_host("127.9.0.1") and is_local_host("::1") and is_local_host("a.test")
    assert not is_local_host("example.org") and not is_local_host("10.0.0.1")
