"""Benchmarks of the frontier store: the due query on a big SQLite file, and deduplicated ingest.

Run:
  PYTHONPATH=src python bench/bench_frontier.py due    [--urls 10000000] [--hosts 10000]
  PYTHONPATH=src python bench/bench_frontier.py ingest [--offers 2000000] [--batch 5000]

``due`` builds a SQLite frontier of ``--urls`` rows in a temporary directory (``--dir``,
default /tmp) with the store's own schema, then times ``due`` and ``lease_due`` answering
1,000 URLs (100 hosts x 10 and 1,000 hosts x 1), each over ``--repeats`` random host
samples, and deletes the file (unless ``--keep``). Rows are written in host order with
executemany in transactions of 200,000 rows, so every index grows at its end. Host sizes are
heavy-tailed (a few hosts hold hundreds of thousands of URLs); per host, 30% of the URLs are
queued for discovery, 60% were fetched and fall due over the next six months (a tenth of
those are overdue), and the rest were refused or failed (never due again).

``ingest`` offers discovered links the way a crawl finds them (every page links its site's
navigation plus a few pages, mostly ones already known) to the store through the dedup cache,
in batches of ``--batch`` offers (one transaction each), and reports offers per second and the
write amplification the cache saved; then the same offers without the cache, for comparison.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from courtier.frontier.base import NewUrl, UrlLane, UrlStatus
from courtier.frontier.dedup import DedupingWriter
from courtier.frontier.refresh import DAY
from courtier.frontier.sqlite_store import SqliteFrontier

NOW = 1_800_000_000.0
_BUILD_TRANSACTION = 200_000


def host_sizes(urls: int, hosts: int, seed: int) -> list[int]:
    """Heavy-tailed host sizes (Pareto) summing to exactly ``urls``, each at least one."""
    rng = np.random.default_rng(seed)
    weights = rng.pareto(1.2, hosts) + 1.0
    sizes = np.maximum(1, np.floor(weights / weights.sum() * urls)).astype(np.int64)
    sizes[np.argmax(sizes)] += urls - int(sizes.sum())
    return [int(size) for size in sizes]


def _rows(sizes: list[int], seed: int) -> Iterator[tuple[object, ...]]:
    rng = random.Random(seed)
    refresh, discovery = int(UrlLane.REFRESH), int(UrlLane.DISCOVERY)
    for host_index, size in enumerate(sizes):
        site = f"h{host_index:06d}.test"
        for page in range(size):
            url = f"http://{site}/p{page:08d}"
            draw = rng.random()
            depth = min(page.bit_length(), 12)
            if draw < 0.30:  # queued: due since its discovery
                found = NOW - rng.random() * 30 * DAY
                yield (url, url, site, depth, 0, 0, found, None, None, found, discovery, None)
            elif draw < 0.90:  # fetched: due somewhere in the next six months (some overdue)
                due = NOW + (rng.random() * 200 - 20) * DAY
                fetched = due - 7 * DAY
                yield (
                    url,
                    url,
                    site,
                    depth,
                    0,
                    2,
                    fetched - DAY,
                    fetched,
                    200,
                    due,
                    refresh,
                    7 * DAY,
                )
            else:  # refused or failed before any success: never due again
                status = int(UrlStatus.REFUSED if draw < 0.95 else UrlStatus.FAILED)
                yield (
                    url,
                    url,
                    site,
                    depth,
                    0,
                    status,
                    NOW - DAY,
                    NOW,
                    None,
                    None,
                    discovery,
                    None,
                )


def build(path: Path, urls: int, hosts: int, seed: int) -> dict[str, float]:
    SqliteFrontier(path).close()  # the store's own schema and indexes
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=OFF")
    db.execute("PRAGMA cache_size=-1048576")  # 1 GiB while building
    insert = (
        "INSERT INTO urls (canonical, fetch_url, site, depth, redirects, status, discovered_at, "
        "fetched_at, http_status, next_due, lane, refresh_interval) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    sizes = host_sizes(urls, hosts, seed)
    started = time.perf_counter()
    rows = _rows(sizes, seed)
    written = 0
    while written < urls:
        chunk = [row for _, row in zip(range(_BUILD_TRANSACTION), rows, strict=False)]
        db.execute("BEGIN")
        db.executemany(insert, chunk)
        db.execute("COMMIT")
        written += len(chunk)
    db.executemany(
        "INSERT INTO sites (site, state, added_at) VALUES (?, 'seed', ?)",
        [(f"h{i:06d}.test", NOW) for i in range(hosts)],
    )
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("ANALYZE")
    db.close()
    seconds = time.perf_counter() - started
    return {
        "rows": written,
        "build_seconds": round(seconds, 1),
        "rows_per_second": round(written / seconds),
        "file_gib": round(path.stat().st_size / 2**30, 2),
        "largest_host_urls": max(sizes),
        "median_host_urls": int(statistics.median(sizes)),
    }


def _time_ms(fn: object, *args: object) -> tuple[float, int]:
    assert callable(fn)
    started = time.perf_counter()
    result = fn(*args)
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, sum(len(urls) for urls in result.values())


def _summary(samples: list[tuple[float, int]]) -> dict[str, float]:
    times = sorted(ms for ms, _ in samples)
    return {
        "urls_min": min(n for _, n in samples),
        "ms_median": round(statistics.median(times), 2),
        "ms_p90": round(times[int(0.9 * (len(times) - 1))], 2),
        "ms_max": round(times[-1], 2),
    }


def due_benchmark(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="courtier-bench-frontier-", dir=args.dir))
    path = root / "frontier.sqlite3"
    try:
        built = build(path, args.urls, args.hosts, args.seed)
        print(json.dumps({"build": built}), flush=True)
        store = SqliteFrontier(path)
        rng = random.Random(args.seed)
        hosts = [f"h{i:06d}.test" for i in range(args.hosts)]
        biggest = [
            f"h{i:06d}.test"
            for i in np.argsort(host_sizes(args.urls, args.hosts, args.seed))[-100:]
        ]
        results = {}
        for name, limit, count in (("100 hosts x 10", 10, 100), ("1000 hosts x 1", 1, 1000)):
            samples = [
                _time_ms(store.due, limit, rng.sample(hosts, count), NOW)
                for _ in range(args.repeats)
            ]
            results[f"due {name}"] = _summary(samples)
        results["due 100 biggest hosts x 10"] = _summary(
            [_time_ms(store.due, 10, biggest, NOW) for _ in range(args.repeats)]
        )
        results["lease_due 100 hosts x 10"] = _summary(
            [
                _time_ms(store.lease_due, 10, rng.sample(hosts, 100), NOW)
                for _ in range(args.repeats)
            ]
        )
        store.close()
        for name, summary in results.items():
            print(json.dumps({"query": name, **summary}), flush=True)
    finally:
        if args.keep:
            print(json.dumps({"kept": str(path)}))
        else:
            shutil.rmtree(root, ignore_errors=True)


def discovered_links(offers: int, seed: int) -> list[NewUrl]:
    """Links as pages reveal them: each page links its site's 30 navigation URLs and 20
    content pages, two thirds of them already known, one third new."""
    rng = random.Random(seed)
    links: list[NewUrl] = []
    known: dict[str, int] = {}
    site_count = 200
    while len(links) < offers:
        site = f"s{rng.randrange(site_count):04d}.test"
        pages = known.get(site, 0)
        for nav in range(30):
            url = f"http://{site}/section/{nav}"
            links.append(NewUrl(url, url, site, 1))
        for _ in range(20):
            if pages and rng.random() < 2 / 3:
                page = rng.randrange(pages)
            else:
                page, pages = pages, pages + 1
            url = f"http://{site}/article/{page}"
            links.append(NewUrl(url, url, site, 2))
        known[site] = pages
    return links[:offers]


def ingest_benchmark(args: argparse.Namespace) -> None:
    links = discovered_links(args.offers, args.seed)
    root = Path(tempfile.mkdtemp(prefix="courtier-bench-ingest-", dir=args.dir))
    try:
        writer = DedupingWriter(SqliteFrontier(root / "cached.sqlite3"), capacity=args.capacity)
        started = time.perf_counter()
        for start in range(0, len(links), args.batch):
            writer.ingest(links[start : start + args.batch], NOW)
        cached_seconds = time.perf_counter() - started
        stats = writer.stats()
        writer.store.close()

        plain = SqliteFrontier(root / "plain.sqlite3")
        started = time.perf_counter()
        inserted = 0
        for start in range(0, len(links), args.batch):
            inserted += plain.ingest(links[start : start + args.batch], NOW).inserted
        plain_seconds = time.perf_counter() - started
        plain.close()
        print(
            json.dumps(
                {
                    "offers": len(links),
                    "batch": args.batch,
                    "with_cache_offers_per_s": round(len(links) / cached_seconds),
                    "without_cache_offers_per_s": round(len(links) / plain_seconds),
                    "inserted": stats.inserted,
                    "inserted_without_cache": inserted,
                    **{f"cache_{k}": v for k, v in stats.as_dict().items()},
                }
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    due = sub.add_parser("due", help="the due query on a big SQLite frontier")
    due.add_argument("--urls", type=int, default=10_000_000)
    due.add_argument("--hosts", type=int, default=10_000)
    due.add_argument("--repeats", type=int, default=30)
    due.add_argument("--keep", action="store_true", help="keep the built file")
    due.set_defaults(handler=due_benchmark)
    ingest = sub.add_parser("ingest", help="deduplicated ingest of discovered URLs")
    ingest.add_argument("--offers", type=int, default=2_000_000)
    ingest.add_argument("--batch", type=int, default=5_000)
    ingest.add_argument("--capacity", type=int, default=2_000_000)
    ingest.set_defaults(handler=ingest_benchmark)
    for each in (due, ingest):
        each.add_argument("--seed", type=int, default=7)
        each.add_argument("--dir", default="/tmp", help="where the temporary store goes")
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
