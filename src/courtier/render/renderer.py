"""Renders pages on a few headless Chromium processes, replacing any that break.

Rules:
- ``browsers`` processes, each rendering at most ``pages_per_browser`` pages at once (a
  retired browser's last pages included); a render waits for a place first, and that wait
  is not part of its time. The whole render (the browser's start when one is needed
  included) is bounded by its timeout, and its page's disposal by two seconds more.
- A browser is retired, taking no new page while a fresh one takes its place, when a render
  on it timed out waiting on the browser (a page that hangs may hang its browser; one that
  timed out while the crawler still held its requests says nothing of the browser), when
  its memory after a render exceeds ``memory_limit``, or when it has rendered
  ``pages_before_recycle`` pages. It is killed once its last page ends, or at once if it
  does not answer within a couple of seconds.
- A browser that dies fails its pages (``browser-lost``); the next render starts a new one.
  A renderer crash fails its page (``crash``); the browser goes on.
- Memory is the resident memory of the browser's process tree not backed by files: every
  Chromium process maps the same executable, which plain RSS would count a dozen times.
- Nothing waits on a browser without a timeout; ``close`` kills every browser, removes their
  profiles and reaps every process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from courtier.render.browser import Browser, BrowserStartError, renice_tree
from courtier.render.cdp import BrowserLost, CdpError
from courtier.render.intercept import Intercept, RenderResult
from courtier.render.page import PageOutcome, render_page

log = logging.getLogger(__name__)

MiB = 1024 * 1024
PING_TIMEOUT = 2.0
RENICE_EVERY = 1.0
"""Seconds between two passes putting the browsers' new processes at ``nice``."""
"""Seconds a retired browser has to answer before it is killed with its pages."""


@dataclass(slots=True)
class RendererStats:
    renders: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    """Failed renders by error (``timeout``, ``crash``, ``browser-lost``, ...)."""
    aborted: Counter[str] = field(default_factory=Counter)
    """Requests the crawler aborted, by reason (``intercept-error``: the intercept raised)."""
    browsers_started: int = 0
    browsers_replaced: int = 0
    """Browsers retired or lost (a fresh one takes the place of each)."""
    peak_rss: int = 0
    """Bytes: the most any browser held after a render (see ``Usage.rss``)."""
    last_rss: dict[int, int] = field(default_factory=dict)
    """Bytes each browser (by place: 0 .. browsers-1) held after its last render."""


@dataclass(eq=False, slots=True)
class _Instance:
    browser: Browser
    pages: int = 0
    active: int = 0
    retired: bool = False


@dataclass(eq=False, slots=True)
class _Place:
    index: int
    instance: _Instance | None = None
    launching: asyncio.Task[_Instance] | None = None
    active: int = 0


class Renderer:
    def __init__(
        self,
        executable: str,
        *,
        browsers: int = 1,
        pages_per_browser: int = 4,
        page_timeout: float = 30.0,
        settle: float = 0.5,
        stall: float = 10.0,
        nice: int = 0,
        memory_limit: int = 768 * MiB,
        pages_before_recycle: int = 200,
    ) -> None:
        if browsers < 1 or pages_per_browser < 1:
            raise ValueError("a renderer needs at least one browser and one page per browser")
        self.executable = executable
        self.pages_per_browser = pages_per_browser
        self.page_timeout = page_timeout
        self.settle = settle
        self.stall = stall
        self.nice = nice
        """Niceness of the browsers (0-19): on busy cores the crawl runs first."""
        self.memory_limit = memory_limit
        self.pages_before_recycle = pages_before_recycle
        self.stats = RendererStats()
        self._places = [_Place(index) for index in range(browsers)]
        self._room = asyncio.Semaphore(browsers * pages_per_browser)
        self._retired: set[_Instance] = set()
        self._ending: set[asyncio.Task[None]] = set()
        self._closed = False
        self._renicing: asyncio.Task[None] | None = None

    async def render(
        self,
        url: str,
        intercept: Intercept,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 -- the seam's per-render budget
    ) -> RenderResult:
        """``url`` rendered, every request it makes answered by ``intercept``."""
        budget = self.page_timeout if timeout is None else timeout
        async with self._room:
            start = time.monotonic()
            # The least busy place has room: at most browsers * pages_per_browser run at once.
            place = min(self._places, key=lambda candidate: candidate.active)
            place.active += 1
            try:
                result = await self._render_at(place, url, intercept, start + budget)
            finally:
                place.active -= 1
        self.stats.renders += 1
        if result.error is not None:
            self.stats.failures[result.error.split(":", 1)[0]] += 1
        return result

    def browsers(self) -> list[Browser]:
        """The browsers running now: those taking pages, and retired ones not yet killed."""
        instances = [place.instance for place in self._places if place.instance is not None]
        return [instance.browser for instance in [*instances, *self._retired]]

    async def _renice(self) -> None:
        """Keep every browser's processes at ``nice`` (see ``browser.renice_tree``)."""
        while not self._closed:
            for browser in self.browsers():
                await asyncio.to_thread(renice_tree, browser.reaper, self.nice)
            await asyncio.sleep(RENICE_EVERY)

    async def close(self) -> None:
        """Kill every browser (their renders end as ``browser-lost``) and reap them."""
        self._closed = True
        if self._renicing is not None:
            self._renicing.cancel()
        for place in self._places:
            if place.launching is not None:
                place.launching.cancel()
                await asyncio.gather(place.launching, return_exceptions=True)
            if place.instance is not None:
                self._retired.add(place.instance)
                place.instance = None
        for instance in list(self._retired):
            self._end(instance)
        while self._ending:
            await asyncio.gather(*self._ending, return_exceptions=True)

    async def _render_at(
        self, place: _Place, url: str, intercept: Intercept, deadline: float
    ) -> RenderResult:
        start = time.monotonic()
        try:
            instance = await asyncio.wait_for(self._instance(place), deadline - start)
        except (BrowserStartError, TimeoutError, BrowserLost) as error:
            log.warning("render: no browser for %s: %r", url, error)
            return RenderResult(url, None, error="no-browser", elapsed=time.monotonic() - start)
        instance.pages += 1
        instance.active += 1
        try:
            outcome = await render_page(
                instance.browser.connection,
                url,
                intercept,
                settle=self.settle,
                stall=self.stall,
                budget=max(0.0, deadline - time.monotonic()),
            )
            self._after(outcome, instance, place)
        finally:
            instance.active -= 1
            if instance.retired and instance.active == 0:
                self._end(instance)  # its last page has ended
        result = outcome.result
        return RenderResult(
            url=result.url,
            html=result.html,
            error=result.error,
            elapsed=time.monotonic() - start,
            requests=result.requests,
            title=result.title,
            final_url=result.final_url,
        )

    def _after(self, outcome: PageOutcome, instance: _Instance, place: _Place) -> None:
        """Retire the browser if the render showed it broken, bloated or worn."""
        self.stats.aborted.update(outcome.aborted)
        result = outcome.result
        if outcome.unresponsive or not instance.browser.alive:
            self._retire(instance, place, "does not answer" if outcome.unresponsive else "lost")
            self._end(instance)
        elif result.error == "timeout" and not outcome.held:
            # The page waited on the browser, not on the crawler: it may hang the browser.
            self._retire(instance, place, "a render timed out")
            self._ping_or_end(instance)
        else:
            rss = instance.browser.usage().rss
            self.stats.last_rss[place.index] = rss
            self.stats.peak_rss = max(self.stats.peak_rss, rss)
            if rss > self.memory_limit:
                self._retire(instance, place, f"holds {rss // MiB} MiB")
            elif instance.pages >= self.pages_before_recycle:
                self._retire(instance, place, f"rendered {instance.pages} pages")

    async def _instance(self, place: _Place) -> _Instance:
        if self._closed:
            raise BrowserLost("the renderer is closed")
        instance = place.instance
        if instance is not None and not instance.browser.alive:
            self._retire(instance, place, "lost")
            self._end(instance)
            instance = None
        if instance is not None:
            return instance
        if place.launching is None:
            place.launching = asyncio.create_task(self._launch(place))
            # Every render waiting for it may have given up: its failure is still read.
            place.launching.add_done_callback(_read_failure)
        # Shielded: a render whose budget runs out leaves the launch to the next render.
        return await asyncio.shield(place.launching)

    async def _launch(self, place: _Place) -> _Instance:
        try:
            browser = await Browser.launch(self.executable, nice=self.nice)
            if self.nice and self._renicing is None:
                self._renicing = asyncio.create_task(self._renice())
            self.stats.browsers_started += 1
            instance = _Instance(browser)
            if self._closed:
                self._retired.add(instance)
                self._end(instance)
                raise BrowserLost("the renderer is closed")
            place.instance = instance
            return instance
        finally:
            place.launching = None

    def _retire(self, instance: _Instance, place: _Place, why: str) -> None:
        if instance.retired:
            return
        instance.retired = True
        self._retired.add(instance)
        if place.instance is instance:
            place.instance = None
        self.stats.browsers_replaced += 1
        log.info("render: browser %d retired: %s", instance.browser.pid, why)

    def _ping_or_end(self, instance: _Instance) -> None:
        """A retired browser that does not answer is killed now, its pages with it."""

        async def ping() -> None:
            try:
                await instance.browser.connection.send("Browser.getVersion", timeout=PING_TIMEOUT)
            except (TimeoutError, BrowserLost, CdpError):
                self._end(instance)

        self._track(ping())

    def _end(self, instance: _Instance) -> None:
        if instance not in self._retired:
            return  # ended already
        self._retired.discard(instance)
        self._track(instance.browser.close())

    def _track(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)


def _read_failure(task: asyncio.Task[_Instance]) -> None:
    if not task.cancelled():
        task.exception()
