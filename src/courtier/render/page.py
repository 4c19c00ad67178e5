"""One render on one browser: a fresh context and page, every request paused and answered by
the crawler, the DOM read once the page has settled.

Rules:
- Each render has a browser context of its own (cookies, storage and cache die with it) and
  a page in it; both are disposed of when the render ends, however it ends.
- Every request is paused before it is sent (``Fetch`` at stage Request, pattern ``*``):
  the page's document, its subresources, its dedicated workers' (they go through the page's
  interception), and those of its out-of-process frames (attached as they appear, paused
  until their interception is on). Workers lose what frames lose (``NO_NETWORK_SCRIPT``)
  before their own script runs. Each request becomes a
  ``BrowserRequest`` answered by the intercept in a task of its own; a raising intercept is
  an ``Abort("intercept-error")``, and so is an answer Chromium refuses (a status it does not
  take). The fulfilled body is the decoded entity: transfer and content encodings and
  lengths in the headers given are dropped, and so are malformed headers.
- A fulfilled 3xx with a Location is followed by the browser, whose next request is paused
  and handed to the intercept again.
- Settled: the load event has fired after navigating, and no paused request has been
  outstanding for ``settle`` seconds (one waiting on the crawler keeps the page unsettled).
- Stalled: before its load event, a page that has had no request outstanding for ``stall``
  seconds is hung (a script in an endless loop asks for nothing and never loads): it fails
  as ``timeout`` then, not at its deadline, so it does not hold a place the budget of a
  slow page would (a page waiting on the crawler is never stalled).
- Every wait is bounded by the render's deadline, and watches for a renderer crash
  (``crash``) and the browser's loss (``browser-lost``). Closing the context waits a couple
  of seconds at most: a browser that does not answer by then is reported ``unresponsive``.
- Requests still waiting on the intercept when the render ends are cancelled.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import math
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from courtier.render.browser import NO_NETWORK_SCRIPT
from courtier.render.cdp import BrowserLost, CdpError, Connection
from courtier.render.fulfil import fulfilment
from courtier.render.intercept import Abort, BrowserRequest, Fulfil, Intercept, RenderResult

log = logging.getLogger(__name__)

CLEANUP_TIMEOUT = 2.0
"""Seconds the browser has to dispose of a render's context before it counts as
unresponsive."""
ANSWER_TIMEOUT = 5.0
"""Seconds the browser has to take an answer to a paused request."""
_PATTERNS = {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}
_AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
_READ_DOM = (
    "[document.documentElement ? document.documentElement.outerHTML : null,"
    " document.title, location.href]"
)

T = TypeVar("T")


class _Broken(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PageOutcome:
    result: RenderResult
    unresponsive: bool = False
    """The browser did not answer while the render was cleaned up: kill it now."""
    aborted: tuple[str, ...] = ()
    """The reasons of the requests the crawler aborted (``intercept-error`` included)."""
    held: bool = False
    """The intercept still held some of the page's requests when the render ended: a
    timeout then is the crawler's slowness, not the browser's."""


class _Page:
    def __init__(
        self, connection: Connection, url: str, intercept: Intercept, settle: float, stall: float
    ):
        self.connection = connection
        self.url = url
        self.intercept = intercept
        self.settle = settle
        self.stall = stall
        self.target_id = ""
        self.sessions: list[str] = []
        self.navigating = False
        self.loaded = asyncio.Event()
        self.changed = asyncio.Event()
        self.broken: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.outstanding = 0
        self.quiet_since = time.monotonic()
        self.requests = 0
        self.aborted: list[str] = []
        self.tasks: set[asyncio.Task[None]] = set()

    def listen(self, session_id: str) -> None:
        self.sessions.append(session_id)
        self.connection.on(
            session_id, lambda method, params: self.event(session_id, method, params)
        )

    def event(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        if method == "Fetch.requestPaused":
            self.spawn(self.answer(session_id, params))
        elif method == "Page.loadEventFired" and session_id == self.sessions[0]:
            if self.navigating:
                self.loaded.set()
                self.changed.set()
        elif method == "Target.attachedToTarget":
            self.spawn(self.attach(params))
        elif method == "Inspector.targetCrashed" and not self.broken.done():
            self.broken.set_result("crash")

    def spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def answer(self, session_id: str, params: dict[str, Any]) -> None:
        self.outstanding += 1
        self.requests += 1
        self.changed.set()
        url = params.get("request", {}).get("url")
        send = self.connection.send
        try:
            answer: object
            try:
                answer = await self.intercept(self.browser_request(params))
            except Exception:
                log.warning("render: the intercept failed on %s", url, exc_info=True)
                answer = None
            if isinstance(answer, Fulfil):
                try:
                    message = fulfilment(params["requestId"], answer)
                    await send("Fetch.fulfillRequest", message, session_id, timeout=ANSWER_TIMEOUT)
                    return
                except CdpError as refused:
                    # A status or header Chromium will not take: the request must still be
                    # answered, or the page waits for it until its deadline.
                    log.warning("render: Chromium refused the answer to %s: %s", url, refused)
                    answer = None
            self.aborted.append(answer.reason if isinstance(answer, Abort) else "intercept-error")
            failure = {"requestId": params["requestId"], "errorReason": "BlockedByClient"}
            await send("Fetch.failRequest", failure, session_id, timeout=ANSWER_TIMEOUT)
        except (CdpError, BrowserLost, TimeoutError) as error:
            # The page, its frame or the whole browser went meanwhile: nobody waits for it.
            log.debug("render: an answer was not taken: %r", error)
        finally:
            self.outstanding -= 1
            self.quiet_since = time.monotonic()
            self.changed.set()

    def browser_request(self, params: dict[str, Any]) -> BrowserRequest:
        request = params["request"]
        resource_type = str(params.get("resourceType", "Other")).lower()
        body: bytes | None = None
        entries = request.get("postDataEntries")
        if entries:
            body = b"".join(base64.b64decode(entry.get("bytes", "")) for entry in entries)
        elif "postData" in request:
            body = str(request["postData"]).encode()
        return BrowserRequest(
            url=request["url"],
            method=request.get("method", "GET"),
            resource_type=resource_type,
            headers=dict(request.get("headers") or {}),
            body=body,
            # The main frame's id is its page's target id.
            navigation=resource_type == "document" and params.get("frameId") == self.target_id,
        )

    async def attach(self, params: dict[str, Any]) -> None:
        """A frame in another process, or a worker, waits for us: pause its requests too."""
        session_id = params["sessionId"]
        kind = params.get("targetInfo", {}).get("type", "")
        self.listen(session_id)
        send = self.connection.send
        try:
            if kind == "iframe":
                await asyncio.gather(
                    send("Fetch.enable", _PATTERNS, session_id),
                    send("Page.enable", None, session_id),
                    _add_script(self.connection, session_id),
                    send("Target.setAutoAttach", _AUTO_ATTACH, session_id),
                )
            else:
                # A worker's requests are paused by its page's interception, but it has no
                # new-document scripts: its global is stripped before its own script runs.
                await send(
                    "Runtime.evaluate", {"expression": NO_NETWORK_SCRIPT}, session_id, timeout=2.0
                )
        except (CdpError, BrowserLost, TimeoutError) as error:
            log.debug("render: a %s target was not set up: %r", kind, error)
        with contextlib.suppress(CdpError, BrowserLost, TimeoutError):
            await send("Runtime.runIfWaitingForDebugger", None, session_id)

    async def guard(self, awaitable: Awaitable[T], within: float | None = None) -> T:
        """``awaitable``'s result, unless the page crashes or the browser goes first, or
        ``within`` seconds pass (``TimeoutError``)."""
        task = asyncio.ensure_future(awaitable)
        try:
            await asyncio.wait(
                (task, self.broken, self.connection.closed),
                timeout=within,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except BaseException:
            task.cancel()
            raise
        if task.done():
            return task.result()
        task.cancel()
        if self.broken.done():
            raise _Broken(self.broken.result())
        if self.connection.closed.done():
            raise _Broken("browser-lost")
        raise TimeoutError

    async def settled(self, deadline: float) -> None:
        # Each wait is bounded by the deadline itself, not only by the caller's timeout: a
        # cancellation lost in a race would otherwise leave a held request waited on forever.
        await self._loaded(deadline)
        while True:
            now = time.monotonic()
            if now >= deadline:
                raise TimeoutError
            wait = deadline - now
            if self.outstanding == 0:
                quiet = now - self.quiet_since
                if quiet >= self.settle:
                    return
                wait = min(wait, self.settle - quiet)
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await self.guard(self.changed.wait(), within=wait)

    async def _loaded(self, deadline: float) -> None:
        """The load event, unless the deadline passes or the page stalls (``TimeoutError``)."""
        while not self.loaded.is_set():
            now = time.monotonic()
            wait = deadline - now
            if self.outstanding == 0:
                idle = now - self.quiet_since
                wait = min(wait, self.stall - idle)
            if wait <= 0:
                raise TimeoutError
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await self.guard(self.changed.wait(), within=wait)

    def stop(self) -> None:
        for session_id in self.sessions:
            self.connection.off(session_id)
        for task in list(self.tasks):
            task.cancel()


async def render_page(
    connection: Connection,
    url: str,
    intercept: Intercept,
    *,
    settle: float,
    budget: float,
    stall: float = math.inf,
) -> PageOutcome:
    """Render ``url`` in a fresh context of the browser behind ``connection``."""
    start = time.monotonic()
    deadline = start + budget
    page = _Page(connection, url, intercept, settle, stall)
    send = connection.send
    context = ""
    error: str | None = None
    values: list[Any] = [None, None, None]
    try:
        async with asyncio.timeout(budget):
            created = await page.guard(
                send("Target.createBrowserContext", {"disposeOnDetach": True})
            )
            context = created["browserContextId"]
            target = await page.guard(
                send("Target.createTarget", {"url": "about:blank", "browserContextId": context})
            )
            page.target_id = target["targetId"]
            attached = await page.guard(
                send("Target.attachToTarget", {"targetId": page.target_id, "flatten": True})
            )
            session = attached["sessionId"]
            page.listen(session)
            await page.guard(
                asyncio.gather(
                    send(
                        "Browser.setDownloadBehavior",
                        {"behavior": "deny", "browserContextId": context},
                    ),
                    send("Inspector.enable", None, session),
                    send("Page.enable", None, session),
                    _add_script(connection, session),
                    send("Fetch.enable", _PATTERNS, session),
                    send("Target.setAutoAttach", _AUTO_ATTACH, session),
                )
            )
            page.navigating = True
            navigated = await page.guard(
                send("Page.navigate", {"url": url}, session, timeout=budget)
            )
            if navigated.get("errorText"):
                error = f"navigation:{navigated['errorText']}"
            elif navigated.get("isDownload"):
                error = "navigation:download"
            else:
                await page.settled(deadline)
                evaluated = await page.guard(
                    send(
                        "Runtime.evaluate",
                        {"expression": _READ_DOM, "returnByValue": True},
                        session,
                        timeout=budget,
                    )
                )
                if "exceptionDetails" in evaluated:
                    error = "navigation:dom-unreadable"
                else:
                    value = evaluated.get("result", {}).get("value")
                    if isinstance(value, list) and len(value) == len(values):
                        values = value
    except TimeoutError:
        error = "timeout"
    except _Broken as broken:
        error = broken.reason
    except BrowserLost:
        error = "browser-lost"
    except CdpError as cdp_error:
        error = f"navigation:{cdp_error.message}"
    except BaseException:
        # Cancelled by the caller: the context is still disposed of, without waiting for it.
        page.stop()
        if context:
            _keep(asyncio.ensure_future(_dispose(connection, context)))
        raise
    held = page.outstanding > 0
    page.stop()
    unresponsive = bool(context) and not await _dispose(connection, context)
    html, title, final_url = values
    result = RenderResult(
        url=url,
        html=html if error is None and isinstance(html, str) else None,
        error=error,
        elapsed=time.monotonic() - start,
        requests=page.requests,
        title=title if error is None and isinstance(title, str) else None,
        final_url=final_url if error is None and isinstance(final_url, str) else None,
    )
    return PageOutcome(result, unresponsive, tuple(page.aborted), held)


_kept: set[asyncio.Future[Any]] = set()


def _keep(future: asyncio.Future[Any]) -> None:
    """Hold a task no render waits for until it ends (the loop keeps only weak references)."""
    _kept.add(future)
    future.add_done_callback(_kept.discard)


async def _dispose(connection: Connection, context: str) -> bool:
    """Dispose of a render's context (and its pages); False if the browser did not answer."""
    if connection.lost:
        return True
    try:
        await connection.send(
            "Target.disposeBrowserContext", {"browserContextId": context}, timeout=CLEANUP_TIMEOUT
        )
    except TimeoutError:
        return False
    except (CdpError, BrowserLost) as error:
        log.debug("render: context not disposed: %r", error)
    return True


async def _add_script(connection: Connection, session_id: str) -> None:
    await connection.send(
        "Page.addScriptToEvaluateOnNewDocument",
        {"source": NO_NETWORK_SCRIPT, "runImmediately": True},
        session_id,
    )
