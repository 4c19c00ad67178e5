"""CPU cost of DNS: the guard's resolutions and origin inference, against the simulated web.

The simulated web (and its DNS server) runs in a subprocess, so ``time.process_time()`` here
counts only the crawler side: building, sending and parsing queries, caching, judging.

Phases, each on a fresh resolver:
- ``guard_cold``: ``Guard.resolve`` of every host once (A + AAAA on the wire per host).
- ``guard_warm``: the same hosts again (cache hits: what every later request of a site costs).
- ``infer``: ``OriginInference.add(hosts)`` (A, AAAA, PTR; then clustering).
- ``startup``: the crawl's start-up as ``courtier.api`` wires it: inference of every host,
  then the guard's first resolution of every host (sharing answers where the code allows).

    PYTHONPATH=src python bench/bench_dns.py --hosts 2000 --concurrency 64
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import DnsResolver
from courtier.origins.cluster import cluster
from courtier.origins.dns_evidence import DnsEvidenceSource
from courtier.origins.infer import OriginInference
from courtier.simweb import WorldParams
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import params_for_total


async def bounded(
    items: Iterable[str], concurrency: int, call: Callable[[str], Awaitable[Any]]
) -> list[Any]:
    gate = asyncio.Semaphore(concurrency)

    async def one(item: str) -> Any:
        async with gate:
            return await call(item)

    return await asyncio.gather(*(one(i) for i in items))


def evidence_source(nameserver: str, concurrency: int, resolver: DnsResolver | None) -> Any:
    """The inference's DNS source, sharing the guard's resolver when this code supports it."""
    try:
        return DnsEvidenceSource(nameserver, concurrency=concurrency, resolver=resolver)
    except TypeError:
        return DnsEvidenceSource(nameserver, concurrency=concurrency)


async def run(web: SimWebProcess, hosts: list[str], concurrency: int) -> dict[str, float]:
    policy = AddressPolicy(allow=[web.allow_net])
    out: dict[str, float] = {}

    async def timed(name: str, per: int, work: Callable[[], Awaitable[object]]) -> object:
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        result = await work()
        out[f"{name}_us_cpu"] = round((time.process_time() - cpu) / per * 1e6, 1)
        out[f"{name}_s_wall"] = round(time.perf_counter() - wall, 3)
        return result

    guard = Guard(policy, DnsResolver(web.dns))
    resolutions: Any = await timed(
        "guard_cold", len(hosts), lambda: bounded(hosts, concurrency, guard.resolve)
    )
    out["allowed"] = sum(1 for r in resolutions if r.allowed)
    await timed("guard_warm", len(hosts), lambda: bounded(hosts, concurrency, guard.resolve))

    # One-time costs outside the timing: the clusterer's public-suffix list and CDN rules.
    await OriginInference(evidence_source(web.dns, concurrency, None)).add(hosts[:20])
    source = evidence_source(web.dns, concurrency, None)
    await timed("infer_dns_only", len(hosts), lambda: bounded(hosts, 1000, source.lookup))
    inference = OriginInference(evidence_source(web.dns, concurrency, None))
    result: Any = await timed("infer", len(hosts), lambda: inference.add(hosts))
    out["dns_errors"] = sum(1 for f in inference.facts().values() if f.dns.error is not None)
    started = time.process_time()
    cluster(inference.facts().values())
    out["infer_cluster_only_us_cpu"] = round((time.process_time() - started) / len(hosts) * 1e6, 1)
    out["origins"] = len({a.origin for a in result.assignments.values()})

    resolver = DnsResolver(web.dns)
    guard = Guard(policy, resolver)
    inference = OriginInference(evidence_source(web.dns, concurrency, resolver))

    async def startup() -> None:
        await inference.add(hosts)
        await bounded(hosts, concurrency, guard.resolve)

    await timed("startup", len(hosts), startup)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    params = params_for_total(WorldParams(seed=args.seed, n_horizon=1, n_farm=0), args.hosts)
    with tempfile.TemporaryDirectory() as tmp, SimWebProcess(Path(tmp), params) as web:
        hosts = sorted(web.world.seed_hosts)
        out = asyncio.run(run(web, hosts, args.concurrency))
    print(json.dumps({"hosts": len(hosts), "concurrency": args.concurrency, **out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
