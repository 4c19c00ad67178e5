"""``courtier fetch`` and ``courtier parse``: one URL by hand, as a crawl takes it.

Against the simulated web (loopback only): a page with links (the human report and the JSON
object), a URL robots.txt disallows (never requested), a redirect out of the seed (not
followed), a parse hook applied; the SSRF guard's refusal of an address literal, judged with
no DNS query and no connection; a saved file read with a hook, and a hook that raises (exit
1, its traceback shown); booking on a store's clocks, shared with a running crawl.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_helpers import Run

from courtier.render.browser import find_chromium
from courtier.simweb.log import read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import Behaviour, SiteKind, WorldParams

FAST = ["-s", "limits.site.rate=4", "-s", "limits.origin.rate=8"]
"""A quarter of a second between a site's requests: the tests wait less, spacing still holds."""
PARAMS = WorldParams(seed=3, n_standalone=12, n_cname_tenants=0, n_header_tenants=0)

HOOKS = textwrap.dedent(
    """
    def extract(page):
        heading = page.tree.css_first("h1") if page.tree is not None else None
        return {
            "h1": heading.text(strip=True) if heading is not None else None,
            "type": page.content_type,
            "headers": len(page.headers),
        }

    def broken(page):
        return {"price": find_price(page)}

    def find_price(page):
        raise ValueError("no price on " + page.url)

    def steer(page):
        from courtier import HookResult

        return HookResult(
            fields={"n": 1},
            add=["/added", "https://elsewhere.test/added", "mailto:x@shop.test"],
            drop=["/a", "/i.png"],
            priority=4,
        )
    """
)

PAGE = """<html><head><title>Grüße aus Köln</title><link rel="canonical" href="/canon">
<meta name="robots" content="noindex"></head><body><h1>Preis 12 €</h1>
<p>Schreiben Sie an max@example.org. Dies ist ein längerer deutscher Text über das Wetter
in Köln und die Preise auf dem Markt, lang genug für die Sprache.</p>
<a href="/a">a</a> <a href="https://other.test/x">x</a>
<a rel="nofollow" href="http://third.test/">n</a><img src="/i.png"></body></html>"""


@dataclass(frozen=True)
class Web:
    net: list[str]
    plain: str
    """A standalone site with no special behaviour."""
    redirecting: str
    """A site whose ``/go/elsewhere`` redirects out of the seed (to the canary)."""
    log: Path


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    tmp = tmp_path_factory.mktemp("fetch")
    with SimWebProcess(tmp / "web", PARAMS) as served:
        sites = [s for s in served.world.sites.values() if s.kind is SiteKind.STANDALONE]
        plain = next(s.host for s in sites if not s.behaviours and not s.host.startswith("xn--"))
        redirecting = next(s.host for s in sites if Behaviour.REDIRECT_TO_CANARY in s.behaviours)
        net = ["--dns", served.dns, "--allow-net", served.allow_net]
        yield Web(net, plain, redirecting, served.log_path)


@pytest.fixture
def hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of a fresh module holding ``extract`` and ``broken``."""
    name = f"fetch_hooks_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(HOOKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _json(out: str) -> dict:
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0])


# -- fetch ----------------------------------------------------------------------------------


def test_fetch_shows_the_requests_the_answer_and_the_links(run: Run, web: Web) -> None:
    code, out, err = run("fetch", f"http://{web.plain}/", *web.net, *FAST, "--links", "2")
    assert code == 0, err
    assert "Traceback" not in out + err
    lines = out.splitlines()
    assert lines[0].startswith(f"robots     http://{web.plain}/robots.txt  -> 200  [site:")
    assert lines[1].startswith(f"page       http://{web.plain}/  -> 200  [site:{web.plain}")
    assert f"robots.txt of {web.plain}: parsed (status 200, fetched)" in out
    assert "status:    200" in out
    assert f"title:     Welcome to {web.plain}" in out
    assert "language:  en" in out
    assert "\nheaders:\n  Content-Type: text/html" in out
    summary = next(line for line in lines if line.startswith("links: "))
    assert "frontier" in summary and "horizon" in summary
    assert f"  frontier http://{web.plain}/" in out
    assert "... and" in out  # only two of each kind shown


def test_fetch_json_is_one_object_with_the_crawls_document(run: Run, web: Web) -> None:
    url = f"http://{web.plain}/"
    code, out, err = run("fetch", url, *web.net, *FAST, "--json")
    assert code == 0, err
    report = _json(out)
    assert report["url"] == url and report["final_url"] == url and report["status"] == 200
    assert [r["kind"] for r in report["requests"]] == ["robots", "page"]
    page = report["requests"][1]
    assert page["keys"][0] == f"site:{web.plain}" and page["keys"][1].startswith("origin:")
    assert page["cost"] == 4  # the home page is an index
    assert page["waited_s"] >= 0.2  # a quarter second after robots.txt, start to start
    assert report["robots"] == [
        {
            "site": web.plain,
            "source": "fetched",
            "rules": "parsed",
            "http_status": 200,
            "crawl_delay": None,
        }
    ]
    document = report["document"]
    assert document["title"] == f"Welcome to {web.plain}"
    assert document["language"] == "en" and document["text"] and document["markdown"]
    assert document["links"] and document["images"] and document["depth"] == 0
    links = report["links"]
    assert links["frontier"] and links["horizon"]
    assert all(u.startswith(f"http://{web.plain}/") for u in links["frontier"])
    assert not any(f"//{web.plain}/" in u for u in links["horizon"])
    assert ["Content-Type", "text/html; charset=utf-8"] in report["headers"]


def test_a_url_robots_txt_disallows_is_not_requested(run: Run, web: Web) -> None:
    url = f"http://{web.plain}/private/secret"
    code, out, _err = run("fetch", url, *web.net, *FAST, "--json")
    assert code == 1
    report = _json(out)
    assert [r["kind"] for r in report["requests"]] == ["robots"]
    assert "disallows" in report["stopped"] and "document" not in report
    code, out, _err = run("fetch", url, *web.net, *FAST)
    assert code == 1
    assert f"stopped: robots.txt of {web.plain} disallows {url}" in out


def test_a_redirect_out_of_the_seed_is_shown_not_followed(run: Run, web: Web) -> None:
    url = f"http://{web.redirecting}/go/elsewhere"
    code, out, err = run("fetch", url, *web.net, *FAST, "--json")
    assert code == 0, err
    report = _json(out)
    assert report["status"] == 302
    assert [r["url"] for r in report["requests"]][-1] == url  # nothing sent to the target
    assert report["redirects"][0]["from"] == url
    assert "leaves the seed" in report["stopped"]
    assert report["document"]["location"] == report["redirects"][0]["to"]


def test_the_parse_hook_is_applied_to_the_fetched_page(run: Run, web: Web, hooks: str) -> None:
    url = f"http://{web.plain}/item/1"
    code, out, err = run("fetch", url, *web.net, *FAST, "--hook", f"{hooks}:extract", "--json")
    assert code == 0, err
    hook = _json(out)["document"]["hook"]
    assert hook["h1"] == "Item 1" and hook["type"] == "text/html; charset=utf-8"
    assert hook["headers"] >= 2  # the answer's own headers, as a crawl gives them


def test_fetch_shows_what_the_hook_did_to_the_links(run: Run, web: Web, hooks: str) -> None:
    url = f"http://{web.plain}/item/1"
    code, out, err = run("fetch", url, *web.net, *FAST, "--hook", f"{hooks}:steer", "--json")
    assert code == 0, err
    report = _json(out)
    done = report["document"]["hook_links"]
    assert done["added"] == [f"http://{web.plain}/added", "https://elsewhere.test/added"]
    assert done["priority"] == report["links"]["priority"] == 4
    assert f"http://{web.plain}/added" in report["links"]["frontier"]
    assert "https://elsewhere.test/added" in report["links"]["horizon"]


def test_the_guard_refuses_an_address_literal_without_dns_or_a_connection(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    def nothing(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a refused host was looked up or connected to")

    monkeypatch.setattr("courtier.net.fetch.Fetcher.fetch", nothing)
    monkeypatch.setattr("courtier.net.resolve.DnsResolver.resolve", nothing)
    monkeypatch.setattr("socket.socket.connect", nothing)
    for args in (["http://10.0.0.1/"], ["http://10.0.0.1/x", "--json"], ["http://[::1]:8080/"]):
        code, out, err = run("fetch", *args)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "refused by the SSRF guard:" in err
    code, _out, err = run("fetch", "http://10.0.0.1/")
    assert "10.0.0.1 is in 10.0.0.0/8" in err and err.startswith("courtier fetch: ")


@pytest.mark.skipif(find_chromium(None) is None, reason="headless Chromium is not installed")
def test_render_goes_through_the_crawls_render_path(run: Run, web: Web) -> None:
    url = f"http://{web.plain}/item/2"
    code, out, err = run("fetch", url, *web.net, *FAST, "--render", "--json")
    assert code == 0, err
    report = _json(out)
    assert report["document"]["render"]["rendered"] is True
    assert report["document"]["title"] == "Item 2"
    assert report["links"]["frontier"]


# -- booking on a store's clocks ----------------------------------------------------------


def test_with_a_store_a_fetch_books_on_its_limiter_table(
    run: Run, web: Web, tmp_path: Path
) -> None:
    store = tmp_path / "frontier.sqlite3"
    assert run("seed", "add", web.plain, "--store", store)[0] == 0
    url = f"http://{web.plain}/item/3"
    args = [*web.net, *FAST, "--store", store, "--json"]
    code, out, _err = run("fetch", url, *args)
    assert code == 0
    assert "crawl keeps its clocks in its own memory" in _json(out)["notes"][0]
    code, out, _err = run("fetch", url, *args, "-s", "crawl.limiter=sqlite")
    assert code == 0
    assert "limiter table" in _json(out)["notes"][0]
    with sqlite3.connect(store) as db:
        tats = dict(db.execute("SELECT key, tat FROM limiter_tat").fetchall())
    assert tats[f"site:{web.plain}"] > time.time() - 1
    # The table exists now: the next fetch books there without being told, and waits for
    # the slot the last one left (its robots.txt starts a site interval after that page).
    code, out, _err = run("fetch", url, *args)
    assert code == 0
    assert _json(out)["requests"][0]["waited_s"] > 0.1


def test_a_fetch_and_a_running_crawl_share_the_stores_clocks(tmp_path: Path) -> None:
    """A crawl books in the store's limiter table (``crawl.limiter = sqlite``) while two
    fetches book there too: the server sees the site's requests a site interval apart."""
    params = WorldParams(seed=3, n_standalone=12, n_cname_tenants=0, n_header_tenants=0)
    rate, interval = ["-s", "limits.site.rate=2", "-s", "limits.origin.rate=8"], 0.5
    shared = ["-s", "crawl.limiter=sqlite"]
    with SimWebProcess(tmp_path / "web", params) as served:
        site = next(
            s.host
            for s in served.world.sites.values()
            if s.kind is SiteKind.STANDALONE and not s.behaviours and s.host[:4] != "xn--"
        )
        (tmp_path / "seeds.txt").write_text(site + "\n")
        store = tmp_path / "frontier.sqlite3"
        net = ["--dns", served.dns, "--allow-net", served.allow_net]
        command = [sys.executable, "-m", "courtier", "crawl", "--seeds", "seeds.txt"]
        command += ["--store", str(store), "--out", "out", "--duration", "8", *net, *rate]
        crawl = subprocess.Popen([*command, *shared], cwd=tmp_path, stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while not (tmp_path / "frontier.sqlite3.lock").exists():
                assert time.monotonic() < deadline and crawl.poll() is None
                time.sleep(0.1)
            time.sleep(2.5)  # the crawl is fetching
            for n in (5, 6):
                fetch = [sys.executable, "-m", "courtier", "fetch", f"http://{site}/item/{n}"]
                done = subprocess.run(
                    [*fetch, "--store", str(store), *net, *rate, *shared, "--json"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                assert done.returncode == 0, done.stderr
                report = json.loads(done.stdout)
                assert "limiter table" in report["notes"][0]
                assert report["robots"][0]["source"] == "store"  # the crawl's answer
        finally:
            assert crawl.wait(timeout=60) == 0
    starts = sorted(r.start for r in read_log(served.log_path) if r.host == site)
    targets = {r.target for r in read_log(served.log_path) if r.host == site}
    assert {"/item/5", "/item/6"} <= targets
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(gaps) >= 4 and min(gaps) >= interval - 0.05, gaps


# -- parse -----------------------------------------------------------------------------------


def test_parse_reads_a_saved_file_as_a_crawl_and_runs_the_hook(
    run: Run, tmp_path: Path, hooks: str
) -> None:
    page = tmp_path / "saved.html"
    page.write_bytes(PAGE.encode("windows-1252"))
    args = ["parse", page, "--url", "http://shop.test/p/1", "--hook", f"{hooks}:extract"]
    args += ["--type", "text/html; charset=windows-1252"]
    code, out, err = run(*args, "--json")
    assert code == 0, err
    report = _json(out)
    document = report["document"]
    assert report["file"] == str(page) and "status" not in document
    assert document["title"] == "Grüße aus Köln" and document["encoding"] == "cp1252"
    assert document["language"] == "de" and document["noindex"] is True
    assert document["canonical"] == "http://shop.test/canon"
    assert document["redacted"] == {"email": 1} and "max@example.org" not in out
    hook = {"h1": "Preis 12 €", "type": "text/html; charset=windows-1252", "headers": 1}
    assert document["hook"] == hook
    links = report["links"]
    assert sorted(links["frontier"]) == [
        "http://shop.test/a",
        "http://shop.test/canon",
        "http://shop.test/i.png",
    ]
    assert links["horizon"] == ["https://other.test/x"]
    assert links["kept_out"] == {"nofollow": 1}
    code, out, _err = run(*args)
    assert code == 0
    assert f"hook:      {json.dumps(hook, ensure_ascii=False)}" in out


def test_parse_shows_the_links_a_hook_added_and_dropped_and_its_priority(
    run: Run, tmp_path: Path, hooks: str
) -> None:
    page = tmp_path / "saved.html"
    page.write_text(PAGE, encoding="utf-8")
    args = ["parse", page, "--url", "http://shop.test/p/1", "--hook", f"{hooks}:steer"]
    code, out, err = run(*args, "--json")
    assert code == 0, err
    report = _json(out)
    assert report["document"]["hook"] == {"n": 1}
    assert report["document"]["hook_links"] == {
        "added": ["http://shop.test/added", "https://elsewhere.test/added"],
        "dropped": ["http://shop.test/a", "http://shop.test/i.png"],
        "priority": 4,
        "not_urls": ["mailto:x@shop.test"],
    }
    links = report["links"]
    assert sorted(links["frontier"]) == ["http://shop.test/added", "http://shop.test/canon"]
    assert sorted(links["horizon"]) == ["https://elsewhere.test/added", "https://other.test/x"]
    assert links["priority"] == 4
    code, out, _err = run(*args)
    assert code == 0
    assert (
        "hook links: added 2, dropped 2, not URLs 1; priority 4 (new URLs due 4 days early)" in out
    )
    assert "  added     http://shop.test/added\n" in out
    assert "  dropped   http://shop.test/i.png\n" in out
    assert "  not a URL mailto:x@shop.test\n" in out


def test_a_hook_that_raises_exits_1_with_its_traceback(
    run: Run, tmp_path: Path, hooks: str
) -> None:
    page = tmp_path / "saved.html"
    page.write_text(PAGE, encoding="utf-8")
    args = ["parse", page, "--url", "http://shop.test/p/1", "--hook", f"{hooks}:broken"]
    code, out, err = run(*args)
    assert code == 1, err
    assert "hook error: hook-error: ValueError: no price on http://shop.test/p/1" in out
    assert "traceback:\nTraceback (most recent call last):" in out
    assert "in find_price" in out and "courtier/content/hook.py" not in out
    code, out, _err = run(*args, "--json")
    assert code == 1
    report = _json(out)
    assert report["document"]["hook_error"].startswith("hook-error: ValueError")
    assert "hook" not in report["document"]  # the page is kept, as in a crawl
    assert report["tracebacks"][0].rstrip().endswith("ValueError: no price on http://shop.test/p/1")


def test_parse_a_url_fetches_it_as_fetch_does(run: Run, web: Web, hooks: str) -> None:
    url = f"http://{web.plain}/item/4"
    code, out, err = run("parse", url, *web.net, *FAST, "--hook", f"{hooks}:extract", "--json")
    assert code == 0, err
    report = _json(out)
    assert [r["kind"] for r in report["requests"]] == ["robots", "page"]
    assert report["document"]["hook"]["h1"] == "Item 4"


def test_parse_guesses_a_files_type_and_refuses_what_a_crawl_does_not_parse(
    run: Run, tmp_path: Path
) -> None:
    feed = tmp_path / "feed.xml"
    feed.write_text(
        '<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>'
        "<item><title>One</title><link>http://news.test/1</link></item></channel></rss>"
    )
    code, out, err = run("parse", feed, "--url", "http://news.test/feed", "--json")
    assert code == 0, err
    report = _json(out)
    assert report["document"]["content_type"] == "application/rss+xml"
    assert report["links"]["frontier"] == ["http://news.test/1"]
    code, out, err = run("parse", feed, "--url", "http://news.test/", "--type", "image/png")
    assert code == 2 and out == "" and "a crawl parses HTML" in err


def test_both_commands_are_listed_by_help(run: Run) -> None:
    code, out, _err = run("--help")
    assert code == 0
    assert "fetch" in out and "parse" in out


def test_with_a_postgresql_store_a_fetch_books_on_the_fleets_table(
    postgres_dsn: str, run: Run, web: Web
) -> None:
    import psycopg

    from courtier.politeness.limiter.postgres import TABLE
    from pg import fresh_database

    with fresh_database(postgres_dsn, "fetchcli") as store:
        assert run("seed", "add", "--store", store, web.plain)[0] == 0
        url = f"http://{web.plain}/item/9"
        code, out, err = run("fetch", url, *web.net, *FAST, "--store", store, "--json")
        assert code == 0, err
        report = _json(out)
        assert "the fleet's shared clocks" in report["notes"][0]
        with psycopg.connect(store) as conn:
            keys = {key for (key,) in conn.execute(f"SELECT key FROM {TABLE}")}
        assert set(report["requests"][1]["keys"]) <= keys
