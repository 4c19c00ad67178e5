"""Headless Chromium over the DevTools protocol (a websocket on loopback): open a page,
collect its console errors, evaluate a script, save a screenshot."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


@dataclass
class PageVisit:
    errors: list[str] = field(default_factory=list)
    value: Any = None


class _Session:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.seen: dict[str, asyncio.Event] = {}
        self.reader = asyncio.create_task(self._read())

    def _event(self, method: str) -> asyncio.Event:
        return self.seen.setdefault(method, asyncio.Event())

    async def _read(self) -> None:
        async for message in self.ws:
            data = json.loads(message.data)
            future = self.waiting.pop(data.get("id", -1), None)
            if future is not None:
                future.set_result(data)
            else:
                self.events.append(data)
                self._event(str(data.get("method"))).set()

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[number] = future
        await self.ws.send_json({"id": number, "method": method, "params": params})
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    async def wait_for(self, method: str) -> None:
        async with asyncio.timeout(30):
            await self._event(method).wait()

    def errors(self) -> list[str]:
        found: list[str] = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(params["entry"].get("text", "")[:500])
        return found


async def visit(binary: str, url: str, script: str, screenshot: Path, profile: Path) -> PageVisit:
    """Load ``url``, evaluate ``script`` (its value returned by value), save a screenshot."""
    process = await asyncio.create_subprocess_exec(
        binary,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "--window-size=1100,1200",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        port = await _devtools_port(process)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as response:
                targets = await response.json()
            page = next(t for t in targets if t.get("type") == "page")
            async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                session = _Session(ws)
                for domain in ("Runtime", "Log", "Page"):
                    await session.call(f"{domain}.enable")
                await session.call("Page.navigate", url=url)
                await session.wait_for("Page.loadEventFired")
                await asyncio.sleep(0.5)  # late errors
                result = await session.call(
                    "Runtime.evaluate", expression=script, returnByValue=True
                )
                metrics = await session.call("Page.getLayoutMetrics")
                size = metrics["cssContentSize"]
                shot = await session.call(
                    "Page.captureScreenshot",
                    format="png",
                    captureBeyondViewport=True,
                    clip={
                        "x": 0,
                        "y": 0,
                        "width": size["width"],
                        "height": min(size["height"], 6000),
                        "scale": 1,
                    },
                )
                await asyncio.to_thread(screenshot.write_bytes, base64.b64decode(shot["data"]))
                session.reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await session.reader
                return PageVisit(session.errors(), result.get("result", {}).get("value"))
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


async def _devtools_port(process: asyncio.subprocess.Process) -> int:
    assert process.stderr is not None
    async with asyncio.timeout(60):
        while True:
            line = (await process.stderr.readline()).decode(errors="replace")
            if not line:
                raise RuntimeError("chromium exited before it listened")
            found = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if found:
                return int(found.group(1))
