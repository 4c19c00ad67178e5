"""Origin inference for N hosts against the simulated web's DNS, timed, and judged.

The simulated web runs in a subprocess (its own CPU and event loop) with a world of ``--hosts``
seed sites split like a real mix (``params_for_total``: 60% standalone, 25% tenants of the
CNAME platform, 15% tenants of the header-only platform). The timed part is
``OriginInference.add(hosts)``: the A, AAAA and PTR queries of every host through
``DnsEvidenceSource`` with at most ``--concurrency`` queries in flight, then clustering.
Header probes are off by default: they are booked requests (site key and the address set's
origin key at the default limits, as ``courtier origins infer --probe`` books them), so their
duration is a matter of policy, not speed; ``--probe`` adds them.

The verdict compares the origins with the world's ground truth: every CNAME-platform tenant in
one origin, the share of header-platform tenants in their platform's origin, and standalone
sites merged with anything (must be 0).

    PYTHONPATH=src python bench/bench_origins.py --hosts 10000 --concurrency 64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path

from courtier.cli.origins import booked_probe_requests
from courtier.config import Config
from courtier.net.policy import AddressPolicy
from courtier.origins.cluster import Assignment, cluster
from courtier.origins.dns_evidence import DnsEvidenceSource
from courtier.origins.infer import InferenceResult, OriginInference
from courtier.origins.probe import HttpHeaderProbe
from courtier.simweb import SiteKind, World, WorldParams
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import params_for_total


def judge(world: World, assignments: Mapping[str, Assignment]) -> dict[str, object]:
    members: dict[str, list[str]] = defaultdict(list)
    for site, a in assignments.items():
        members[a.origin].append(site)

    def of(kind: SiteKind) -> list[str]:
        return [h for h in assignments if world.sites[h].kind is kind]

    cname = of(SiteKind.CNAME_TENANT)
    header = of(SiteKind.HEADER_TENANT)
    standalone = of(SiteKind.STANDALONE)
    cname_origins = {assignments[h].origin for h in cname}
    header_origin, header_count = Counter(assignments[h].origin for h in header).most_common(1)[0]
    return {
        "cname_tenants": len(cname),
        "cname_tenants_in_one_origin": len(cname_origins) == 1
        and set(members[next(iter(cname_origins))]) == set(cname),
        "header_tenants": len(header),
        "header_tenants_in_platform_origin": round(header_count / len(header), 4),
        "header_origin_pure": set(members[header_origin]) <= set(header),
        "standalone": len(standalone),
        "standalone_merged": sum(1 for h in standalone if len(members[assignments[h].origin]) > 1),
        "origins": len(members),
    }


async def infer(
    web: SimWebProcess, hosts: list[str], concurrency: int, probe: bool
) -> tuple[OriginInference, InferenceResult, float]:
    policy = AddressPolicy(allow=[web.allow_net])

    def allowed(address: str) -> bool:
        return policy.check(address).allowed

    dns = DnsEvidenceSource(web.dns, concurrency=concurrency)
    started = time.perf_counter()
    if probe:
        book = booked_probe_requests(Config())
        async with HttpHeaderProbe(allowed, port=web.port, book=book) as prober:
            inference = OriginInference(dns, probe=prober, address_allowed=allowed)
            result = await inference.add(hosts)
    else:
        inference = OriginInference(dns, address_allowed=allowed)
        result = await inference.add(hosts)
    return inference, result, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000, help="seed sites (default 10000)")
    parser.add_argument("--concurrency", type=int, default=64, help="DNS queries in flight")
    parser.add_argument("--probe", action="store_true", help="add header probes (slow: polite)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    params = params_for_total(WorldParams(seed=args.seed, n_horizon=1, n_farm=0), args.hosts)
    with tempfile.TemporaryDirectory() as tmp, SimWebProcess(Path(tmp), params) as web:
        world = web.world
        hosts = list(world.seed_hosts)
        inference, result, elapsed = asyncio.run(infer(web, hosts, args.concurrency, args.probe))
    started = time.perf_counter()
    cluster(inference.facts().values())  # the clusterer alone, on the same facts
    cluster_seconds = time.perf_counter() - started
    verdict = judge(world, result.assignments)
    print(
        json.dumps(
            {
                "hosts": len(hosts),
                "concurrency": args.concurrency,
                "probed": result.probed,
                "seconds": round(elapsed, 2),
                "hosts_per_second": round(len(hosts) / elapsed, 1),
                "cluster_seconds": round(cluster_seconds, 3),
                **verdict,
            }
        )
    )
    ok = (
        verdict["cname_tenants_in_one_origin"]
        and verdict["standalone_merged"] == 0
        and float(str(verdict["header_tenants_in_platform_origin"])) >= 0.95
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
