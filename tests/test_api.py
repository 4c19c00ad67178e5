"""The Python API: a crawl built, run, fed and stopped from Python, in the caller's loop."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import courtier
from courtier import ConfigError, CrawlConfig, Crawler, CrawlStats, InputError
from courtier.config import FetchSection, load
from courtier.net.resolve import StaticResolver
from courtier.sinks.documents import document_files, read_documents

HOSTS = ("a.test", "b.test")
PAGES = 30
"""Pages of each loopback site (``port``)."""
FAST = {
    "crawl": {"flush_interval": 0.05},
    "limits": {"site": {"rate": 20, "slot_width": 0.05}, "origin": {"rate": 1000}},
    # The sites serve their pages and nothing else; the tests count those pages' documents.
    "frontier": {"sitemap_fallback": False},
}


@pytest.fixture
async def port() -> AsyncIterator[int]:
    """Two loopback sites of 30 linked pages each."""

    async def page(request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            raise web.HTTPNotFound()
        number = int(request.path.strip("/") or 0)
        linked = (n for n in range(number + 1, number + 4) if n < PAGES)
        links = "".join(f'<a href="/{n}">{n}</a>' for n in linked)
        return web.Response(text=f"<title>{number}</title>{links}", content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield runner.addresses[0][1]
    await runner.cleanup()


async def _stopped_once(run: Crawler, done: Callable[[], bool]) -> CrawlStats:
    """Run the crawl and stop it from code once ``done()`` (every page is in, documents
    included): a crawl stopped at a fixed time may leave a fetched page unparsed, so that
    what the run took in and what it wrote no longer match (and under load, at 2 s, nothing
    had been written yet). Its duration is only the limit."""

    async def stop_when_done() -> None:
        while not done():  # noqa: ASYNC110 (a file filling up is no event to wait on)
            await asyncio.sleep(0.05)
        run.stop()

    watcher = asyncio.create_task(stop_when_done())
    try:
        return await run.run()
    finally:
        watcher.cancel()


def crawler(tmp_path: Path, port: int, **options: Any) -> Crawler:
    settings = {"config": CrawlConfig.from_mapping(FAST), **options}
    return Crawler(
        seeds=[f"http://{host}:{port}/" for host in HOSTS],
        store=tmp_path / "frontier.sqlite3",
        allow_net=["127.0.0.1/32"],
        resolver=StaticResolver({host: ["127.0.0.1"] for host in HOSTS}),
        **settings,
    )


async def test_a_crawl_driven_from_python_sends_documents_to_the_caller_and_stops_from_code(
    tmp_path: Path, port: int
) -> None:
    def on_sigint(signum: int, frame: object) -> None:
        raise AssertionError("not sent in this test")

    previous = signal.signal(signal.SIGINT, on_sigint)
    expected = {on_sigint, signal.getsignal(signal.SIGTERM)}
    handlers_seen: set[object] = set()
    received: list[dict[str, Any]] = []

    def callback(record: dict[str, Any]) -> None:
        handlers_seen.add(signal.getsignal(signal.SIGINT))
        handlers_seen.add(signal.getsignal(signal.SIGTERM))
        received.append(record)

    try:
        run = crawler(tmp_path, port, sink=callback, duration=30.0)
        iterated: list[str] = []

        async def read() -> None:
            async for document in run.documents():
                iterated.append(document["url"])
                if len(iterated) == 12:
                    run.stop()

        reader = asyncio.create_task(read())
        started = time.monotonic()
        stats = await run.run()
        await asyncio.wait_for(reader, 5)
        assert time.monotonic() - started < 20  # stopped from code, not by the duration
        assert signal.getsignal(signal.SIGINT) is on_sigint
    finally:
        signal.signal(signal.SIGINT, previous)
    assert handlers_seen == expected  # the crawl never took SIGINT or SIGTERM
    assert len(iterated) >= 12
    assert [r["url"] for r in received] == iterated  # every record to every listener, in order
    assert {r["status"] for r in received} == {200}
    assert stats.requests >= len(received) and stats.internal_errors == 0
    assert not document_files(tmp_path)  # a sink was given: no file


async def test_a_sink_object_gets_every_record_then_is_flushed_and_closed(
    tmp_path: Path, port: int
) -> None:
    class Collect:
        def __init__(self) -> None:
            self.records: list[dict[str, Any]] = []
            self.flushes = 0
            self.closed = False

        def write(self, record: dict[str, Any]) -> None:
            self.records.append(record)

        def flush(self) -> None:
            self.flushes += 1

        def close(self) -> None:
            self.closed = True

    sink = Collect()
    run = crawler(tmp_path, port, sink=sink, duration=30.0)
    stats = await _stopped_once(run, lambda: len(sink.records) >= 2 * PAGES)
    assert sink.closed and sink.flushes > 0
    assert len(sink.records) == stats.by_status["2xx"] == 2 * PAGES


async def test_without_a_sink_documents_go_to_the_output_directory(
    tmp_path: Path, port: int
) -> None:
    def lines() -> list[dict[str, Any]]:
        return list(read_documents(tmp_path / "out"))

    run = crawler(tmp_path, port, out=tmp_path / "out", duration=30.0)
    stats = await _stopped_once(run, lambda: len(lines()) >= 2 * PAGES)
    assert len(lines()) == stats.by_status["2xx"] == 2 * PAGES
    assert {record["status"] for record in lines()} == {200}


async def test_a_failing_sink_stops_the_crawl_cleanly_and_run_raises_its_error(
    tmp_path: Path, port: int
) -> None:
    def explode(record: dict[str, Any]) -> None:
        raise RuntimeError("disk full")

    run = crawler(tmp_path, port, sink=explode, duration=30.0)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="disk full"):
        await run.run()
    assert time.monotonic() - started < 20


async def test_stop_before_run_returns_at_once_and_ends_the_document_iterators(
    tmp_path: Path, port: int
) -> None:
    run = crawler(tmp_path, port)
    documents = run.documents()
    run.stop()
    stats = await asyncio.wait_for(run.run(), 5)
    assert stats.requests == 0
    assert [d async for d in documents] == []
    with pytest.raises(RuntimeError, match="runs once"):
        await run.run()


def test_run_sync_in_a_program_without_a_loop_stops_from_another_thread(
    tmp_path: Path, port_in_thread: int
) -> None:
    run = crawler(tmp_path, port_in_thread, duration=60.0)
    stopped_at: list[float] = []
    quit_waiting = threading.Event()

    def stop_once_a_page_is_in() -> None:
        # Stopped from this thread once the crawl has a page (a loaded machine takes longer
        # to get there than a fixed 2 s), or after 30 s whatever it has.
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and not quit_waiting.is_set():
            if run.stats.by_status["2xx"] > 0:
                break
            time.sleep(0.05)
        stopped_at.append(time.monotonic())
        run.stop()

    stopper = threading.Thread(target=stop_once_a_page_is_in)
    stopper.start()
    try:
        stats = run.run_sync()
    finally:
        quit_waiting.set()
        stopper.join()
    assert stopped_at and time.monotonic() - stopped_at[0] < 20  # it stopped when told
    assert stats.by_status["2xx"] > 0


@pytest.fixture
def port_in_thread() -> Any:
    """The loopback sites served from a thread (for a test that runs its own event loop)."""
    ready: list[int] = []
    stop = threading.Event()

    async def serve() -> None:
        async def page(request: web.Request) -> web.StreamResponse:
            if request.path == "/robots.txt":
                raise web.HTTPNotFound()
            links = "".join(f'<a href="/{n}">x</a>' for n in range(20))
            return web.Response(text=links, content_type="text/html")

        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", page)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        ready.append(runner.addresses[0][1])
        await asyncio.to_thread(stop.wait)
        await runner.cleanup()

    thread = threading.Thread(target=asyncio.run, args=(serve(),))
    thread.start()
    while not ready:
        time.sleep(0.01)
    yield ready[0]
    stop.set()
    thread.join()


BAD = [
    pytest.param({"config": {"crawl": {"parse_workers": -1}}}, ConfigError, "crawl.parse_workers"),
    pytest.param({"config": {"crawl": {"max_in_fligth": 1}}}, ConfigError, "max_in_fligth"),
    pytest.param({"config": {"fetch": {"max_body_bytes": "3"}}}, ConfigError, "wrong type"),
    pytest.param(
        {"config": CrawlConfig(fetch=FetchSection(user_agent_token="a b"))},
        ConfigError,
        "user_agent_token",
    ),
    pytest.param({"seeds": ["http://[::1"]}, InputError, "seeds"),
    pytest.param({"seeds": []}, InputError, "no seed"),
    pytest.param({"store": "mysql://db/crawl"}, InputError, "store= mysql://db/crawl"),
    pytest.param({"store": "postgresql:///crawl?host=/run/pg"}, InputError, "PostgreSQL"),
    pytest.param({"allow_net": ["loopback"]}, InputError, "allow_net= loopback"),
    pytest.param({"dns": "dns.example:53"}, InputError, "dns= dns.example:53"),
    pytest.param({"duration": -5.0}, InputError, "duration="),
    pytest.param({"sink": 5}, InputError, "sink="),
]


@pytest.mark.parametrize(("change", "error", "named"), BAD)
def test_bad_input_is_refused_before_anything_starts(
    tmp_path: Path, change: dict[str, Any], error: type[Exception], named: str
) -> None:
    options: dict[str, Any] = {
        "seeds": ["http://a.test/"],
        "store": tmp_path / "store" / "frontier.sqlite3",
        "resolver": StaticResolver({}),
        **change,
    }
    with pytest.raises(error, match=re.escape(named)) as raised:
        Crawler(**options)
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "store").exists()  # nothing was created


def test_a_config_file_reads_the_same_for_the_api_and_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "crawl.toml"
    path.write_text('[limits.origin]\nrate = 4\n[fetch]\ncontact_url = "mailto:ops@example.org"\n')
    assert CrawlConfig.from_file(path) == load(path, env={})
    assert CrawlConfig.from_file(path).limits.origin.rate == 4.0


def test_import_courtier_loads_neither_the_engine_nor_the_api() -> None:
    code = (
        "import sys, courtier; "
        "assert courtier.__version__; "
        "heavy = {'courtier.api', 'courtier.pipeline.engine', 'aiohttp', 'scipy'}; "
        "heavy &= set(sys.modules); "
        "assert not heavy, heavy; "
        "from courtier import Crawler; assert 'courtier.api' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _readme_example() -> str:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Crawl from Python") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    return block.group(1)


def _env_importing_this_courtier() -> dict[str, str]:
    """The environment for a Python process that imports the courtier under test (and so
    does the simulated web it starts) wherever it runs: a relative ``PYTHONPATH`` (``src``)
    means nothing in another working directory, where an installed courtier (another
    checkout's) would be imported instead."""
    package_root = str(Path(courtier.__file__).resolve().parents[1])
    paths = [package_root, *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


@pytest.mark.timeout(180)
def test_the_readme_embedding_example_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _readme_example()],
        cwd=tmp_path,
        env=_env_importing_this_courtier(),
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.fullmatch(r"25 pages, \d+ requests; SIGINT handler still ours\n", done.stdout)
    assert (tmp_path / "embed-out" / "frontier.sqlite3").exists()


def test_a_recrawl_from_python_is_due_now_in_the_fastlane(tmp_path) -> None:
    import time as clock

    from courtier.api import recrawl
    from courtier.frontier.base import NewUrl, SiteState, UrlLane
    from courtier.frontier.sqlite_store import SqliteFrontier

    path = tmp_path / "f.sqlite3"
    store = SqliteFrontier(path)
    store.add_sites(["shop.test"], SiteState.SEED, clock.time())
    store.write_batch([NewUrl("http://shop.test/", "http://shop.test/", "shop.test", 0)], [], [], 0)
    store.close()
    assert recrawl(path, ["http://shop.test/", "http://shop.test/new"]) == 2
    with pytest.raises(InputError, match=r"not in the seed: other\.test"):
        recrawl(path, ["http://other.test/"])
    with pytest.raises(InputError, match="bad URL"):
        recrawl(path, ["http://[bad/"])
    store = SqliteFrontier(path)
    try:
        schedule = store.schedule_of("http://shop.test/new")
        assert schedule is not None and schedule.lane is UrlLane.FASTLANE
        assert [a.command for a in store.control_actions()] == ["courtier.api.recrawl"]
    finally:
        store.close()
