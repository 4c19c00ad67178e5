"""The render lane's engine side (``pipeline.lanes.rendering``) with a scripted browser: every
request a render makes is booked on its site, spaced, guarded, cached and archived, judged
from the server's log. No Chromium here (``tests/render`` drives the real one)."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from test_crawler import run_until
from warcio.archiveiterator import ArchiveIterator

from courtier.config import Config, CrawlSection, KeyLimits, LimitsSection, RenderSection
from courtier.frontier.controls import ControlAction, SiteControl
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.inputs import parse_seed_lines
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import StaticResolver
from courtier.pipeline.engine import Engine
from courtier.pipeline.events import RequestEvent
from courtier.pipeline.wiring import NO_BROWSER
from courtier.render.intercept import Abort, BrowserRequest, Fulfil, Intercept, RenderResult
from courtier.sinks.documents import read_documents
from courtier.url import parse_url
from loopback import serving

INTERVAL = 0.1
SHELL = (
    "<!doctype html><html><head><title>Loading</title>"
    '<script src="/static/app.js"></script></head>'
    '<body><div id="app"></div><a href="/about">About</a>'
    "<noscript>Enable JavaScript.</noscript></body></html>"
)


CONTACT = "agent.smith@example.org"
"""In every API answer: redacted before it is archived."""


@dataclass
class SpaWeb:
    port: int = 0
    hits: list[tuple[float, str, str, dict[str, str]]] = field(default_factory=list)
    open_now: int = 0
    most_open: int = 0
    throttled: dict[str, int] = field(default_factory=dict)
    """Paths answered 429 (Retry-After: 1) this many times first."""
    slow: dict[str, float] = field(default_factory=dict)
    """Paths answered after this many seconds (any other: 20 ms)."""

    def paths(self, host: str) -> list[str]:
        return [path for _t, h, path, _headers in self.hits if h == host]


@pytest.fixture
async def spa_web() -> AsyncIterator[SpaWeb]:
    state = SpaWeb()

    async def handler(request: web.Request) -> web.StreamResponse:
        host = request.host.rsplit(":", 1)[0]
        path = request.path_qs
        state.hits.append((time.monotonic(), host, path, dict(request.headers)))
        state.open_now += 1
        state.most_open = max(state.most_open, state.open_now)
        try:
            # (20 ms: long enough for a second request to overlap)
            await asyncio.sleep(state.slow.get(path, 0.02))
            if state.throttled.get(path, 0) > 0:
                state.throttled[path] -= 1
                return web.Response(status=429, headers={"Retry-After": "1"})
            return _answer(host, path, request)
        finally:
            state.open_now -= 1

    async with serving(handler) as state.port:
        yield state


CDN = "d1.cloudfront.net"
"""A media host by its name (a CDN's per-customer edge): the app's bundle lives there."""
API = "api.test"
"""The app's API on a host of its own, outside the seed: ``[render] hosts`` names it."""


def _answer(host: str, path: str, request: web.Request) -> web.Response:
    if host in (CDN, API):
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /private/\n")
        headers = {"Cache-Control": "max-age=600"}
        return web.Response(text=f"{host}{path}", content_type="text/plain", headers=headers)
    if host != "spa.test":
        return web.Response(status=418, text="never")
    if path == "/robots.txt":
        return web.Response(text="User-agent: *\nDisallow: /api/secret\n")
    if path == "/api/slow":
        return web.Response(text=f"{host}{path}", content_type="text/plain")
    if path == "/static/app.js":
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        return web.Response(
            text="render()",
            content_type="application/javascript",
            headers={"ETag": '"v1"', "Cache-Control": "max-age=0"},
        )
    if path.startswith("/api/list/"):
        n = int(path.rsplit("/", 1)[1])
        items = [{"id": i} for i in range(n * 3 - 2, n * 3 + 1)]
        listing = {"items": items, "next": n + 1 if n < 3 else None, "agent": CONTACT}
        return web.json_response(listing)
    return web.Response(text=SHELL, content_type="text/html")


class ScriptedBrowser:
    """What a browser would do with the shell: load its document and its script, call the
    API, try a tracker, a metadata address and a disallowed path, write links."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.answers: list[tuple[str, Fulfil | Abort]] = []
        self.renders = 0
        self.extra: list[tuple[str, str]] = []
        """More requests each render makes: (URL, type), ``{port}`` in the URL filled."""

    async def render(
        self,
        url: str,
        intercept: Intercept,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> RenderResult:
        started = time.monotonic()
        self.renders += 1
        base = f"http://spa.test:{self.port}"

        async def ask(target: str, kind: str, navigation: bool = False) -> Fulfil | Abort:
            request = BrowserRequest(target, "GET", kind, {"Accept": "*/*"}, None, navigation)
            answer = await intercept(request)
            self.answers.append((target, answer))
            return answer

        document = await ask(url, "document", navigation=True)
        assert isinstance(document, Fulfil) and b'id="app"' in document.body
        script = await ask(f"{base}/static/app.js", "script")
        assert isinstance(script, Fulfil) and script.body == b"render()"
        await ask(f"http://tracker.test:{self.port}/t.js", "script")
        await ask("http://169.254.169.254/latest/meta-data/", "fetch")
        await ask(f"{base}/api/secret", "fetch")
        await ask(f"{base}/logo.png", "image")
        for target, kind in self.extra:
            await ask(target.format(port=self.port), kind)
        page = url.rstrip("/").rsplit("/", 1)[-1]
        n = int(page) if page.isdigit() else 1
        data = await ask(f"{base}/api/list/{n}", "fetch")
        assert isinstance(data, Fulfil)
        listing = json.loads(data.body) if data.status == 200 else {"items": [], "next": None}
        links = ['<a href="/about">About</a>']  # the shell's own link stays in the DOM
        links += [f'<a href="/item/{item["id"]}">i</a>' for item in listing["items"]]
        if listing["next"]:
            links.append(f'<a href="/list/{listing["next"]}">next</a>')
        # The app shows what its API answered, e-mail address and all.
        links.append(f"<p>Write to {listing.get('agent', '')}</p>")
        html = f"<html><head><title>List {n}</title></head><body>{''.join(links)}</body></html>"
        return RenderResult(url, html, None, time.monotonic() - started, 7)


class Events:
    def __init__(self) -> None:
        self.seen: list[RequestEvent] = []

    def request(self, event: RequestEvent) -> None:
        self.seen.append(event)


def _engine(
    tmp_path: Path,
    web_: SpaWeb,
    browser: ScriptedBrowser,
    observer: Events | None = None,
    paths: tuple[str, ...] = ("/",),
    **render: Any,
) -> Engine:
    config = Config(
        crawl=replace(CrawlSection(), flush_interval=0.05),
        limits=replace(
            LimitsSection(),
            site=KeyLimits(1.0 / INTERVAL, slot_width=0.05),
            origin=KeyLimits(1000.0, slot_width=0.05),
        ),
        render=replace(RenderSection(), **render),
    )
    policy = AddressPolicy(allow=["127.0.0.1/32"])
    guard = Guard(
        policy,
        StaticResolver({h: ["127.0.0.1"] for h in ("spa.test", "tracker.test", CDN, API)}),
    )
    seeds, errors = parse_seed_lines([f"http://spa.test:{web_.port}{path}" for path in paths])
    assert not errors
    return Engine(
        config,
        store_path=tmp_path / "frontier.sqlite3",
        out_dir=tmp_path,
        guard=guard,
        address_allowed=lambda address: policy.check(address).allowed,
        seeds=seeds,
        duration=30.0,
        renderer=browser,
        observer=observer,
    )


def _documents(tmp_path: Path) -> list[dict[str, Any]]:
    return list(read_documents(tmp_path))


def _archived(tmp_path: Path) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The crawl's WARC records by target: (responses, conversions), their payloads."""
    responses: dict[str, bytes] = {}
    conversions: dict[str, bytes] = {}
    for path in (tmp_path / "warc").glob("*.warc.gz"):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                target = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "response":
                    responses[target] = record.content_stream().read()
                elif record.rec_type == "conversion":
                    conversions[target] = record.content_stream().read()
    return responses, conversions


async def test_a_shell_is_rendered_through_booked_spaced_guarded_requests(tmp_path, spa_web):
    browser = ScriptedBrowser(spa_web.port)
    events = Events()
    engine = _engine(tmp_path, spa_web, browser, events, paths=("/", "/list/2", "/list/3"))
    items = {f"/item/{i}" for i in range(1, 10)}

    def done() -> bool:
        return items | {"/about"} <= set(spa_web.paths("spa.test"))

    stats = await run_until(engine, done)
    assert done(), spa_web.paths("spa.test")
    paths = spa_web.paths("spa.test")
    # The links only the rendered DOM had were followed; the shell itself was fetched once.
    assert paths.count("/") == 1
    assert {"/list/2", "/list/3"} <= set(paths)
    # Nothing left the seed, robots.txt held for the render's requests too, images waited
    # for the media lanes.
    assert spa_web.paths("tracker.test") == []
    assert "/api/secret" not in paths and "/logo.png" not in paths
    # One request at a time, spaced: the render's requests were the site's next starts.
    assert spa_web.most_open == 1
    times = [t for t, h, _p, _headers in spa_web.hits if h == "spa.test"]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= INTERVAL - 0.03
    # The script was fetched, then asked again with its validator (max-age=0): a 304.
    script_hits = [h for _t, _h, p, h in spa_web.hits if p == "/static/app.js"]
    assert len(script_hits) >= 2
    # (renders that began together waited for one fetch of it)
    assert "If-None-Match" not in script_hits[0]
    assert all(h.get("If-None-Match") == '"v1"' for h in script_hits[1:])
    reasons = {
        (target.split("/")[2], answer.reason)
        for target, answer in browser.answers
        if isinstance(answer, Abort)
    }
    assert (f"tracker.test:{spa_web.port}", "third-party") in reasons
    assert ("169.254.169.254", "guard:link-local") in {(h, r) for h, r in reasons}
    assert (f"spa.test:{spa_web.port}", "robots") in reasons
    assert (f"spa.test:{spa_web.port}", "type") in reasons
    assert stats.renders["rendered"] >= 3
    home = next(d for d in _documents(tmp_path) if d["url"].endswith(f"{spa_web.port}/"))
    render = home["render"]
    assert render["rendered"] is True and render["decision"].startswith("auto: shell")
    assert render["fetched"] >= 2 and render["aborted"]["third-party"] == 1
    assert home["title"] == "List 1"
    # The request log says which page each render request served, and why it was rendered.
    api = next(e for e in events.seen if e.url.endswith("/api/list/1"))
    assert (api.context.kind, api.context.lane) == ("render", "fetch")
    assert api.context.render_page == home["url"]
    assert api.context.render_decision == render["decision"]
    assert any(link.endswith("/item/1") for link in home["links"])


async def test_never_renders_nothing_and_the_shell_yields_nothing(tmp_path, spa_web):
    browser = ScriptedBrowser(spa_web.port)
    engine = _engine(tmp_path, spa_web, browser, mode="never")
    await run_until(engine, lambda: "/" in spa_web.paths("spa.test"))
    await asyncio.sleep(0)
    assert browser.renders == 0
    assert not any(p.startswith("/item/") for p in spa_web.paths("spa.test"))


async def test_a_shell_without_a_browser_says_so_once_and_in_its_document(
    tmp_path, spa_web, monkeypatch, caplog
):
    monkeypatch.setattr("courtier.pipeline.wiring.find_chromium", lambda _configured: None)
    engine = _engine(tmp_path, spa_web, ScriptedBrowser(spa_web.port))
    engine._renderer = None  # the default: Chromium, of which this machine now has none

    def home_written() -> bool:
        return any(True for _ in read_documents(tmp_path))

    stats = await run_until(engine, home_written)
    assert [r.message for r in caplog.records].count(NO_BROWSER) == 1
    # (the shell's own link may be fetched before the crawl stops: a shell as well)
    documents = _documents(tmp_path)
    home = next(d for d in documents if d["url"].endswith(f"{spa_web.port}/"))
    assert home["render"] == {"decision": home["render"]["decision"], "rendered": False}
    assert home["render"]["decision"].endswith("; no browser")
    assert stats.renders["not-rendered"] == len([d for d in documents if "render" in d])


async def test_an_operators_site_render_overrides_a_crawl_that_renders_nothing(tmp_path, spa_web):
    """``courtier site render SITE --mode always`` in the store, ``[render] mode = never`` in
    the configuration: the site's shell is rendered, and its document says on whose word."""
    site = parse_url(f"http://spa.test:{spa_web.port}/").site
    store = SqliteFrontier(tmp_path / "frontier.sqlite3")
    try:
        control = SiteControl(site).rendering(time.time(), "always", None)
        store.record_control(ControlAction("site render", site, {}, "t", "me", 0.0), control)
    finally:
        store.close()
    browser = ScriptedBrowser(spa_web.port)
    engine = _engine(tmp_path, spa_web, browser, mode="never")
    await run_until(engine, lambda: "/item/1" in spa_web.paths("spa.test"))
    assert browser.renders >= 1
    home = next(d for d in _documents(tmp_path) if d["url"].endswith(f"{spa_web.port}/"))
    assert home["render"]["rendered"] is True
    assert home["render"]["decision"] == f"always (operator's site {site})"


async def test_a_renders_429_backs_its_site_off_and_its_answers_are_archived_redacted(
    tmp_path, spa_web
):
    """An API call of a render answered 429 with Retry-After: the site's next request of any
    kind waits for it, as after a page's 429. Every answer of a render is in the WARC, the
    API's with its e-mail address redacted, and the rendered DOM as the page's conversion."""
    spa_web.throttled["/api/list/1"] = 1
    browser = ScriptedBrowser(spa_web.port)
    engine = _engine(tmp_path, spa_web, browser, paths=("/", "/list/2"))
    await run_until(engine, lambda: "/item/4" in spa_web.paths("spa.test"))
    hits = [(t, p) for t, h, p, _headers in spa_web.hits if h == "spa.test"]
    throttled_at = next(t for t, p in hits if p == "/api/list/1")
    after = [t for t, _p in hits if t > throttled_at]
    assert after and after[0] - throttled_at >= 0.95, hits  # the interval alone is 0.1 s
    responses, conversions = _archived(tmp_path)
    base = f"http://spa.test:{spa_web.port}"
    assert {f"{base}/static/app.js", f"{base}/api/list/1", f"{base}/api/list/2"} <= set(responses)
    assert CONTACT.encode() not in responses[f"{base}/api/list/2"]
    assert b"[REDACTED:email]" in responses[f"{base}/api/list/2"]
    # The rendered DOM is a record of its own: the page's conversion, with the links, and
    # redacted like any page: the address the app wrote into it is not there.
    dom = conversions[f"{base}/list/2"]
    assert b'href="/item/4"' in dom
    assert CONTACT.encode() not in dom and b"[REDACTED:email]" in dom


async def test_requests_to_media_hosts_and_named_hosts_are_booked_on_their_own_keys(
    tmp_path, spa_web
):
    """A render's script on a CDN's edge name and its API calls on a host ``[render] hosts``
    names go through the media lanes: robots.txt first, booked on the host's keys (the CDN
    and its customer's misses; the named host's own site key, spaced, one in flight), the
    script fetched once for every render. Any other host outside the seed is aborted."""
    browser = ScriptedBrowser(spa_web.port)
    browser.extra = [
        (f"http://{CDN}:{{port}}/app/bundle.js", "script"),
        (f"http://{API}:{{port}}/v1/data", "fetch"),
        (f"http://{API}:{{port}}/private/me", "fetch"),
        ("http://tracker.test:{port}/api", "fetch"),
    ]
    events = Events()
    paths = ("/", "/list/2", "/list/3")
    engine = _engine(tmp_path, spa_web, browser, events, paths=paths, hosts=(API,))
    await run_until(engine, lambda: spa_web.paths(API).count("/v1/data") >= 3)
    assert spa_web.paths(CDN) == ["/robots.txt", "/app/bundle.js"]  # then from the cache
    api = spa_web.paths(API)
    assert api[0] == "/robots.txt" and "/private/me" not in api
    assert spa_web.paths("tracker.test") == []
    times = [t for t, h, _p, _headers in spa_web.hits if h == API]
    assert min(b - a for a, b in itertools.pairwise(times)) >= INTERVAL - 0.03
    outcomes: dict[tuple[str, str], list[Fulfil | Abort]] = {}
    for target, answer in browser.answers:
        name = (target.split("/")[2].split(":")[0], target.rsplit("/", 1)[1])
        outcomes.setdefault(name, []).append(answer)
    bundles = outcomes[CDN, "bundle.js"]
    assert len(bundles) >= 3 and all(isinstance(a, Fulfil) for a in bundles)
    assert {a.body for a in bundles} == {b"d1.cloudfront.net/app/bundle.js"}  # type: ignore[union-attr]
    assert all(isinstance(a, Fulfil) and a.status == 200 for a in outcomes[API, "data"])
    assert set(outcomes[API, "me"]) <= {Abort("robots"), Abort("stopping")}
    assert Abort("robots") in outcomes[API, "me"]
    assert set(outcomes["tracker.test", "api"]) <= {Abort("third-party"), Abort("stopping")}
    rendered = {e.url.split("/")[2].split(":")[0]: e.context for e in events.seen
                if e.context.kind == "render"}  # fmt: skip
    cdn_keys = set(rendered[CDN].keys)
    assert "cdn:cloudfront.net" in cdn_keys and any(k.startswith("cdn-miss:") for k in cdn_keys)
    # (an expected miss reaches the app's origin: booked on it too)
    assert any(k.startswith("origin:") for k in cdn_keys), cdn_keys
    assert rendered[API].keys == (f"site:{API}:{spa_web.port}",)
    # What the media lanes fetched for the renders is archived like the site's requests.
    responses, _conversions = _archived(tmp_path)
    bundle, data = (
        f"http://{CDN}:{spa_web.port}/app/bundle.js",
        f"http://{API}:{spa_web.port}/v1/data",
    )
    assert responses[bundle] == b"d1.cloudfront.net/app/bundle.js"
    assert responses[data] == b"api.test/v1/data"
    # Costs: a script an image's, whatever its URL; an API call its page's (an index page's
    # here), dearer than its own URL's class (a detail's).
    assert (rendered[CDN].cost, rendered[API].cost) == (1.0, 4.0)
    assert rendered[API].render_decision.startswith("auto: shell")


class GivingUpBrowser:
    """A page whose time runs out while two of its requests are out: an API call on its own
    site and one on a host ``[render] hosts`` names, both answered only after that."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.answers: list[Fulfil | Abort] = []
        self.done_at: float | None = None

    async def render(
        self,
        url: str,
        intercept: Intercept,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> RenderResult:
        started = time.monotonic()
        await intercept(BrowserRequest(url, "GET", "document", {}, None, True))
        slow = (f"http://spa.test:{self.port}/api/slow", f"http://{API}:{self.port}/v1/slow")
        asks = [intercept(BrowserRequest(u, "GET", "fetch", {}, None, False)) for u in slow]
        self.answers = list(await asyncio.gather(*asks))
        self.done_at = time.monotonic()
        html = "<html><head><title>Gave up</title></head><body></body></html>"
        return RenderResult(url, html, None, self.done_at - started, 3)


async def test_a_renders_request_answered_after_it_gave_up_is_archived_all_the_same(
    tmp_path, spa_web
):
    """The render's time runs out while a request of its site and one through a media lane
    are out: the browser is told ``budget``, and both answers, once they come, are redacted
    and archived: every request a render sent is in the WARC."""
    slow = 1.0
    spa_web.slow.update({"/api/slow": slow, "/v1/slow": slow})
    browser = GivingUpBrowser(spa_web.port)
    engine = _engine(tmp_path, spa_web, browser, hosts=(API,), page_timeout=0.6)

    def answered() -> bool:
        hits = [t for t, _h, path, _headers in spa_web.hits if path in spa_web.slow]
        return len(hits) == 2 and time.monotonic() > max(hits) + slow + 0.5

    await run_until(engine, answered)
    assert answered(), spa_web.hits
    assert browser.answers == [Abort("budget"), Abort("budget")]
    responses, _conversions = _archived(tmp_path)
    base, api = f"http://spa.test:{spa_web.port}", f"http://{API}:{spa_web.port}"
    assert responses[f"{base}/api/slow"] == b"spa.test/api/slow"
    assert responses[f"{api}/v1/slow"] == b"api.test/v1/slow"
