"""The render lane's Chromium driver on pages served from memory: what a page's scripts build
is in the HTML, every request reaches the intercept, failures (hangs, crashes, a killed
browser) end the render and not the renderer, and nothing reaches the network."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio

from courtier.render.browser import find_chromium
from courtier.render.intercept import Abort, BrowserRequest, Fulfil
from courtier.render.renderer import Renderer

CHROMIUM = find_chromium(None)
pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="Headless Chromium (Debian's chromium package) is not installed: "
        "render tests need it",
    ),
    pytest.mark.asyncio(loop_scope="module"),
]

HTML = "text/html; charset=utf-8"
JS = "application/javascript"
SPA = """<!doctype html><html><head><title>Shop</title>
<link rel="stylesheet" href="/style.css"><script src="/app.js"></script></head>
<body><img src="/logo.png"><ul id="items"></ul></body></html>"""
APP = """addEventListener("DOMContentLoaded", () => {
  fetch("/api/items").then(r => r.json()).then(items => {
    const list = document.getElementById("items");
    for (const href of items) {
      const a = document.createElement("a");
      a.href = href;
      a.textContent = href;
      list.appendChild(a);
    }
  });
});"""


@dataclass
class Site:
    """Bytes per URL; anything else is aborted as third-party. Every request is recorded."""

    pages: dict[str, tuple[int, tuple[tuple[str, str], ...], bytes]] = field(default_factory=dict)
    delays: dict[str, float] = field(default_factory=dict)
    requests: list[BrowserRequest] = field(default_factory=list)
    on_request: Callable[[BrowserRequest], None] | None = None

    def add(self, url: str, body: str, kind: str = HTML, status: int = 200, **headers: str) -> None:
        extra = tuple((name.replace("_", "-"), value) for name, value in headers.items())
        self.pages[url] = (status, (("Content-Type", kind), *extra), body.encode())

    async def __call__(self, request: BrowserRequest) -> Fulfil | Abort:
        self.requests.append(request)
        if self.on_request is not None:
            self.on_request(request)
        await asyncio.sleep(self.delays.get(request.url, 0.0))
        if request.url not in self.pages:
            return Abort("third-party")
        status, headers, body = self.pages[request.url]
        return Fulfil(status, headers, body)

    def seen(self) -> dict[str, str]:
        return {request.url: request.resource_type for request in self.requests}


def spa() -> Site:
    site = Site()
    site.add("http://spa.test/", SPA)
    site.add("http://spa.test/app.js", APP, JS)
    site.add("http://spa.test/api/items", json.dumps(["/a", "/b"]), "application/json")
    site.add("http://spa.test/style.css", "ul { color: red }", "text/css")
    site.add("http://spa.test/logo.png", "", "image/png")
    return site


def session_processes(root: int) -> list[int]:
    """The processes (zombies included) of a browser's session: its reaper leads it."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.getsid(int(name)) == root:
                    found.append(int(name))
            except ProcessLookupError:
                pass
    return found


def exists(path: str) -> bool:
    return Path(path).exists()


async def gone(root: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while session_processes(root):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def renderer() -> AsyncIterator[Renderer]:
    assert CHROMIUM is not None
    renderer = Renderer(CHROMIUM, page_timeout=10.0, settle=0.2)
    try:
        yield renderer
    finally:
        roots = [browser.reaper for browser in renderer.browsers()]
        directories = [browser.directory for browser in renderer.browsers()]
        await renderer.close()
        assert roots  # the module's renders ran on it
        for root in roots:
            assert session_processes(root) == []
        assert [directory for directory in directories if exists(directory)] == []


async def test_links_a_script_writes_after_a_fetch_are_in_the_html(renderer: Renderer) -> None:
    site = spa()
    result = await renderer.render("http://spa.test/", site)
    assert result.error is None
    assert result.html is not None
    assert '<a href="/a">/a</a><a href="/b">/b</a>' in result.html
    assert result.title == "Shop"
    assert result.final_url == "http://spa.test/"
    assert result.requests == len(site.requests)
    assert renderer.stats.last_rss[0] > 0  # measured after the render
    assert renderer.stats.peak_rss >= renderer.stats.last_rss[0]


async def test_every_request_reaches_the_intercept_with_its_type(renderer: Renderer) -> None:
    site = spa()
    site.add(
        "http://spa.test/app.js",
        APP + 'const x = new XMLHttpRequest(); x.open("POST", "/api/log"); x.send("hi");',
        JS,
    )
    site.add("http://spa.test/api/log", "", "text/plain")
    await renderer.render("http://spa.test/", site)
    seen = site.seen()
    assert seen["http://spa.test/"] == "document"
    assert seen["http://spa.test/app.js"] == "script"
    assert seen["http://spa.test/style.css"] == "stylesheet"
    assert seen["http://spa.test/logo.png"] == "image"
    assert seen["http://spa.test/api/items"] in {"xhr", "fetch"}
    assert seen["http://spa.test/api/log"] in {"xhr", "fetch"}
    navigations = [request.url for request in site.requests if request.navigation]
    assert navigations == ["http://spa.test/"]
    logged = next(r for r in site.requests if r.url.endswith("/api/log"))
    assert (logged.method, logged.body) == ("POST", b"hi")


async def test_an_abort_rejects_the_fetch_and_the_page_goes_on(renderer: Renderer) -> None:
    site = spa()
    site.add(
        "http://spa.test/app.js",
        """// Both outcomes land in the DOM together: a loaded host may run one handler
           // after the DOM was read and not the other.
           Promise.all([
             fetch("/api/private").then(() => "fetched", e => "rejected: " + e.name),
             fetch("/api/broken").then(() => "no error", () => "after the error"),
           ]).then(([outcome, title]) => {
             document.getElementById("items").dataset.outcome = outcome;
             document.title = title;
           });""",
        JS,
    )
    raised: list[str] = []

    def fail(request: BrowserRequest) -> None:
        if request.url.endswith("/api/broken"):
            raised.append(request.url)
            raise RuntimeError("the crawler's own bug")

    site.on_request = fail
    before = renderer.stats.aborted["intercept-error"]
    result = await renderer.render("http://spa.test/", site)
    assert result.error is None and result.html is not None
    assert 'data-outcome="rejected: TypeError"' in result.html
    assert result.title == "after the error"
    assert raised
    assert renderer.stats.aborted["intercept-error"] == before + 1
    assert renderer.stats.aborted["third-party"] >= 1


async def test_answers_chromium_would_refuse_are_mended_or_aborted(renderer: Renderer) -> None:
    site = spa()
    status, headers, body = site.pages["http://spa.test/api/items"]
    site.pages["http://spa.test/api/items"] = (status, (*headers, ("Bad Name", "x")), body)
    site.add("http://spa.test/style.css", "", "text/css", status=42)
    before = renderer.stats.aborted["intercept-error"]
    result = await renderer.render("http://spa.test/", site)
    assert result.error is None and result.html is not None
    assert '<a href="/a">' in result.html  # the malformed header dropped, not the response
    assert renderer.stats.aborted["intercept-error"] == before + 1  # the status refused


async def test_a_cancelled_render_leaves_no_page_behind(renderer: Renderer) -> None:
    site = spa()
    site.delays["http://spa.test/api/items"] = 5.0
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(renderer.render("http://spa.test/", site), 1.0)
    [browser] = renderer.browsers()
    pages: list[object] = ["?"]
    for _ in range(40):
        targets = await browser.connection.send("Target.getTargets")
        pages = [t for t in targets["targetInfos"] if t["url"].startswith("http://spa.test")]
        if not pages:
            break
        await asyncio.sleep(0.05)
    assert pages == []
    after = await renderer.render("http://spa.test/", spa())
    assert after.error is None


async def test_a_fulfilled_redirect_is_asked_for_again(renderer: Renderer) -> None:
    site = spa()
    site.add("http://old.test/", "", status=301, Location="http://spa.test/")
    result = await renderer.render("http://old.test/", site)
    assert result.error is None and result.html is not None
    assert '<a href="/a">' in result.html
    assert result.final_url == "http://spa.test/"
    documents = [(r.url, r.navigation) for r in site.requests if r.resource_type == "document"]
    assert documents == [("http://old.test/", True), ("http://spa.test/", True)]


async def test_an_aborted_document_is_a_navigation_error(renderer: Renderer) -> None:
    result = await renderer.render("http://elsewhere.test/", spa())
    assert result.html is None
    assert result.error is not None and result.error.startswith("navigation:")


async def test_a_slow_intercept_keeps_the_page_unsettled(renderer: Renderer) -> None:
    site = spa()
    site.delays["http://spa.test/api/items"] = 1.5
    result = await renderer.render("http://spa.test/", site)
    assert result.error is None and result.html is not None
    assert '<a href="/b">' in result.html
    assert result.elapsed >= 1.5


async def test_nothing_reaches_the_network(renderer: Renderer) -> None:
    connections: list[object] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer.get_extra_info("peername"))
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    loopback = f"127.0.0.1:{port}"
    site = spa()
    site.add(
        "http://spa.test/",
        f"""<html><body><img src="http://{loopback}/pixel.png"><script>
        const tried = [];
        try {{ new WebSocket("ws://{loopback}/"); tried.push("websocket"); }} catch (e) {{}}
        try {{
          const peer = new RTCPeerConnection({{iceServers: [{{urls: "stun:{loopback}"}}]}});
          peer.createDataChannel("x");
          peer.createOffer().then(offer => peer.setLocalDescription(offer));
          tried.push("webrtc");
        }} catch (e) {{}}
        try {{ navigator.serviceWorker.register("/sw.js"); tried.push("sw"); }} catch (e) {{}}
        navigator.sendBeacon("http://{loopback}/beacon", "bye");
        fetch("http://{loopback}/api").catch(() => {{}});
        document.title = "tried:" + tried.join(",");
        </script></body></html>""",
    )
    try:
        result = await renderer.render("http://spa.test/", site)
        await asyncio.sleep(0.5)  # anything that slipped through has had time to connect
    finally:
        server.close()
        await server.wait_closed()
    assert result.error is None
    assert result.title == "tried:"  # no WebSocket, RTCPeerConnection or service worker
    asked = {request.url for request in site.requests}
    assert {f"http://{loopback}/pixel.png", f"http://{loopback}/beacon"} <= asked
    assert f"http://{loopback}/api" in asked
    assert connections == []


async def test_a_hanging_script_times_out_and_its_browser_is_replaced(
    renderer: Renderer,
) -> None:
    site = spa()
    site.add("http://hang.test/", "<html><body><script>for (;;) {}</script></body></html>")
    await renderer.render("http://spa.test/", site)  # a browser is up
    [old] = renderer.browsers()
    started = renderer.stats.browsers_started
    result = await renderer.render("http://hang.test/", site, timeout=2.0)
    assert result.error == "timeout"
    assert result.html is None
    assert 2.0 <= result.elapsed < 3.5
    assert await gone(old.reaper)
    after = await renderer.render("http://spa.test/", spa())
    assert after.error is None and after.html is not None and '<a href="/a">' in after.html
    assert renderer.stats.browsers_started == started + 1
    assert old not in renderer.browsers()


async def test_a_timeout_while_the_crawler_holds_a_request_keeps_the_browser(
    renderer: Renderer,
) -> None:
    await renderer.render("http://spa.test/", spa())
    browsers = renderer.browsers()
    site = spa()
    site.delays["http://spa.test/api/items"] = 10.0  # the crawler waiting on politeness
    result = await renderer.render("http://spa.test/", site, timeout=1.0)
    assert result.error == "timeout"
    assert renderer.browsers() == browsers


async def test_a_killed_browser_fails_its_render_and_the_next_one_works(
    renderer: Renderer,
) -> None:
    await renderer.render("http://spa.test/", spa())
    [browser] = renderer.browsers()
    site = spa()

    def kill(request: BrowserRequest) -> None:
        if request.url.endswith("/api/items"):
            os.kill(browser.pid, signal.SIGKILL)

    site.on_request = kill
    site.delays["http://spa.test/api/items"] = 5.0
    result = await renderer.render("http://spa.test/", site)
    assert result.error == "browser-lost"
    assert result.elapsed < 3.0
    assert await gone(browser.reaper)  # reaped, its zygotes and renderers too
    after = await renderer.render("http://spa.test/", spa())
    assert after.error is None and after.html is not None
    assert renderer.stats.failures["browser-lost"] >= 1


async def test_a_renderer_crash_fails_its_page_only(renderer: Renderer) -> None:
    await renderer.render("http://spa.test/", spa())
    [browser] = renderer.browsers()
    started = renderer.stats.browsers_started
    site = spa()

    def crash(request: BrowserRequest) -> None:
        if request.url.endswith("/api/items"):
            for pid in session_processes(browser.reaper):
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    if b"--type=renderer" in cmdline.read():
                        os.kill(pid, signal.SIGKILL)

    site.on_request = crash
    site.delays["http://spa.test/api/items"] = 5.0
    result = await renderer.render("http://spa.test/", site)
    assert result.error == "crash"
    assert result.elapsed < 3.0
    after = await renderer.render("http://spa.test/", spa())
    assert after.error is None
    assert renderer.browsers() == [browser]
    assert renderer.stats.browsers_started == started


async def _render_twice(renderer: Renderer) -> list[str | None]:
    try:
        return [(await renderer.render("http://spa.test/", spa())).error for _ in range(2)]
    finally:
        await renderer.close()


async def test_a_browser_is_replaced_over_its_memory_limit_or_after_its_pages() -> None:
    assert CHROMIUM is not None
    bloated = Renderer(CHROMIUM, settle=0.1, memory_limit=1)
    worn = Renderer(CHROMIUM, settle=0.1, pages_before_recycle=1)
    assert await asyncio.gather(_render_twice(bloated), _render_twice(worn)) == [[None] * 2] * 2
    for renderer in (bloated, worn):
        assert renderer.stats.browsers_started == 2
        assert renderer.stats.browsers_replaced == 2
        assert renderer.browsers() == []


async def test_no_browser_when_it_cannot_start(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-chromium")
    assert find_chromium(missing) is None
    renderer = Renderer(missing)
    try:
        result = await renderer.render("http://spa.test/", spa())
    finally:
        await renderer.close()
    assert (result.error, result.html) == ("no-browser", None)
    assert renderer.stats.failures == {"no-browser": 1}


async def test_renders_wait_for_a_place_and_that_wait_is_not_timed() -> None:
    assert CHROMIUM is not None
    renderer = Renderer(CHROMIUM, pages_per_browser=2, settle=0.1)
    site = spa()
    inside = 0
    most = 0

    async def slow_items(request: BrowserRequest) -> Fulfil | Abort:
        nonlocal inside, most
        if not request.url.endswith("/api/items"):
            return await site(request)
        inside += 1
        most = max(most, inside)
        try:
            await asyncio.sleep(0.6)
            return await site(request)
        finally:
            inside -= 1

    try:
        await renderer.render("http://spa.test/", site)  # the browser is up
        start = time.monotonic()
        results = await asyncio.gather(
            *(renderer.render("http://spa.test/", slow_items) for _ in range(4))
        )
        wall = time.monotonic() - start
    finally:
        await renderer.close()
    assert [result.error for result in results] == [None] * 4
    assert most == 2
    assert wall >= 1.2  # two rounds of two pages
    assert max(result.elapsed for result in results) < wall - 0.5


async def test_a_page_that_stalls_before_loading_fails_at_once_one_waiting_on_us_never() -> None:
    assert CHROMIUM is not None
    renderer = Renderer(CHROMIUM, page_timeout=30.0, settle=0.1, stall=1.0)
    site = spa()
    site.add("http://hang.test/", "<html><body><script>for (;;) {}</script></body></html>")
    site.delays["http://spa.test/app.js"] = 2.0  # the crawler booking the page's script
    try:
        hung = await renderer.render("http://hang.test/", site)
        slow = await renderer.render("http://spa.test/", site)
    finally:
        await renderer.close()
    assert hung.error == "timeout" and hung.elapsed < 5.0  # its stall, not its 30 s
    assert slow.error is None and slow.html is not None and '<a href="/a">' in slow.html
    assert slow.elapsed >= 2.0


async def test_every_thread_of_a_browser_runs_at_the_niceness_asked_for() -> None:
    assert CHROMIUM is not None
    renderer = Renderer(CHROMIUM, settle=0.1, nice=10)
    try:
        assert (await renderer.render("http://spa.test/", spa())).error is None
        [browser] = renderer.browsers()
        await asyncio.sleep(1.5)  # a renice pass after the page's renderer started
        threads = [
            int(tid)
            for pid in session_processes(browser.reaper)
            if exists(f"/proc/{pid}/task")
            for tid in os.listdir(f"/proc/{pid}/task")
        ]
        niceness = {tid: os.getpriority(os.PRIO_PROCESS, tid) for tid in threads}
    finally:
        await renderer.close()
    assert niceness and min(niceness.values()) >= 10, niceness
