"""Crawl from Python: ``Crawler`` and ``CrawlConfig``, the same crawl as ``courtier crawl``.

    from courtier import Crawler, CrawlConfig

    config = CrawlConfig.from_mapping({"limits": {"origin": {"rate": 4}}})
    crawler = Crawler(config, seeds=["example.org"], out="crawl-out", sink=print)
    stats = await crawler.run()          # in your event loop; crawler.stop() ends it

Rules:
- Everything is checked when the ``Crawler`` is made, exactly as the command line checks it
  (settings, seeds, store, networks, nameserver, output directory): ``ConfigError`` or
  ``InputError`` (both ``ValueError``), one line naming the input, before anything starts.
- ``run()`` runs in the caller's event loop and never touches signal handlers: stopping on
  SIGINT or SIGTERM is the caller's decision (call ``stop()`` from a handler). ``run_sync()``
  is ``asyncio.run(run())``.
- ``stop()`` may be called at any time, from any thread: no new request starts, requests in
  flight get a short grace, pending writes are flushed and the key clocks saved; ``run()``
  then returns the stats. Called before ``run()``, ``run()`` returns at once. A crawl also
  ends by itself: ``duration``, ``until_done``, a budget of ``[crawl]`` spent
  (``stats.ended_by`` says which).
- Documents (one dict per fetched URL, the records of ``OUT/documents/``) go to ``sink``
  (a ``courtier.sinks.documents.Sink``, or a callable taking each record), to every
  ``documents()`` iterator, and, when no ``sink`` is given, to segments in ``OUT/documents/``
  if ``out`` is given (``courtier.sinks.documents.read_documents`` reads them back). A sink
  that raises stops the crawl cleanly; ``run()`` then re-raises.
- A ``Crawler`` runs once; the store keeps the crawl, so a new ``Crawler`` on the same store
  resumes it.
- ``hook``: the parse hook as a function (or a "module:function" name), instead of
  ``[parse] hook``. The parse workers are spawned processes that import it by name
  (``content.hook.spec_of``, as ``pickle`` names a function): a function defined with
  ``def`` at the top level of a module (the script's own ``__main__`` included). A lambda, a
  closure, a bound method or a function of an interactive session is an ``InputError`` here,
  never a worker failing mid-crawl.

``build_engine`` is the one place a crawl is wired from checked inputs; ``courtier crawl``
and ``courtier demo`` use it too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from courtier.config import DEFAULT_CONTACT_URL, Config, ConfigError, validate
from courtier.content.hook import HookPage, HookResult
from courtier.inputs import (
    InputError,
    PostgresStore,
    SqliteStore,
    StoreSpec,
    check_creatable,
    check_postgres_reachable,
    check_sqlite_store,
    is_local_host,
    parse_nameserver_arg,
    parse_networks,
    parse_seed_list,
    parse_store,
    prepare_directory,
)
from courtier.net.fetch import TimedResolver
from courtier.net.guard import Guard
from courtier.net.resolve import DnsResolver, Resolver
from courtier.pipeline.cluster.membership import ClusterSpec
from courtier.pipeline.cluster.shards import new_worker_id
from courtier.pipeline.engine import Engine
from courtier.pipeline.events import Observer
from courtier.pipeline.keeping.archive import document_sink
from courtier.pipeline.stats import CrawlStats
from courtier.runtime import event_loop
from courtier.sinks.documents import Sink
from courtier.url import Url

__all__ = [
    "ConfigError",
    "CrawlConfig",
    "CrawlStats",
    "Crawler",
    "HookPage",
    "HookResult",
    "InputError",
    "build_engine",
    "recrawl",
]

log = logging.getLogger("courtier")

CrawlConfig = Config
"""The crawl's settings: ``CrawlConfig()`` (defaults), ``CrawlConfig.from_mapping({...})``,
``CrawlConfig.from_file("crawl.toml")``; sections as in the configuration file."""

Record = dict[str, Any]


def _check_hook(spec: str) -> None:
    """The parse hook imported here first: a bad one is an input error before anything
    starts, never a parse worker failing its warm-up mid-crawl."""
    if spec:
        from courtier.content.hook import HookError, load_hook

        try:
            load_hook(spec)
        except HookError as exc:
            raise InputError(str(exc)) from None


def _with_hook(config: Config, hook: Callable[[HookPage], Any] | str | None) -> Config:
    """``config`` with ``hook`` (a function, named by reference, or a name) as its parse
    hook; ``InputError`` for a function the parse workers could not import by name."""
    if hook is None:
        return config
    if isinstance(hook, str):
        spec = hook
    else:
        from courtier.content.hook import HookError, spec_of

        try:
            spec = spec_of(hook)
        except HookError as exc:
            raise InputError(f"hook= {exc}") from None
    return dataclasses.replace(config, parse=dataclasses.replace(config.parse, hook=spec))


def build_engine(
    config: Config,
    *,
    seeds: list[Url],
    store: StoreSpec,
    out: Path | None,
    dns: str | None = None,
    allow_net: Sequence[str] = (),
    resolver: Resolver | None = None,
    duration: float | None = None,
    sink: Sink | None = None,
    observer: Observer | None = None,
    handle_signals: bool = True,
    flag: Callable[[str], str] = lambda name: f"--{name.replace('_', '-')}",
    until_done: bool = False,
) -> Engine:
    """The crawl engine for checked inputs; raises ``InputError`` for any that is bad.
    ``flag`` names an input in messages (``--allow-net`` on the command line)."""
    if duration is not None and not (duration > 0 and duration != float("inf")):
        raise InputError(f"{flag('duration')} {duration}: must be a number of seconds above 0")
    policy = parse_networks(list(allow_net), name=flag("allow_net"))
    dns = parse_nameserver_arg(dns, name=flag("dns"))
    _check_hook(config.parse.hook)
    cluster = None
    if isinstance(store, PostgresStore):
        # A worker of a shared crawl: frontier, origins and every limit key in PostgreSQL.
        if out is None:
            raise InputError(
                f"{flag('out')}: a crawl on a PostgreSQL store needs an output directory"
            )
        check_creatable(out, f"{flag('out')} {out}")
        prepare_directory(out, name=flag("out"))
        check_postgres_reachable(store, name=flag("store"))
        cluster = ClusterSpec(store.conninfo, new_worker_id())
        local = out / "frontier.sqlite3"  # not used: the worker's state is in PostgreSQL
    else:
        if out is not None:
            check_creatable(out, f"{flag('out')} {out}")
        check_sqlite_store(store.path, name=flag("store"), create=True)
        if out is not None:
            prepare_directory(out, name=flag("out"))
        prepare_directory(store.path.parent, name=flag("store"))
        local = store.path
    _warn_default_contact(config, seeds)
    origins = None
    if resolver is None:
        from courtier.origins.dns_evidence import DnsEvidenceSource
        from courtier.origins.infer import OriginInference

        # One resolver for the guard and origin inference: the guard's first resolution of
        # a site the inference looked up is answered from the shared cache, not asked again.
        shared = DnsResolver(dns)
        origins = OriginInference(DnsEvidenceSource(dns, resolver=shared))
        resolver = TimedResolver(shared)
    return Engine(
        config,
        store_path=local,
        out_dir=out if out is not None else local.parent,
        guard=Guard(policy, resolver),
        address_allowed=lambda address: policy.check(address).allowed,
        seeds=seeds,
        duration=duration,
        origins=origins,
        sink=sink,
        observer=observer,
        handle_signals=handle_signals,
        cluster=cluster,
        until_done=until_done,
    )


def _warn_default_contact(config: Config, seeds: Iterable[Url]) -> None:
    """Site operators must be able to reach whoever runs a crawl of their sites."""
    if config.fetch.contact_url != DEFAULT_CONTACT_URL:
        return
    if all(is_local_host(seed.host) for seed in seeds):
        return  # loopback and reserved test names: nobody else's servers
    log.warning(
        "fetch.contact_url is the project's default (%s): every request's User-Agent points "
        "site operators there; set it to a page or mailto: address that reaches you, e.g. "
        "-s fetch.contact_url=https://example.org/crawler or COURTIER_FETCH__CONTACT_URL",
        DEFAULT_CONTACT_URL,
    )


# -- where documents go -----------------------------------------------------------------------

_END = object()


class _CallbackSink:
    def __init__(self, callback: Callable[[Record], object]) -> None:
        self._callback = callback

    def write(self, record: Record) -> None:
        self._callback(record)

    def flush(self) -> None:
        """Nothing is buffered."""

    def close(self) -> None:
        """Nothing to close."""


class _FanOut:
    """The engine's one sink: every record to each target and each ``documents()`` queue.
    A target that raises is reported to ``on_error`` and not written to again."""

    def __init__(self, on_error: Callable[[BaseException], None]) -> None:
        self.targets: list[Sink] = []
        self.queues: list[asyncio.Queue[object]] = []
        self.closed = False
        self._on_error = on_error

    def _each(self, call: Callable[[Sink], None]) -> None:
        for target in list(self.targets):
            try:
                call(target)
            except Exception as exc:
                self.targets.remove(target)
                self._on_error(exc)

    def write(self, record: Record) -> None:
        self._each(lambda target: target.write(record))
        for queue in self.queues:
            queue.put_nowait(record)

    def flush(self) -> None:
        self._each(lambda target: target.flush())

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._each(lambda target: target.close())
        for queue in self.queues:
            queue.put_nowait(_END)


# -- the crawler ------------------------------------------------------------------------------


class Crawler:
    """One crawl, built from checked inputs and run in the caller's event loop."""

    def __init__(
        self,
        config: Config | Mapping[str, Any] | None = None,
        *,
        seeds: Iterable[str],
        out: str | Path | None = None,
        store: str | Path | None = None,
        dns: str | None = None,
        allow_net: Iterable[str] = (),
        resolver: Resolver | None = None,
        duration: float | None = None,
        sink: Sink | Callable[[Record], object] | None = None,
        observer: Observer | None = None,
        until_done: bool = False,
        hook: Callable[[HookPage], Any] | str | None = None,
    ) -> None:
        """``config``: a ``CrawlConfig`` or a mapping of settings (defaults if None).
        ``seeds``: URLs or host names. ``out``: a directory for the store (``frontier.sqlite3``)
        and, without a ``sink``, ``documents/``. ``store``: a SQLite path (default
        ``OUT/frontier.sqlite3``). ``dns``: a nameserver ``IP:PORT`` (default the system's);
        ``resolver``: a ``courtier.net.resolve.Resolver`` to use instead (then no DNS-based
        origin inference). ``allow_net``: networks past the SSRF guard (CIDR). ``duration``:
        seconds after which the crawl stops by itself. ``until_done``: it stops by itself once
        nothing is due but refreshes scheduled for later (``courtier crawl --until-done``).
        ``observer``: hears of every request. Budgets are settings (``[crawl] max_requests``,
        ``max_pages``, ``max_bytes``, ``max_pages_per_site``); ``stats.ended_by`` says what
        ended the crawl. ``hook``: the parse hook, a module-level function taking a
        ``HookPage`` and returning a dict of fields or a ``HookResult`` (it replaces
        ``[parse] hook``; see the module's rules)."""
        if config is None:
            config = Config()
        elif isinstance(config, Mapping):
            config = Config.from_mapping(config)
        elif not isinstance(config, Config):
            raise ConfigError(f"config must be a CrawlConfig or a mapping, got {config!r}")
        self.config = validate(_with_hook(config, hook))
        parsed_seeds = parse_seed_list(seeds)
        out_dir = Path(out) if out is not None else None
        if store is not None:
            spec = parse_store(store if isinstance(store, Path) else str(store), name="store=")
        elif out_dir is not None:
            spec = SqliteStore(out_dir / "frontier.sqlite3")
        else:
            raise InputError("give out= (a directory) or store= (a SQLite file) for the store")
        self._error: BaseException | None = None
        self._fanout = _FanOut(self._sink_failed)
        if sink is not None:
            is_sink = all(callable(getattr(sink, n, None)) for n in ("write", "flush", "close"))
            if not is_sink and not callable(sink):
                raise InputError(
                    f"sink= {sink!r}: must be a Sink (write, flush, close) or a callable"
                )
            target = (
                cast(Sink, sink)
                if is_sink
                else _CallbackSink(cast(Callable[[Record], object], sink))
            )
            self._fanout.targets.append(target)
        self._jsonl_dir = out_dir if sink is None else None
        self._engine = build_engine(
            self.config,
            seeds=parsed_seeds,
            store=spec,
            out=out_dir,
            dns=dns,
            allow_net=list(allow_net),
            resolver=resolver,
            duration=duration,
            sink=self._fanout,
            observer=observer,
            handle_signals=False,
            flag=lambda name: f"{name}=",
            until_done=until_done,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_asked = asyncio.Event()
        self._stop_requested = False
        self._started = False

    @property
    def stats(self) -> CrawlStats:
        """The crawl's counters, live while it runs."""
        return self._engine.stats

    async def run(self) -> CrawlStats:
        """Crawl until ``stop()``, the duration, ``until_done``, a budget, or cancellation;
        the final stats."""
        if self._started:
            raise RuntimeError("a Crawler runs once; make a new one (same store) to go on")
        self._started = True
        self._loop = asyncio.get_running_loop()
        if self._stop_requested:
            self._fanout.close()
            return self._engine.stats
        if self._jsonl_dir is not None:
            self._fanout.targets.append(document_sink(self.config, self._jsonl_dir))
        task = asyncio.ensure_future(self._engine.run())
        watcher = asyncio.ensure_future(self._stop_when_asked(task))
        try:
            stats = await task
        finally:
            watcher.cancel()
            self._fanout.close()
        if self._error is not None:
            raise self._error
        return stats

    def run_sync(self) -> CrawlStats:
        """``run()`` in a new event loop (the one ``crawl.event_loop`` names), for code that
        has none."""
        return event_loop.run(self.run(), self.config.crawl.event_loop)

    def stop(self) -> None:
        """Stop cleanly (see the module rules); safe from any thread or a signal handler."""
        self._stop_requested = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._stop_asked.set)

    def documents(self) -> AsyncIterator[Record]:
        """Every document record from now on, ending when the crawl ends. Records wait in
        memory until read: read them as they come (or use ``sink``)."""
        queue: asyncio.Queue[object] = asyncio.Queue()
        if self._fanout.closed:
            queue.put_nowait(_END)
        self._fanout.queues.append(queue)
        return _drain(queue)

    async def _stop_when_asked(self, task: asyncio.Future[CrawlStats]) -> None:
        await self._stop_asked.wait()
        if not task.done():
            self._engine.stop()  # before its stages are wired too: they are made stopped

    def _sink_failed(self, error: BaseException) -> None:
        log.error("the document sink failed; stopping the crawl", exc_info=error)
        if self._error is None:
            self._error = error
        self.stop()


async def _drain(queue: asyncio.Queue[object]) -> AsyncIterator[Record]:
    while True:
        item = await queue.get()
        if item is _END:
            return
        yield cast(Record, item)


def recrawl(store: str | Path, urls: Iterable[str]) -> int:
    """The fastlane from Python: each URL (of a seed site) due now, ahead of everything, in
    the crawl's store (a SQLite path or a PostgreSQL URL); a running crawl on it leases them
    within seconds, booked like any request. How many were scheduled (a URL being fetched is
    left alone). ``InputError`` for a bad store or URL, or a site outside the seed (nothing
    is scheduled then)."""
    from courtier.frontier.base import SiteState
    from courtier.frontier.fastlane import recrawl as schedule
    from courtier.runtime.processes import process_tag
    from courtier.url import UrlError, parse_url

    parsed = []
    for text in urls:
        try:
            parsed.append(parse_url(text.strip()))
        except UrlError as exc:
            raise InputError(f"bad URL {text!r}: {exc}") from None
    if not parsed:
        return 0
    opened = _open_store(parse_store(str(store)))
    try:
        states = opened.site_states()
        outside = sorted(
            {u.site for u in parsed}
            - {
                site
                for site, state in states.items()
                if state in (SiteState.SEED, SiteState.REQUESTED)
            }
        )
        if outside:
            raise InputError(f"not in the seed: {', '.join(outside)}; nothing scheduled")
        return schedule(
            opened, parsed, command="courtier.api.recrawl", actor=f"python {process_tag()}"
        )
    finally:
        opened.close()


def _open_store(spec: StoreSpec) -> Any:
    from courtier.frontier.base import FrontierError

    try:
        if isinstance(spec, PostgresStore):
            from courtier.frontier.postgres_store import PostgresFrontier

            return PostgresFrontier(spec.conninfo)
        check_sqlite_store(spec.path, create=False)
        from courtier.frontier.sqlite_store import SqliteFrontier

        return SqliteFrontier(spec.path)
    except FrontierError as exc:
        raise InputError(f"store: {exc}") from exc
