"""Do the runtime helpers pay at crawl level? The crawl with each one swapped for its plain
equivalent, against the crawl as shipped: CPU-seconds per 1,000 requests and utilisation.

    python bench/bench_runtime.py --sites 600 --duration 30 --rounds 5
    python bench/bench_runtime.py --sites 2000 --duration 40 --rounds 3 --variants shipped,all
    python bench/bench_runtime.py --summarise runs.jsonl        # the table of runs made before
    python bench/bench_runtime.py --micro                       # what each swap costs per call

Variants (``VARIANTS``): ``shipped`` is the crawl as it is; each other one swaps one helper
for the plain thing (``bench/_plain_runtime.py`` says how): ``ascii_regex`` RE2's
phone-candidate scan on ASCII text only (``str.isascii`` for ``digits_all_ascii``),
``gc_pacing`` CPython's collector as it starts, ``event_loop`` the standard library's loop
(``-s crawl.event_loop=asyncio``); ``all`` swaps every one, and ``a+b`` swaps ``a`` and ``b``
together. (The helpers it found paying nothing are gone; commit 4cd5786 swaps them too:
``fast_init``, ``pickling``, ``compact_json``.) Each run is
`bench_rebook.py`'s (``_crawlbench.run``: a fresh simulated web, `courtier crawl` against it,
the CPU of the crawl's process and its parse workers, the server-side audit), started through
``_plain_runtime.py`` for every variant, ``shipped`` included.

The host is shared and its speed drifts for minutes at a time, so one round runs every
variant once, in an order rotated from round to round, and a variant is compared with the
``shipped`` run of its own round: the table gives each variant's median and range over the
rounds and the paired change, with how many rounds had the plain crawl cost more. A change
smaller than the spread of the ``shipped`` runs is noise, whatever its sign.

``--micro`` times the calls ``ascii_regex`` speeds up, in a child process with the swap and
one without (interleaved, best of three children): what a crawl-level change
could be made of. Loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
LAUNCHER = BENCH / "_plain_runtime.py"
ASYNCIO = "crawl.event_loop=asyncio"
SWAPPABLE = ("ascii_regex", "gc_pacing")
VARIANTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "shipped": ((), ()),
    **{name: ((name,), ()) for name in SWAPPABLE},
    "event_loop": ((), (ASYNCIO,)),
    "all": (SWAPPABLE, (ASYNCIO,)),
}
"""Variant -> (helpers ``_plain_runtime.py`` swaps, crawl settings)."""


def variant_swaps(variant: str) -> tuple[list[str], list[str]]:
    """What ``variant`` (a name of ``VARIANTS``, or names joined by ``+``) swaps: the helpers
    and the crawl settings."""
    plain: list[str] = []
    settings: list[str] = []
    for name in variant.split("+"):
        if name not in VARIANTS:
            raise SystemExit(f"no variant {name!r}: {', '.join(VARIANTS)}, or names joined by +")
        plain += [h for h in VARIANTS[name][0] if h not in plain]
        settings += [s for s in VARIANTS[name][1] if s not in settings]
    return plain, settings


def crawl_run(variant: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from _crawlbench import run, world_params

    plain, settings = variant_swaps(variant)
    params = world_params(args.size, args.sites or None, args.page_bytes, args.seed)
    env = {**os.environ, "COURTIER_PLAIN": ",".join(plain)}
    result = run(
        "courtier",
        args.size,
        params,
        workdir,
        args.duration,
        settings=settings,
        courtier=[sys.executable, str(LAUNCHER)],
        env=env,
    )
    if result.returncode != 0 or not result.stats:
        raise SystemExit(f"{variant}: courtier crawl exited {result.returncode} (see {workdir})")
    d = result.as_dict()
    return {
        "variant": variant,
        "requests": d["requests"],
        "requests_per_s": d["requests_per_s"],
        "utilisation": d["utilisation"],
        "utilisation_second_half": d["utilisation_second_half"],
        "cpu_s_per_1000": d["cpu_s_per_1000"],
        "cpu_s_per_1000_second_half": d["cpu_s_per_1000_second_half"],
        "main_cpu_s": d["main_cpu_s"],
        "cpu_s": d["cpu_s"],
        "loop_lag_p99_ms": d["loop_lag_p99_ms"],
        "audit_ok": d["audit_ok"],
        "host_us": d["host_us"],
    }


def crawl(args: argparse.Namespace) -> list[dict[str, Any]]:
    variants = args.variants.split(",")
    if "shipped" not in variants:
        raise SystemExit("--variants: 'shipped' must be one of them")
    for variant in variants:
        variant_swaps(variant)  # an unknown name fails here, not after an hour of runs
    rows: list[dict[str, Any]] = []
    for round_ in range(1, args.rounds + 1):
        shift = (round_ - 1) % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            with tempfile.TemporaryDirectory(prefix="courtier-bench-") as tmp:
                row = {"round": round_, **crawl_run(variant, args, Path(tmp) / variant)}
            rows.append(row)
            print(
                f"round {round_} {variant:12} {row['requests_per_s']:7.1f} req/s "
                f"util {row['utilisation']:.3f} cpu/1000 {row['cpu_s_per_1000']:.2f} "
                f"(2nd half {row['cpu_s_per_1000_second_half']}) lag p99 "
                f"{row['loop_lag_p99_ms']} ms audit_ok={row['audit_ok']} host_us={row['host_us']}",
                flush=True,
            )
            if args.out:
                with args.out.open("a") as out:
                    out.write(json.dumps(row) + "\n")
    return rows


def _spread(values: list[float], fmt: str = "{:.2f}") -> str:
    if not values:
        return "-"
    med = fmt.format(statistics.median(values))
    return f"{med} ({fmt.format(min(values))}..{fmt.format(max(values))})"


def summary(rows: list[dict[str, Any]]) -> str:
    """The table (Markdown): each variant's figures over the rounds, and its change against
    the ``shipped`` run of the same round."""
    by_variant: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_variant.setdefault(row["variant"], []).append(row)
    shipped = {row["round"]: row for row in by_variant.get("shipped", [])}
    lines = [
        "| variant (plain) | runs | requests/s | utilisation | CPU-s / 1,000 req "
        "| 2nd half | loop lag p99 ms | CPU/1,000 vs shipped, same round | plain costs more |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for variant, runs in by_variant.items():

        def values(key: str, runs: list[dict[str, Any]] = runs) -> list[float]:
            return [float(r[key]) for r in runs if r.get(key) is not None]

        changes = [
            100 * (r["cpu_s_per_1000"] / shipped[r["round"]]["cpu_s_per_1000"] - 1)
            for r in runs
            if r["round"] in shipped
        ]
        paired = "-" if variant == "shipped" or not changes else _spread(changes, "{:+.1f}%")
        more = "-" if variant == "shipped" else f"{sum(c > 0 for c in changes)} of {len(changes)}"
        lines.append(
            f"| {variant} | {len(runs)} | {_spread(values('requests_per_s'), '{:.0f}')} "
            f"| {_spread(values('utilisation'), '{:.3f}')} "
            f"| {_spread(values('cpu_s_per_1000'))} "
            f"| {_spread(values('cpu_s_per_1000_second_half'))} "
            f"| {_spread(values('loop_lag_p99_ms'), '{:.0f}')} | {paired} | {more} |"
        )
    audit = all(row["audit_ok"] for row in rows)
    return "\n".join(lines) + f"\n\n{len(rows)} runs, audit OK in {'all' if audit else 'not all'}"


# -- micro: the calls each helper speeds up -------------------------------------------------


def _best(fn: Callable[[], object], number: int, repeat: int = 7) -> float:
    """Best of ``repeat`` timings of ``number`` calls, in microseconds a call."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, time.perf_counter() - started)
    return best / number * 1e6


def micro_child(helper: str) -> dict[str, float]:
    """The calls ``helper`` speeds up, timed in this process (swapped or not by the
    ``COURTIER_PLAIN`` this child was started with): microseconds a call."""
    sys.path.insert(0, str(BENCH))
    import _plain_runtime  # noqa: F401  (the swaps, before Courtier's modules are imported)
    from bench_parse import _simweb_pages
    from courtier.content.decode import decode
    from courtier.sinks.redact import DEFAULT_POLICY, _candidates, redact

    if helper != "ascii_regex":
        raise SystemExit(f"no micro benchmark for {helper}")
    texts = [decode(body, "text/html; charset=utf-8").text for _, body in _simweb_pages(150)]
    ascii_ = [t for t in texts if t.isascii()]
    others = [t for t in texts if not t.isascii()]
    return {
        f"phone candidates, a page of ASCII text ({len(ascii_)})": _best(
            lambda: [list(_candidates(t)) for t in ascii_], 1, 5
        )
        / len(ascii_),
        f"phone candidates, a page with other text ({len(others)})": _best(
            lambda: [list(_candidates(t)) for t in others], 1, 5
        )
        / len(others),
        "redact a simulated page": _best(
            lambda: [redact(t, DEFAULT_POLICY, "US") for t in texts], 1, 5
        )
        / len(texts),
    }


def micro(helpers: list[str]) -> None:
    for helper in helpers:
        results: dict[bool, list[dict[str, float]]] = {False: [], True: []}
        for round_ in range(3):
            for plain in (round_ % 2 == 1, round_ % 2 == 0):  # the order alternates
                env = {**os.environ, "COURTIER_PLAIN": helper if plain else ""}
                out = subprocess.run(
                    [sys.executable, __file__, "--micro-child", helper],
                    env=env, check=True, capture_output=True, text=True,
                ).stdout  # fmt: skip
                results[plain].append(json.loads(out.splitlines()[-1]))
        print(f"{helper}: best of 3 children, us a call (shipped -> plain)")
        for name in results[False][0]:
            shipped = min(r[name] for r in results[False])
            plain = min(r[name] for r in results[True])
            print(f"  {name:48} {shipped:9.2f} -> {plain:9.2f}  ({plain / shipped:.2f}x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="web", help="world preset, as for demo")
    parser.add_argument("--sites", type=int, default=600, help="seed sites (0: the preset's)")
    parser.add_argument("--page-bytes", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", type=Path, help="append each run, as a JSON line, to this file")
    parser.add_argument("--summarise", type=Path, help="only print the table of these runs")
    parser.add_argument("--micro", action="store_true", help="per-call timings instead")
    parser.add_argument("--micro-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(BENCH))
    if args.micro_child:
        print(json.dumps(micro_child(args.micro_child)))
        return 0
    if args.micro:
        micro(["ascii_regex"])  # the collector's work is all at crawl level
        return 0
    if args.summarise:
        rows = [json.loads(line) for line in args.summarise.read_text().splitlines() if line]
    else:
        rows = crawl(args)
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
