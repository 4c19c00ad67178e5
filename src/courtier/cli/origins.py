"""``courtier origins``: which sites share servers, and why.

``courtier origins list`` prints every site's origin from a crawl's store; ``courtier origins
explain HOST`` prints the evidence behind one site's origin, the other sites of that origin and
the history of its changes; ``courtier origins infer --hosts FILE`` looks the hosts up (DNS
through ``--dns``, header probes with ``--probe``) and stores the result. ``--json`` prints one
object per site with the keys ``site``, ``origin``, ``confidence`` and ``evidence``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from courtier.cli import origin_pins
from courtier.cli.options import (
    add_config_arguments,
    add_network_arguments,
    load_config,
    port,
    whole,
)
from courtier.config import Config
from courtier.inputs import (
    InputError,
    PostgresStore,
    check_sqlite_store,
    parse_nameserver_arg,
    parse_networks,
    parse_store,
    prepare_directory,
)
from courtier.origins.cluster import Assignment
from courtier.origins.dns_evidence import DnsEvidenceSource
from courtier.origins.infer import InferenceResult, OriginInference
from courtier.origins.probe import BookRequest, HttpHeaderProbe
from courtier.origins.store import OriginStore, OriginStoreError, StoredOrigin
from courtier.politeness.keys import KeyType, LimitKey, guess_origin
from courtier.politeness.limiter.memory import MemoryLimiter
from courtier.politeness.waiting import Sleep, wait_for_slot
from courtier.url import UrlError, canonical_host, parse_url

DEFAULT_STORE = Path("crawl-out/frontier.sqlite3")
EXPLAIN_PEERS = 10


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "origins",
        help="which sites share servers (inferred origins) and why",
        description="Show or infer the origins of sites: groups of sites that share servers, "
        "inferred from DNS (CNAME chains, addresses, PTR names), response headers and TLS.",
    )
    actions = parser.add_subparsers(dest="origins_action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every site's origin, confidence and signals")
    explain = actions.add_parser("explain", help="the evidence behind one site's origin")
    explain.add_argument("host", metavar="HOST")
    infer = actions.add_parser("infer", help="infer the origins of hosts and store them")
    infer.add_argument(
        "--hosts", type=Path, required=True, help="file of hostnames or URLs, one per line"
    )
    add_network_arguments(infer)
    infer.add_argument(
        "--probe", action="store_true", help="probe headers where DNS is indeterminate"
    )
    infer.add_argument("--port", type=port, default=80, help="HTTP port of header probes")
    infer.add_argument(
        "--concurrency",
        type=whole(1, 10_000),
        default=64,
        help="DNS queries in flight (default 64)",
    )
    add_config_arguments(infer)
    origin_pins.register(actions)
    for sub in (listing, explain, infer):
        sub.add_argument(
            "--store",
            default=str(DEFAULT_STORE),
            metavar="PATH",
            help=f"crawl store, a SQLite file (default {DEFAULT_STORE})",
        )
        sub.add_argument("--json", action="store_true", help="one JSON object per site")
        sub.set_defaults(handler=handle)


def store_path(text: str, *, create: bool) -> Path:
    """The SQLite store ``--store`` names, checked (a PostgreSQL URL is not served here)."""
    spec = parse_store(text)
    if isinstance(spec, PostgresStore):
        raise InputError(f"--store {spec}: 'courtier origins' reads a SQLite store only")
    check_sqlite_store(spec.path, create=create)
    return spec.path


def handle(args: argparse.Namespace) -> int:
    if args.origins_action == "infer":
        return _infer(args)
    path = store_path(args.store, create=False)
    try:
        store = OriginStore(path, create=False)
    except OriginStoreError as exc:
        print(f"courtier origins: {exc}", file=sys.stderr)
        return 2
    with store:
        try:
            if args.origins_action == "list":
                return _list(store, args.json)
            return _explain(store, args.host, args.json, path)
        except OriginStoreError as exc:
            print(f"courtier origins: {exc}", file=sys.stderr)
            return 2


def signals(assignment: Assignment) -> str:
    """The evidence kinds behind an assignment, strongest first, for one-line output."""
    ordered = sorted(assignment.evidence, key=lambda e: -abs(e.weight))
    return ",".join(dict.fromkeys(e.kind.value for e in ordered)) or "-"


def _list(store: OriginStore, as_json: bool) -> int:
    for stored in store.all():
        a = stored.assignment
        if as_json:
            print(json.dumps(a.to_json()))
        else:
            print(f"{a.site}\t{a.origin}\t{a.confidence:.2f}\t{signals(a)}")
    return 0


def operators_origin(path: Path, host: str) -> str | None:
    """The origin an operator placed ``host``'s site on (``origins pin|split``), if any."""
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(path)) as db:
            row = db.execute(
                "SELECT origin FROM site_controls WHERE (site = ? OR site LIKE ?) "
                "AND origin IS NOT NULL",
                (host, f"{host}:%"),
            ).fetchone()
    except sqlite3.Error:  # a store from before the operator's controls
        return None
    return None if row is None else str(row[0])


def _explain(store: OriginStore, raw: str, as_json: bool, path: Path) -> int:
    try:
        host = canonical_host(raw)
    except UrlError as exc:
        print(f"courtier origins explain: {raw}: {exc}", file=sys.stderr)
        return 2
    stored = store.get(host)
    if stored is None:
        print(f"courtier origins explain: no origin stored for {host}", file=sys.stderr)
        return 1
    a = stored.assignment
    peers = [s.assignment.site for s in store.all() if s.assignment.origin == a.origin]
    peers = [p for p in peers if p != host]
    changes = store.changes(host)
    pinned = operators_origin(path, host)
    if as_json:
        record = a.to_json()
        record["operators_origin"] = pinned
        record["checked_at"] = stored.checked_at
        record["recheck_at"] = stored.recheck_at
        record["sites_in_origin"] = len(peers) + 1
        record["changes"] = [
            {"old": c.change.old, "new": c.change.new, "at": c.changed_at} for c in changes
        ]
        print(json.dumps(record))
        return 0
    _print_explanation(stored, peers, [(c.change.describe(), c.changed_at) for c in changes])
    if pinned is not None:
        print(f"operator:   books on {pinned} (origins pin/split), over the inference above")
    return 0


def _print_explanation(
    stored: StoredOrigin, peers: list[str], changes: list[tuple[str, float]]
) -> None:
    a = stored.assignment
    print(f"site:       {a.site}")
    print(f"origin:     {a.origin}")
    print(f"confidence: {a.confidence:.2f}")
    print(f"checked:    {_when(stored.checked_at)} (re-check due {_when(stored.recheck_at)})")
    print("evidence:")
    for e in a.evidence:
        print(f"  {e.weight:+.2f} {e.kind.value:<16} {e.value}")
        if e.detail:
            print(f"        {e.detail}")
    shown = ", ".join(peers[:EXPLAIN_PEERS])
    more = f" and {len(peers) - EXPLAIN_PEERS} more" if len(peers) > EXPLAIN_PEERS else ""
    print(f"shares it with: {len(peers)} other sites{': ' + shown + more if peers else ''}")
    for text, at in changes:
        print(f"  {_when(at)} {text}")


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def booked_probe_requests(
    config: Config, *, clock: Callable[[], float] = time.monotonic, sleep: Sleep = asyncio.sleep
) -> BookRequest:
    """Header probes as ordinary booked requests: each waits for a slot on the site's key and
    on the key of its address set (the origin it shares, as far as DNS can tell), at the
    configured limits and the cost of its path."""
    limiter = MemoryLimiter(clock)
    policy, costs = config.limits.policy(), config.costs.model()

    async def book_request(host: str, addresses: tuple[str, ...], path: str) -> None:
        keys = [LimitKey(KeyType.SITE, host)]
        origin = guess_origin(None, addresses)
        if origin is not None:
            keys.append(LimitKey(KeyType.ORIGIN, origin))
        await wait_for_slot(limiter, policy.limits(keys), costs.cost_of_target(path), sleep=sleep)

    return book_request


def read_hosts(path: Path) -> tuple[list[str], list[str]]:
    """Canonical hosts from a file of hosts or URLs, and the lines that were neither."""
    hosts: list[str] = []
    bad: list[str] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"--hosts {path}: {exc.strerror}") from None
    for line in text.splitlines():
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            hosts.append(parse_url(text).host if "://" in text else canonical_host(text))
        except UrlError:
            bad.append(text)
    return list(dict.fromkeys(hosts)), bad


def _infer(args: argparse.Namespace) -> int:
    if args.dns is None:
        raise InputError("--dns HOST:PORT is required (the nameserver to gather evidence from)")
    config = load_config(args)
    hosts, bad = read_hosts(args.hosts)
    policy = parse_networks(args.allow_net)
    dns = DnsEvidenceSource(parse_nameserver_arg(args.dns), concurrency=args.concurrency)
    path = store_path(args.store, create=True)
    prepare_directory(path.parent, name="--store")
    for line in bad:
        print(f"courtier origins infer: not a host or URL, skipped: {line[:200]}", file=sys.stderr)
    if not hosts:
        print("courtier origins infer: no hosts to infer", file=sys.stderr)
        return 1

    def allowed(address: str) -> bool:
        return policy.check(address).allowed

    async def run() -> InferenceResult:
        if not args.probe:
            return await OriginInference(dns, address_allowed=allowed).add(hosts)
        agent = config.fetch.user_agent
        book = booked_probe_requests(config)
        async with HttpHeaderProbe(allowed, port=args.port, user_agent=agent, book=book) as probe:
            return await OriginInference(dns, probe=probe, address_allowed=allowed).add(hosts)

    result = asyncio.run(run())
    try:
        with OriginStore(path) as store:
            changes = store.save(result.assignments.values(), time.time(), result.recheck_at)
    except OriginStoreError as exc:
        print(f"courtier origins infer: {exc}", file=sys.stderr)
        return 2
    for site in hosts:
        if args.json:
            print(json.dumps(result.assignments[site].to_json()))
    origins = Counter(a.origin for a in result.assignments.values())
    moved = sum(1 for c in changes if c.old is not None)
    print(
        f"courtier origins infer: {len(hosts)} sites in {len(origins)} origins "
        f"({sum(1 for n in origins.values() if n > 1)} shared), {result.probed} probed, "
        f"{moved} changed origin; stored in {args.store}",
        file=sys.stderr,
    )
    return 0
