"""Benchmark: canonical keys for 1M URLs on one core (target: at least 100,000 URLs/s).

The URLs look like links extracted from crawled pages: 20,000 sites (a few IDN, IPv4 and IPv6
hosts), each host written in several spellings (case, trailing dot, default port, IPv4 radix),
paths of one to five segments with some percent-encoding and dot segments, queries on 40% of
the links (some with tracking parameters), fragments on 10%. They are generated before the
clock starts, from a fixed seed, so runs are comparable.

    PYTHONPATH=src python bench/bench_url.py                 # 1M URLs
    PYTHONPATH=src python bench/bench_url.py --count 200000 --json

What is timed: ``parse_url(raw).canonical`` for every URL (WHATWG parse, host canonicalisation
through the bounded host cache, path and query normalisation). ``--stores`` adds
``object_store`` (the bucket lookup every limit-key computation also needs).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable

from courtier.url import object_store, parse_url
from courtier.url.host import finish_host

_WORDS = ("news", "article", "category", "product", "item", "page", "photos", "blog", "2024",
          "archive", "tag", "user", "profile", "search", "about", "contact", "help", "index",
          "static", "assets", "img", "css", "js", "video", "story", "world", "sport")  # fmt: skip
_TLDS = ("com", "org", "net", "de", "co.uk", "fr", "io", "example", "test")
_IDN_LABELS = ("tŷ", "bücher", "café", "日本語", "россия", "mañana")
_STORE_HOSTS = ("media.s3.amazonaws.com", "cdn-bucket.s3.eu-west-1.amazonaws.com",
                "storage.googleapis.com", "acct01.blob.core.windows.net")  # fmt: skip


def _site_hosts(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """(kind, host) for each site: mostly ASCII domains, some IDN, IPv4, IPv6, stores."""
    sites = []
    for index in range(count):
        roll = rng.random()
        if roll < 0.90:
            label = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(4, 12)))
            sites.append(("domain", f"www.{label}{index}.{rng.choice(_TLDS)}"))
        elif roll < 0.95:
            sites.append(("domain", f"{rng.choice(_IDN_LABELS)}{index}.example"))
        elif roll < 0.98:
            sites.append(("ipv4", str(rng.getrandbits(32))))
        elif roll < 0.99:
            sites.append(("ipv6", f"2001:db8::{index:x}"))
        else:
            sites.append(("domain", rng.choice(_STORE_HOSTS)))
    return sites


def _spell(rng: random.Random, kind: str, host: str) -> str:
    """One of the ways a page writes the host."""
    if kind == "ipv4":
        number = int(host)
        style = rng.randrange(4)
        if style == 0:
            return str(number)
        octets = number.to_bytes(4, "big")
        if style == 1:
            return ".".join(str(octet) for octet in octets)
        if style == 2:
            return ".".join(f"0{octet:o}" for octet in octets)
        return f"0x{octets[0]:x}.{int.from_bytes(octets[1:], 'big')}"
    if kind == "ipv6":
        return f"[{host.upper() if rng.random() < 0.3 else host}]"
    if rng.random() < 0.2:
        host = host.upper()
    if rng.random() < 0.05:
        host += "."
    return host


def _path(rng: random.Random) -> str:
    segments = [rng.choice(_WORDS) for _ in range(rng.randint(1, 5))]
    if rng.random() < 0.1:
        segments.append(f"{rng.choice(_WORDS)}%20{rng.choice(_WORDS)}%7e")
    if rng.random() < 0.05:
        segments.insert(1, "..")
    if rng.random() < 0.3:
        segments[-1] += f"-{rng.randint(1, 99999)}.html"
    return "/" + "/".join(segments)


def _query(rng: random.Random) -> str:
    if rng.random() >= 0.4:
        return ""
    params = [f"{rng.choice(_WORDS)}={rng.randint(0, 999)}" for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.25:
        params.append(f"utm_source={rng.choice(_WORDS)}")
    if rng.random() < 0.05:
        params.append("PHPSESSID=0123456789abcdef")
    rng.shuffle(params)
    return "?" + "&".join(params)


def make_urls(count: int, sites: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    hosts = _site_hosts(rng, sites)
    urls = []
    for _ in range(count):
        kind, host = hosts[min(int(rng.paretovariate(1.2)) - 1, sites - 1)] if rng.random() < 0.5 \
            else rng.choice(hosts)  # fmt: skip
        scheme = "https" if rng.random() < 0.8 else "http"
        port = ""
        if rng.random() < 0.1:
            port = ":443" if scheme == "https" else ":80"
        elif rng.random() < 0.02:
            port = ":8080"
        fragment = "#section" if rng.random() < 0.1 else ""
        urls.append(
            f"{scheme}://{_spell(rng, kind, host)}{port}{_path(rng)}{_query(rng)}{fragment}"
        )
    return urls


def _time(work: Callable[[str], object], urls: list[str]) -> float:
    start = time.perf_counter()
    for raw in urls:
        work(raw)
    return time.perf_counter() - start


def _canonical_key(raw: str) -> str:
    return parse_url(raw).canonical


def _canonical_key_and_store(raw: str) -> object:
    url = parse_url(raw)
    return url.canonical, object_store(url)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000, help="URLs to canonicalise")
    parser.add_argument("--sites", type=int, default=20_000, help="distinct sites")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--stores", action="store_true", help="also look up the object store")
    parser.add_argument("--json", action="store_true", help="one JSON line of results")
    args = parser.parse_args(argv)

    generated_at = time.perf_counter()
    urls = make_urls(args.count, args.sites, args.seed)
    generation = time.perf_counter() - generated_at
    work = _canonical_key_and_store if args.stores else _canonical_key
    seconds = _time(work, urls)
    keys = len({parse_url(raw).canonical for raw in urls[:100_000]})
    cache = finish_host.cache_info()
    result = {
        "urls": len(urls),
        "seconds": round(seconds, 3),
        "urls_per_second": round(len(urls) / seconds),
        "microseconds_per_url": round(seconds / len(urls) * 1e6, 3),
        "with_stores": args.stores,
        "distinct_keys_in_first_100k": keys,
        "host_cache_hits": cache.hits,
        "host_cache_misses": cache.misses,
        "generation_seconds": round(generation, 1),
        "python": sys.version.split()[0],
    }
    if args.json:
        print(json.dumps(result))
    else:
        for name, value in result.items():
            print(f"{name:>28}: {value}")
        target = "meets" if len(urls) / seconds >= 100_000 else "MISSES"
        print(f"{'target 100,000 URLs/s':>28}: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
