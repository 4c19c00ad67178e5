"""Crawl throughput at full load, judged from the server side: requests/s, the share of the
politeness ceiling used (overall and in the run's second half), the crawler's CPU seconds per
1,000 requests, how many booked slots were missed (the rebook rate), the event loop's lag and
the audit's violations.

    python bench/bench_rebook.py --sites 500 --page-bytes 300000 --duration 40
    python bench/bench_rebook.py --size web --sites 2000 --duration 40   # the real web's shapes
    python bench/bench_rebook.py --size web --sites 2000 --page-bytes 6000 --duration 60 \
        --store sqlite postgresql --workers 1 2 --runs 3      # a worker's CPU on either store

Sites answer after the real web's latencies by default (`--latency real`, docs/simweb.md: a
median of 350 ms, a tail to 4 s, 1% of sites hanging now and then); `--latency loopback`
answers as fast as the machine does (every figure in docs/benchmarks.md before 2026-12-07).

Each run starts a fresh simulated web in its own process and runs `courtier crawl` against it
in another (the command `courtier demo` runs, with the same world), so the crawler's CPU time
is its own: the `courtier crawl` process and its parse workers, never the simulated web.
Loopback only. See bench/_crawlbench.py for how each figure is taken.

`--store postgresql` crawls a fresh database of a throwaway PostgreSQL cluster (tests/pg.py:
the installed server binaries, on loopback) with `courtier crawl --store URL --workers N`
for each N of `--workers`; `--store sqlite` is the default store (one worker). With several
stores or worker counts each run takes every variant in turn, so variants are interleaved
and share the machine's slow and quiet spells. The crawler's CPU is the worker processes'
(and their parse workers') only; PostgreSQL's server CPU in the same run is printed apart
(`pg_cpu_s`), never added in.

It also prints the crawl's own spacing report (achieved start-to-start spacing against the
allowed one, per key type) and fails (exit 1, "SPACING FAIL") when site or origin keys that
work waited on ran more than 5% slower than they allow: every standalone site at half its
pace at 2,000 sites is a failure of the run, not a figure to explain.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from _crawlbench import kinds_text, run, world_params

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--size", default="demo", help="world preset, as for demo (web: the real web's shapes)"
    )
    parser.add_argument("--sites", type=int, default=500, help="seed sites (0: the preset's)")
    parser.add_argument("--page-bytes", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--latency",
        choices=("real", "loopback"),
        default="real",
        help="real: sites answer after the real web's latencies (median 350 ms, a tail to 4 s, "
        "1%% of sites hanging now and then); loopback: as fast as the machine answers",
    )
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "-s", dest="settings", action="append", default=[], help="a crawl setting, as for demo"
    )
    parser.add_argument("--keep", type=Path, help="keep the runs' files in this directory")
    parser.add_argument("--json", action="store_true", help="one JSON object per run")
    parser.add_argument(
        "--store",
        nargs="+",
        choices=("sqlite", "postgresql"),
        default=["sqlite"],
        help="the crawl's store: its SQLite file, or a throwaway PostgreSQL cluster's database",
    )
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1], help="workers on a PostgreSQL store"
    )
    args = parser.parse_args()
    params = world_params(args.size, args.sites or None, args.page_bytes, args.seed, args.latency)
    variants = [
        (store, workers)
        for store in args.store
        for workers in (args.workers if store == "postgresql" else [1])
    ]
    cluster = start_cluster() if "postgresql" in args.store else None
    try:
        return run_all(args, params, variants, cluster)
    finally:
        if cluster is not None:
            cluster.stop()


def run_all(
    args: argparse.Namespace,
    params: Any,
    variants: list[tuple[str, int]],
    cluster: Any,
) -> int:
    failed = False
    for n in range(1, args.runs + 1):
        for store, workers in variants:
            if not run_one(args, params, n, store, workers, cluster):
                failed = True
    return 1 if failed else 0


def run_one(
    args: argparse.Namespace, params: Any, n: int, store: str, workers: int, cluster: Any
) -> bool:
    """One run of one variant; False when it failed (exit status, spacing)."""
    label = store if store == "sqlite" else f"postgresql x{workers}"
    with tempfile.TemporaryDirectory(prefix="courtier-bench-") as tmp:
        workdir = (args.keep or Path(tmp)) / f"run{n}-{store}-{workers}"
        url, pg_before = None, 0.0
        if store == "postgresql":
            url = fresh_database(cluster)
            pg_before = server_cpu(cluster)
        result = run(
            "courtier",
            args.size,
            params,
            workdir,
            args.duration,
            settings=args.settings,
            store=url,
            workers=workers,
        )
        pg_cpu = server_cpu(cluster, settle=True) - pg_before if url else None
        if url is not None:
            drop_database(cluster, url)
    if result.returncode != 0 or not result.stats:
        print(f"run {n} {label}: courtier crawl exited {result.returncode}", file=sys.stderr)
        return False
    d, crawl = result.as_dict(), merged(result.stats)
    d.update(store=store, workers=workers, pg_cpu_s=None if pg_cpu is None else round(pg_cpu, 2))
    if args.json:
        print(json.dumps({**d, "crawl": result.stats}))
        return True
    half = d["cpu_s_per_1000_second_half"]
    pg = (
        ""
        if pg_cpu is None
        else f" pg_cpu_s={pg_cpu:.1f} ({1000 * pg_cpu / d['requests']:.2f}/1000)"
    )
    print(
        f"run {n} {label}: sites={d['seed_sites']} page_bytes={params.page_bytes} "
        f"requests={d['requests']} ({d['requests_per_s']}/s, {crawl['bytes'] / 1e6:.0f} MB, "
        f"media={sum(crawl.get('media_requests', {}).values())}) "
        f"ceiling={d['ceiling_units_per_s']} units/s utilisation={d['utilisation']:.3f} "
        f"second_half={d['utilisation_second_half']:.3f} by_kind={kinds_text(d)} "
        f"late_start={d['late_start']}/{d['origins_with_work']} "
        f"cpu_s_per_1000={d['cpu_s_per_1000']} (second half {half}; "
        f"cpu {d['cpu_s']}s, main {d['main_cpu_s']}s){pg} "
        f"slots={crawl['slots']} missed={crawl['missed_slots']} "
        f"rebook_rate={crawl['rebook_rate']:.4%} "
        f"loop_lag_p99={crawl['loop_lag_p99_ms']}ms max={crawl['loop_lag_max_ms']}ms "
        f"parse_queue={crawl.get('parse_queue_mean', '-')} "
        f"places_full={crawl.get('places_full_share', '-')} "
        f"audit_ok={d['audit_ok']} violations={d['violations'] or '-'} wall={d['wall_s']:.0f}s "
        f"host_us={'/'.join(map(str, d['host_us'] or ['-']))} "
        f"server_stalled={d['server_stalled_requests']}/{d['server_stall_max_ms']}ms "
        f"spacing={spacing_text(crawl)}"
    )
    drifted = spacing_drift(crawl)
    if drifted:
        print(f"run {n} {label}: SPACING FAIL: {drifted}", file=sys.stderr)
        return False
    return True


def merged(stats: dict[str, Any]) -> dict[str, Any]:
    """One summary from `--workers N`'s (a list of the workers' own): counts added, the
    rebook rate over all slots, the worst loop lag, the first worker's spacing report."""
    parts = stats.get("workers")
    if not parts:
        return stats
    out = dict(parts[0])
    for key in ("bytes", "slots", "missed_slots"):
        out[key] = sum(p.get(key, 0) for p in parts)
    out["media_requests"] = {"all": sum(sum(p.get("media_requests", {}).values()) for p in parts)}
    out["rebook_rate"] = out["missed_slots"] / out["slots"] if out["slots"] else 0.0
    for key in ("loop_lag_p99_ms", "loop_lag_max_ms"):
        out[key] = max(p.get(key, 0) for p in parts)
    return out


def start_cluster() -> Any:
    from pg import PostgresCluster

    return PostgresCluster().start()


def fresh_database(cluster: Any) -> str:
    """A new database on the cluster, as a crawl's `--store` URL (dropped after its run)."""
    import uuid

    import psycopg

    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"postgresql://postgres@127.0.0.1:{cluster.port}/{name}"


def drop_database(cluster: Any, url: str) -> None:
    """A finished run's database goes: the server's autovacuum of its tables would otherwise
    run during a later run, on the same cores."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def server_cpu(cluster: Any, settle: bool = False) -> float:
    """CPU seconds the PostgreSQL server has spent: the postmaster, its live processes and
    the sessions it has reaped (its children's times). `settle`: first wait for the crawl's
    sessions to end, so their time is counted."""
    pid = int((cluster.data / "postmaster.pid").read_text().split()[0])
    postmaster = psutil.Process(pid)
    for _ in range(50 if settle else 0):
        if not any(" bench_" in " ".join(c.cmdline()) for c in postmaster.children()):
            break  # no session on a bench database left: the server reaped them all
        time.sleep(0.1)
    own = postmaster.cpu_times()
    total = own.user + own.system + own.children_user + own.children_system
    for child in postmaster.children():
        try:
            times = child.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


SPACING_TOLERANCE = 1.05
"""Median achieved/allowed start-to-start spacing a key type may show: site and origin keys
that work waited on start at their allowance (the crawl's ``spacing`` report)."""


def spacing_text(crawl: dict[str, Any]) -> str:
    rows = crawl.get("spacing", {})
    return (
        ",".join(
            f"{kind}:x{row['median_ratio']:.2f}/p90x{row['p90_ratio']:.2f}/{row['starts']}"
            for kind, row in rows.items()
        )
        or "-"
    )


def spacing_drift(crawl: dict[str, Any]) -> str:
    """Site or origin keys whose median spacing drifted above their allowance (empty: none)."""
    rows = crawl.get("spacing", {})
    return ", ".join(
        f"{kind} keys x{row['median_ratio']:.2f} of their allowance (over {SPACING_TOLERANCE})"
        for kind in ("site", "origin")
        if (row := rows.get(kind))
        and row["starts"] >= 100
        and row["median_ratio"] > SPACING_TOLERANCE
    )


if __name__ == "__main__":
    sys.exit(main())
