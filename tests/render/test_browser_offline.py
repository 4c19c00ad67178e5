"""A bare browser, no interception at all: its flags alone keep it off the network (host
names resolve nowhere, loopback and IP literals go to a proxy that does not exist), and it
leaves no process behind."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from courtier.render.browser import Browser, find_chromium

CHROMIUM = find_chromium(None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Headless Chromium (Debian's chromium package) is not installed: render tests need it",
)


def exists(path: str) -> bool:
    return Path(path).exists()


def test_find_chromium_takes_the_configured_one_first(tmp_path: Path) -> None:
    assert find_chromium(None) == CHROMIUM
    assert find_chromium(str(tmp_path / "missing")) is None
    assert find_chromium("sh") == shutil.which("sh")


async def test_the_flags_alone_keep_the_browser_off_loopback() -> None:
    assert CHROMIUM is not None
    connections: list[object] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer.get_extra_info("peername"))
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    browser = await Browser.launch(CHROMIUM)
    try:
        send = browser.connection.send
        target = await send("Target.createTarget", {"url": "about:blank"})
        attached = await send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        session = attached["sessionId"]
        navigated = await send("Page.navigate", {"url": f"http://127.0.0.1:{port}/"}, session)
        assert navigated["errorText"] == "net::ERR_PROXY_CONNECTION_FAILED"
        tries = f"""Promise.all([
          fetch("http://127.0.0.1:{port}/").then(() => "fetched", () => "failed"),
          fetch("http://localhost:{port}/").then(() => "fetched", () => "failed"),
          new Promise(done => {{
            const socket = new WebSocket("ws://127.0.0.1:{port}/");
            socket.onopen = () => done("open");
            socket.onerror = () => done("failed");
          }}),
        ])"""
        evaluated = await send(
            "Runtime.evaluate",
            {"expression": tries, "awaitPromise": True, "returnByValue": True},
            session,
        )
        assert evaluated["result"]["value"] == ["failed"] * 3
        assert browser.usage().rss > 0
    finally:
        await browser.close()
        server.close()
        await server.wait_closed()
    assert connections == []
    assert not exists(browser.directory)
    with pytest.raises(ProcessLookupError):
        os.getsid(browser.reaper)  # reaped
