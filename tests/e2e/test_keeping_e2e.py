"""End to end on a loopback web: pages in legacy encodings, a bare host redirecting to www.,
a conditional refresh answered 304, and pages full of secrets that must not reach OUT/."""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from courtier.config import (
    Config,
    CrawlSection,
    FrontierSection,
    KeyLimits,
    LimitsSection,
    WarcSection,
)
from courtier.frontier.base import NewUrl
from courtier.frontier.refresh import RefreshPolicy
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.inputs import parse_seed_lines
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import StaticResolver
from courtier.pipeline.engine import Engine
from courtier.pipeline.stats import CrawlStats
from courtier.sinks.documents import read_documents
from key_samples import KEYS
from loopback import serving

INTERVAL = 0.2
LIMIT_S = 20.0
"""The duration of a crawl that stops once what its test waits for has happened
(``run_until``): at a fixed 1.5 s, a run of the conditional-refresh test beside other work
once fetched robots.txt only."""
ETAG = '"v1"'
MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT"
EMAIL = "jane.doe@example.com"
PHONES = ["+1 415-555-2671", "+44 20 7946 0958"]


@dataclass
class Web:
    port: int = 0
    hits: list[tuple[float, str, str, dict[str, str]]] = field(default_factory=list)

    def paths(self, host: str) -> list[str]:
        return [path for _t, h, path, _headers in self.hits if h == host]


def _html(body: str, charset: str | None, encoding: str = "utf-8") -> web.Response:
    content_type = "text/html" + (f"; charset={charset}" if charset else "")
    return web.Response(body=body.encode(encoding), headers={"Content-Type": content_type})


def _secrets_page() -> str:
    keys = "\n".join(template.format(secret) for _kind, template, secret in KEYS)
    return (
        f"<html><title>Keys {EMAIL}</title><body><pre>{keys}</pre>"
        f"<p>Call {PHONES[0]} or {PHONES[1]}; write to <a href='mailto:{EMAIL}'>{EMAIL}</a>."
        f"<a href='/contact?email={EMAIL.replace('@', '%40')}'>contact</a>"
        f"<a href='/more'>more</a></p></body></html>"
    )


@pytest.fixture
async def loopback_web() -> AsyncIterator[Web]:
    state = Web()

    async def handler(request: web.Request) -> web.StreamResponse:
        host = request.host.rsplit(":", 1)[0]
        path = request.raw_path
        state.hits.append((time.monotonic(), host, path, dict(request.headers)))
        if path == "/robots.txt":
            if host == "keys.test":  # archived, and redacted as pages are
                return web.Response(text=f"# Ask {EMAIL}\nUser-agent: *\nAllow: /\n")
            raise web.HTTPNotFound()
        port = state.port
        if host == "latin.test":
            if path == "/":
                page = '<title>Café</title><a href="/café">c</a><a href="/q?s=crème">q</a>'
                return _html(page, "ISO-8859-1", "latin-1")
            return _html("<title>ok</title>", "ISO-8859-1", "latin-1")
        if host == "cyr.test":
            page = '<meta charset="windows-1251"><title>Новости</title><a href="/статья">a</a>'
            return _html(page if path == "/" else "<title>ok</title>", None, "cp1251")
        if host == "sjis.test":
            page = (
                "<html><title>日本語のページです</title><body>東京都渋谷区の天気は晴れです。"
                "今日はとても良い天気ですね。<a href='/ページ'>p</a></body></html>"
            )
            return _html(page if path == "/" else "<title>ok</title>", None, "shift_jis")
        if host == "bare.test":
            raise web.HTTPMovedPermanently(f"http://www.bare.test:{port}{path}")
        if host == "www.bare.test":
            links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(6))
            return _html(f"<title>www {path}</title>{links}", "utf-8")
        if host == "etag.test":
            headers = {"ETag": ETAG, "Last-Modified": MODIFIED, "Content-Type": "text/html"}
            if request.headers.get("If-None-Match") == ETAG:
                return web.Response(status=304, headers={"ETag": ETAG})
            return web.Response(body=b"<title>stable</title>", headers=headers)
        if host == "keys.test":
            if path == "/":
                return _html(_secrets_page(), "utf-8")
            if path == "/api.json":
                return web.json_response({"owner": EMAIL, "key": KEYS[0][2]})
            return _html(f"<title>more</title><a href='/api.json'>api</a> {EMAIL}", "utf-8")
        return web.Response(status=418, text="never fetched")

    async with serving(handler) as state.port:
        yield state


HOSTS = ("latin.test", "cyr.test", "sjis.test", "bare.test", "www.bare.test", "etag.test")
HOSTS += ("keys.test",)


def engine(
    out: Path, web_: Web, seeds: tuple[str, ...], duration: float, payload: str = "redacted"
) -> Engine:
    config = Config(
        crawl=replace(CrawlSection(), flush_interval=0.05),
        # The pages here are home pages, which the crawl would watch as candidate fast
        # sources (their interval the learner's): these tests are about ordinary refresh.
        frontier=replace(FrontierSection(), fresh_sources=False),
        warc=replace(WarcSection(), payload=payload),
        limits=replace(
            LimitsSection(),
            site=KeyLimits(1.0 / INTERVAL, slot_width=0.05),
            origin=KeyLimits(1000.0, slot_width=0.05),
        ),
    )
    policy = AddressPolicy(allow=["127.0.0.1/32"])
    guard = Guard(policy, StaticResolver({host: ["127.0.0.1"] for host in HOSTS}))
    urls, errors = parse_seed_lines([f"http://{host}:{web_.port}/" for host in seeds])
    assert not errors
    return Engine(
        config,
        store_path=out / "frontier.sqlite3",
        out_dir=out,
        guard=guard,
        address_allowed=lambda address: policy.check(address).allowed,
        seeds=urls,
        duration=duration,
    )


def documents(out: Path) -> list[dict]:
    return list(read_documents(out))


def urls_written(out: Path) -> set[str]:
    """The URLs of the documents written so far (whole members only: the crawl is running)."""
    return {document["url"] for document in read_documents(out)}


async def run_until(crawl: Engine, done: Callable[[], bool]) -> CrawlStats:
    """Run ``crawl``, stopped from code once ``done()`` (looked at every 50 ms): its duration
    is then only the limit. A crawl of a fixed few seconds may not get there on a loaded
    machine (a parse worker slow to start), and waits for nothing on an idle one."""

    async def stop_when_done() -> None:
        while not done():  # noqa: ASYNC110 (what a test waits for is no event of the engine's)
            await asyncio.sleep(0.05)
        crawl.stop()

    watcher = asyncio.create_task(stop_when_done())
    try:
        return await crawl.run()
    finally:
        watcher.cancel()


def warc_records(out: Path) -> list[tuple[str, str, object, bytes, str, int]]:
    found = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as stream:
            iterator = ArchiveIterator(stream)
            for record in iterator:
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                body = record.content_stream().read()
                found.append((record.rec_type, uri, record, body, path.name, iterator.offset))
    return found


async def test_pages_in_legacy_encodings_read_right_and_their_links_are_right(
    tmp_path, loopback_web
):
    port = loopback_web.port
    homes = {f"http://{host}:{port}/" for host in ("latin.test", "cyr.test", "sjis.test")}
    cyr_link = "/%D1%81%D1%82%D0%B0%D1%82%D1%8C%D1%8F"
    crawl = engine(tmp_path, loopback_web, ("latin.test", "cyr.test", "sjis.test"), LIMIT_S)
    stats = await run_until(
        crawl,
        lambda: (
            homes <= urls_written(tmp_path)
            and "/caf%C3%A9" in loopback_web.paths("latin.test")
            and cyr_link in loopback_web.paths("cyr.test")
        ),
    )
    by_url = {d["url"]: d for d in documents(tmp_path)}
    latin = by_url[f"http://latin.test:{port}/"]
    assert latin["title"] == "Café" and latin["encoding"] == "cp1252"
    assert f"http://latin.test:{port}/caf%C3%A9" in latin["links"]
    assert f"http://latin.test:{port}/q?s=cr%E8me" in latin["links"]
    cyr = by_url[f"http://cyr.test:{port}/"]
    assert cyr["title"] == "Новости" and cyr["encoding"] == "cp1251"
    sjis = by_url[f"http://sjis.test:{port}/"]
    assert sjis["title"] == "日本語のページです" and sjis["encoding"] == "cp932"
    # The links were fetched as the right URLs: no U+FFFD (%EF%BF%BD) anywhere.
    assert "/caf%C3%A9" in loopback_web.paths("latin.test")
    assert cyr_link in loopback_web.paths("cyr.test")
    assert all("%EF%BF%BD" not in p for _t, _h, p, _x in loopback_web.hits)
    assert stats.encodings["cp1252"] >= 1 and stats.internal_errors == 0


async def test_a_bare_seed_redirecting_to_www_is_crawled_under_one_site_clock(
    tmp_path, loopback_web
):
    port = loopback_web.port

    def www_pages() -> set[str]:
        return set(loopback_web.paths("www.bare.test"))

    crawl = engine(tmp_path, loopback_web, ("bare.test",), LIMIT_S)
    every_page = {"/", *(f"/p{i}" for i in range(6))}  # many gaps for the one-clock check
    stats = await run_until(crawl, lambda: every_page <= www_pages())
    www = [p for p in loopback_web.paths("www.bare.test") if p != "/robots.txt"]
    assert {"/", "/p0", "/p1"} <= set(www), www
    assert f"www.bare.test:{port}" in stats.adopted
    assert "same site owner" in stats.adopted[f"www.bare.test:{port}"]
    assert stats.refused.get("redirect-out-of-scope", 0) == 0 and not stats.seed_redirects
    # One clock for both hosts: no two page requests closer than the site interval.
    starts = sorted(
        t for t, h, p, _x in loopback_web.hits if h.endswith("bare.test") and p != "/robots.txt"
    )
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps and min(gaps) >= INTERVAL - 0.03, gaps
    store = SqliteFrontier(tmp_path / "frontier.sqlite3")
    try:
        assert f"www.bare.test:{port}" in store.sites_in_state("seed")
    finally:
        store.close()


async def test_a_conditional_refresh_is_answered_304_recorded_unchanged_and_backs_off(
    tmp_path, loopback_web
):
    port = loopback_web.port
    root = f"http://etag.test:{port}/"
    first_run = engine(tmp_path, loopback_web, ("etag.test",), LIMIT_S)
    await run_until(first_run, lambda: root in urls_written(tmp_path))
    store = SqliteFrontier(tmp_path / "frontier.sqlite3")
    try:
        first = store.schedule_of(root)
        assert first is not None and (first.etag, first.last_modified) == (ETAG, MODIFIED)
        assert first.digest is not None and first.digest.startswith("sha1:")
        store.recrawl([NewUrl(root, root, f"etag.test:{port}", 0)], time.time())  # due now
    finally:
        store.close()
    second_run = engine(tmp_path, loopback_web, ("etag.test",), LIMIT_S)
    stats = await run_until(second_run, lambda: second_run.stats.not_modified >= 1)
    refresh = [x for _t, h, p, x in loopback_web.hits if h == "etag.test" and p == "/"][-1]
    assert refresh.get("If-None-Match") == ETAG and refresh.get("If-Modified-Since") == MODIFIED
    assert stats.not_modified == 1
    store = SqliteFrontier(tmp_path / "frontier.sqlite3")
    try:
        after = store.schedule_of(root)
    finally:
        store.close()
    assert after is not None and after.http_status == 304
    assert after.unchanged_fetches == 1 and after.fingerprint == first.fingerprint
    assert first.refresh_interval is not None
    assert after.refresh_interval == pytest.approx(first.refresh_interval * RefreshPolicy().grow)
    assert (after.etag, after.digest) == (ETAG, first.digest)
    revisits = [r for r in warc_records(tmp_path) if r[0] == "revisit" and r[1] == root]
    assert len(revisits) == 1
    assert revisits[0][2].rec_headers.get_header("WARC-Profile").endswith("server-not-modified")
    unchanged = [d for d in documents(tmp_path) if d["url"] == root and d.get("unchanged")]
    assert len(unchanged) == 1 and unchanged[0]["warc"]["type"] == "revisit"


def _every_file(out: Path) -> dict[str, bytes]:
    """Every file under OUT, gzip members decompressed."""
    contents = {}
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            contents[str(path.relative_to(out))] = data
    return contents


async def test_no_secret_and_no_personal_datum_reaches_any_file_of_the_output(
    tmp_path, loopback_web
):
    keys = f"http://keys.test:{loopback_web.port}"
    pages = {f"{keys}/", f"{keys}/more", f"{keys}/api.json"}
    crawl = engine(tmp_path, loopback_web, ("keys.test",), LIMIT_S)
    stats = await run_until(crawl, lambda: pages <= urls_written(tmp_path))
    assert {"/", "/more", "/api.json"} <= set(loopback_web.paths("keys.test"))
    assert not any(p.startswith("/contact") for p in loopback_web.paths("keys.test"))
    assert stats.refused["secret-in-url"] >= 1  # /contact?email=: refused, not just not yet
    forbidden = [secret for _kind, _template, secret in KEYS] + [EMAIL, *PHONES]
    forbidden.append(EMAIL.replace("@", "%40"))
    files = _every_file(tmp_path)
    assert any(name.startswith("warc/") for name in files)
    for name, data in files.items():
        for secret in forbidden:
            assert secret.encode() not in data, (name, secret[:12])
    kinds = {kind for kind, _t, _s in KEYS}
    assert kinds <= set(stats.redactions), kinds - set(stats.redactions)
    assert stats.redactions["email"] >= 3 and stats.redactions["phone"] >= 2
    home = next(
        d for d in documents(tmp_path) if d["url"].endswith(f"keys.test:{loopback_web.port}/")
    )
    assert home["title"] == "Keys [REDACTED:email]"
    assert home["redacted"]["google-api-key"] >= 1
    responses = [r for r in warc_records(tmp_path) if r[0] == "response" and r[1] == home["url"]]
    assert responses[0][2].rec_headers.get_header("WARC-Courtier-Redactions")
    robots = [r for r in warc_records(tmp_path) if r[1] == f"{keys}/robots.txt"]
    assert [r[0] for r in robots] == ["response", "request"]
    assert b"# Ask [REDACTED:email]" in robots[0][3]


async def test_a_raw_archive_keeps_what_the_server_sent_and_the_documents_stay_redacted(
    tmp_path, loopback_web
):
    keys = f"http://keys.test:{loopback_web.port}"
    pages = {f"{keys}/", f"{keys}/more", f"{keys}/api.json"}
    crawl = engine(tmp_path, loopback_web, ("keys.test",), LIMIT_S, payload="raw")
    await run_until(crawl, lambda: pages <= urls_written(tmp_path))
    records = {(r[0], r[1]): r for r in warc_records(tmp_path)}
    home = records["response", f"{keys}/"]
    assert home[3] == _secrets_page().encode()  # the bytes the server sent
    assert home[2].rec_headers.get_header("WARC-Courtier-Redactions") is None
    assert EMAIL.encode() in records["response", f"{keys}/robots.txt"][3]
    assert EMAIL.encode() in records["response", f"{keys}/api.json"][3]
    text = json.dumps(documents(tmp_path), ensure_ascii=False)
    assert EMAIL not in text and "[REDACTED:email]" in text


async def test_every_document_names_its_warc_record_and_digests_match(tmp_path, loopback_web):
    await engine(tmp_path, loopback_web, ("latin.test", "bare.test", "www.bare.test"), 3.0).run()
    docs = [d for d in documents(tmp_path) if d.get("status") is not None]
    assert docs and all("warc" in d for d in docs)
    assert not list((tmp_path / "warc").glob("*.open"))  # finished on a clean stop
    records = {
        (name, offset): (kind, uri, record, body)
        for kind, uri, record, body, name, offset in warc_records(tmp_path)
    }

    for doc in docs:
        ref = doc["warc"]
        kind, uri, record, body = records[ref["file"], ref["offset"]]
        assert (kind, uri) == (ref["type"], doc["url"])
        digest = "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
        if kind == "response":
            assert record.rec_headers.get_header("WARC-Payload-Digest") == digest == ref["digest"]
    responses = [d for d in docs if d["warc"]["type"] == "response"]
    assert len(responses) == len({d["url"] for d in responses})  # one response per URL


@pytest.mark.parametrize("flag", [[], ["--no-warc"]])
def test_no_warc_turns_the_archive_off(tmp_path, flag):
    import contextlib
    import io

    from courtier.cli import main

    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1:9/\n")  # discard port: nothing answers
    out = tmp_path / "out"
    args = ["crawl", "--seeds", str(seeds), "--out", str(out), "--duration", "1"]
    with contextlib.redirect_stdout(io.StringIO()):
        code = main([*args, "--allow-net", "127.0.0.0/8", "--json", *flag])
    assert code == 0
    assert (out / "warc").exists() is (not flag)
