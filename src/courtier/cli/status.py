"""``courtier status``: a crawl's state from its store — workers, leases, frontier, rates.

For a PostgreSQL store (a scale-out crawl): every worker with its heartbeat age, shards held
and requests sent; the shard leases (held, free, expired); the frontier counts; URLs fetched
in the last minute. For a SQLite store: the crawl holding it (from its lock file), the
frontier counts and the last minute's fetches. With ``--site HOST``: that site alone
(``site_status``), and on PostgreSQL the worker holding it. With ``--origin NAME|SITE``: that
origin (``origin_status``): its sites, budget, recent rate, pauses, queue and, on
PostgreSQL, the workers holding its sites.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from courtier.cli.options import add_config_arguments, load_config
from courtier.cli.origin_status import origin_status, print_origin
from courtier.cli.site_status import (
    canonical_site,
    controls_status,
    print_controls,
    print_site,
    site_status,
)
from courtier.inputs import InputError, PostgresStore, SqliteStore, parse_store

if TYPE_CHECKING:
    from courtier.config import Config
    from courtier.frontier.sqlite_store import SqliteFrontier


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status",
        help="a crawl's workers, leases, frontier counts and rates, from its store",
        description="Read a crawl's store (SQLite file or PostgreSQL URL) and show who is "
        "crawling it, which shards they hold, how big the frontier is and how fast it moves.",
    )
    parser.add_argument("--store", required=True, help="a SQLite store file or a PostgreSQL URL")
    one = parser.add_mutually_exclusive_group()
    one.add_argument(
        "--site",
        metavar="HOST",
        help="one site: its URLs, recent fetches, robots.txt, pauses kept, origin, worker",
    )
    one.add_argument(
        "--origin",
        metavar="NAME|SITE",
        help="one origin: its sites, budget, recent rate, pauses, queue, workers",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="the crawl's output directory: each worker's discovery share (its stats file); "
        "with --origin, the request log's recent rate",
    )
    add_config_arguments(parser)  # the budget --origin shows is the configuration's
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    spec = parse_store(args.store)
    if args.origin is not None:
        config = load_config(args)
        one = (
            _pg_origin(spec, args.origin, config, args.out)
            if isinstance(spec, PostgresStore)
            else _sqlite_origin(spec, args.origin, config, args.out)
        )
        if args.json:
            print(json.dumps(one))
        else:
            print_origin(one)
        return 0
    if args.site is not None:
        site = canonical_site(args.site)
        one = _pg_site(spec, site) if isinstance(spec, PostgresStore) else _sqlite_site(spec, site)
        if args.json:
            print(json.dumps(one))
        else:
            print_site(one)
        return 0
    status = _postgres(spec) if isinstance(spec, PostgresStore) else _sqlite(spec)
    if args.out is not None:
        status["split"] = worker_splits(args.out)
    if args.json:
        print(json.dumps(status))
    else:
        _print(status)
    return 0


_SITE_ROWS = (
    "SELECT status, count(*), max(fetched_at), count(*) FILTER (WHERE fetched_at > {p}) "
    "FROM urls WHERE site = {p} GROUP BY status"
)


def _open_sqlite(spec: SqliteStore) -> tuple[Path, SqliteFrontier]:
    """The SQLite store ``--store`` names, opened (a usage error when it is not one)."""
    from courtier.frontier.base import FrontierError
    from courtier.frontier.sqlite_store import SqliteFrontier

    path = Path(spec.path)
    if not path.is_file():
        raise InputError(f"--store: {path}: no such store")
    try:
        return path, SqliteFrontier(path)
    except FrontierError as exc:
        raise InputError(f"--store: {exc}") from None


def _sqlite_site(spec: SqliteStore, site: str) -> dict[str, Any]:
    import sqlite3

    path, store = _open_sqlite(spec)
    now = time.time()
    try:
        with contextlib.closing(sqlite3.connect(path)) as db:
            rows = db.execute(_SITE_ROWS.format(p="?"), (now - 60, site)).fetchall()
        return site_status(store, site, rows, now)
    finally:
        store.close()


def _pg_site(spec: PostgresStore, site: str) -> dict[str, Any]:
    import psycopg

    from courtier.frontier.base import FrontierError
    from courtier.frontier.postgres_store import PostgresFrontier
    from courtier.pipeline.cluster.shards import shard_of
    from courtier.politeness.limiter.postgres import LEASES

    now = time.time()
    try:
        store = PostgresFrontier(spec.conninfo)
    except FrontierError as exc:
        raise InputError(f"--store: {exc}") from None
    try:
        with psycopg.connect(spec.conninfo, autocommit=True) as conn:
            rows = conn.execute(_SITE_ROWS.format(p="%s"), (now - 60, site)).fetchall()
            leases = _rows(conn, f"SELECT shard, owner, expires_at FROM {LEASES}")
        status = site_status(store, site, rows, now)
    finally:
        store.close()
    holder = None
    if leases:
        shard = shard_of(site, len(leases))
        held = [owner for number, owner, expires in leases if number == shard and expires > now]
        holder = held[0] if held else None
    status["held_by"] = holder
    return status


def _sqlite_origin(
    spec: SqliteStore, text: str, config: Config, out: Path | None
) -> dict[str, Any]:
    import sqlite3

    path, store = _open_sqlite(spec)
    try:
        with contextlib.closing(sqlite3.connect(path)) as db:

            def query(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
                return list(db.execute(sql, params).fetchall())

            return origin_status(store, text, config, query, out=out)
    finally:
        store.close()


def _pg_origin(spec: PostgresStore, text: str, config: Config, out: Path | None) -> dict[str, Any]:
    import psycopg

    from courtier.frontier.base import FrontierError
    from courtier.frontier.postgres_store import PostgresFrontier
    from courtier.pipeline.cluster.shards import shard_of
    from courtier.politeness.limiter.postgres import LEASES

    now = time.time()
    try:
        store = PostgresFrontier(spec.conninfo)
    except FrontierError as exc:
        raise InputError(f"--store: {exc}") from None
    try:
        with psycopg.connect(spec.conninfo, autocommit=True) as conn:

            def query(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
                return list(conn.execute(sql.replace("?", "%s").encode(), params).fetchall())

            status = origin_status(store, text, config, query, out=out, now=now)
            leases = _rows(conn, f"SELECT shard, owner, expires_at FROM {LEASES}")
    finally:
        store.close()
    held: dict[str, int] = {}
    if leases:
        owners = {number: owner for number, owner, expires in leases if expires > now and owner}
        for site in status["sites"]:
            owner = owners.get(shard_of(site, len(leases)))
            if owner is not None:
                held[owner] = held.get(owner, 0) + 1
    status["held_by"] = held
    return status


def _recent(fetched: list[float], now: float) -> float:
    return round(sum(1 for at in fetched if at > now - 60) / 60, 2)


def _postgres(spec: PostgresStore) -> dict[str, Any]:
    import psycopg

    from courtier.frontier.base import FrontierError
    from courtier.frontier.postgres_store import PostgresFrontier
    from courtier.pipeline.cluster.shards import WORKERS
    from courtier.politeness.limiter.postgres import LEASES

    try:
        store = PostgresFrontier(spec.conninfo)
    except FrontierError as exc:
        raise InputError(f"--store: {exc}") from None
    try:
        counts = store.counts()
        controls = controls_status(store, time.time())
    finally:
        store.close()
    with psycopg.connect(spec.conninfo, autocommit=True) as conn:
        clock = conn.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
        now = float(clock[0]) if clock else time.time()
        workers = _rows(
            conn,
            f"SELECT id, host, pid, started_at, heartbeat_at, shards, "
            f"requests FROM {WORKERS} ORDER BY id",
        )
        leases = _rows(conn, f"SELECT shard, owner, token, expires_at FROM {LEASES}")
        per_minute = conn.execute(
            "SELECT count(*) FROM urls WHERE fetched_at > %s", (time.time() - 60,)
        ).fetchone()
    held = [lease for lease in leases if lease[1] is not None and lease[3] > now]
    return {
        "store": "postgresql",
        "workers": [
            {
                "id": w[0],
                "host": w[1],
                "pid": w[2],
                "up_s": round(now - w[3], 1),
                "heartbeat_age_s": round(now - w[4], 1),
                "shards": w[5],
                "requests": w[6],
            }
            for w in workers
        ],
        "shards": {
            "total": len(leases),
            "held": len(held),
            "expired": sum(1 for lease in leases if lease[1] is not None and lease[3] <= now),
            "free": sum(1 for lease in leases if lease[1] is None),
        },
        "frontier": counts,
        "fetched_per_s_last_minute": round(int(per_minute[0] if per_minute else 0) / 60, 2),
        **controls,
    }


def _rows(conn: Any, query: str) -> list[tuple[Any, ...]]:
    import psycopg

    try:
        return list(conn.execute(query).fetchall())
    except psycopg.errors.UndefinedTable:
        return []  # no worker of a scale-out crawl has run on this database yet


def _sqlite(spec: SqliteStore) -> dict[str, Any]:
    import sqlite3

    path, store = _open_sqlite(spec)
    try:
        counts = store.counts()
        controls = controls_status(store, time.time())
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        fetched = [
            row[0]
            for row in db.execute(
                "SELECT fetched_at FROM urls WHERE fetched_at > ?", (time.time() - 60,)
            )
        ]
    db.close()
    lock = path.with_name(path.name + ".lock")
    holder: dict[str, Any] = {}
    if lock.is_file():
        try:
            holder = json.loads(lock.read_text(encoding="utf-8") or "{}")
        except ValueError:
            holder = {}
    return {
        "store": "sqlite",
        "crawl": holder or None,
        "frontier": counts,
        "fetched_per_s_last_minute": _recent(fetched, time.time()),
        **controls,
    }


def worker_splits(out: Path) -> dict[str, dict[str, float]]:
    """Each worker's discovery share, from the stats file it keeps in ``out``
    (``stats-WORKER.json``); a file that does not read is left out."""
    splits = {}
    for path in sorted(out.glob("stats-*.json")):
        try:
            stats = json.loads(path.read_text(encoding="utf-8"))
            split = stats["crawl"]["split"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(split, dict) and split:
            splits[str(stats.get("worker") or path.stem.removeprefix("stats-"))] = split
    return splits


def _print(status: dict[str, Any]) -> None:
    out = sys.stdout
    if status["store"] == "postgresql":
        shards = status["shards"]
        out.write(
            f"shards: {shards['held']} held, {shards['free']} free, {shards['expired']} expired "
            f"(of {shards['total']})\n"
        )
        for w in status["workers"]:
            out.write(
                f"worker {w['id']} ({w['host']} pid {w['pid']}): {w['shards']} shards, "
                f"{w['requests']} requests, heartbeat {w['heartbeat_age_s']} s ago\n"
            )
    else:
        crawl = status["crawl"]
        if crawl:
            out.write(
                f"last crawl: {crawl.get('state')} (pid {crawl.get('pid')} on "
                f"{crawl.get('host')}, started {crawl.get('started')})\n"
            )
    frontier = ", ".join(f"{k} {v}" for k, v in status["frontier"].items())
    out.write(f"frontier: {frontier}\n")
    out.write(f"fetched in the last minute: {status['fetched_per_s_last_minute']}/s\n")
    for worker, split in status.get("split", {}).items():
        out.write(
            f"discovery share ({worker}): target {split.get('target', 0):.2f}, realised "
            f"{split.get('realised', 0):.2f} over {split.get('contested', 0):.0f} contested "
            f"choices (their mean target {split.get('mean_target', 0):.2f})\n"
        )
    print_controls(status)
