"""Benchmark: PageRank over a synthetic host graph (default 1 million hosts, 10 million edges).

Run:  PYTHONPATH=src python bench/bench_pagerank.py [--hosts N] [--edges M] [--seed S]

The graph is scale-free-ish: edge destinations follow a Zipf-like popularity so a few hosts are
linked from everywhere (as on the web), sources are uniform, and a tenth of the hosts are
dangling (no out-links, like the horizon). Times are wall-clock, split into building the
sparse matrix plus iterating to convergence (what ``pagerank`` does), the build plus one
iteration alone, and generating the edges (not counted).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import time

import numpy as np

from courtier.graph.pagerank import pagerank


def synthetic_edges(hosts: int, edges: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    linking = hosts - hosts // 10  # the last tenth never links out: dangling
    src = rng.integers(0, linking, size=edges, dtype=np.int64)
    # Popularity ~ 1 / rank^0.8 over a random permutation of the hosts.
    popularity = 1.0 / np.arange(1, hosts + 1) ** 0.8
    cumulative = np.cumsum(popularity)
    cumulative /= cumulative[-1]
    order = rng.permutation(hosts)
    dst = order[np.searchsorted(cumulative, rng.random(edges), side="right").clip(0, hosts - 1)]
    links = rng.integers(1, 20, size=edges).astype(np.float64)
    return src, dst, np.log1p(links)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1_000_000)
    parser.add_argument("--edges", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args()

    started = time.perf_counter()
    src, dst, weight = synthetic_edges(args.hosts, args.edges, args.seed)
    generated = time.perf_counter() - started

    started = time.perf_counter()
    result = pagerank(args.hosts, src, dst, weight, tolerance=args.tolerance)
    ranked = time.perf_counter() - started

    # A real web graph mixes more slowly than a random one and needs more iterations. Time
    # the build plus one iteration, derive the cost of one more iteration, and project the
    # cost of 100 iterations from it.
    started = time.perf_counter()
    pagerank(args.hosts, src, dst, weight, max_iterations=1)
    build_seconds = time.perf_counter() - started
    per_iteration = (ranked - build_seconds) / max(1, result.iterations - 1)

    top = np.argsort(result.scores)[::-1][:3]
    print(
        json.dumps(
            {
                "hosts": args.hosts,
                "edges": args.edges,
                "generate_seconds": round(generated, 2),
                "pagerank_seconds": round(ranked, 2),
                "iterations": result.iterations,
                "converged": result.converged,
                "residual": result.residual,
                "build_plus_one_iteration_seconds": round(build_seconds, 2),
                "seconds_per_iteration": round(per_iteration, 3),
                "projected_100_iterations_seconds": round(build_seconds + 99 * per_iteration, 2),
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                "score_sum": round(float(result.scores.sum()), 12),
                "top_hosts": [int(i) for i in top],
                "python": platform.python_version(),
            }
        )
    )


if __name__ == "__main__":
    main()
