"""Scrapy, set as politely as it allows, crawling the simulated web (run by bench_vs_scrapy.py).

    python bench/_scrapy_crawl.py --seeds SEEDS --dns 127.B.255.53:PORT --duration 60 \
        --result OUT.json [--concurrency N]

Politeness: robots.txt obeyed (for the token `courtier`, the one the audit judges), one request
in flight per domain, 1 s between requests to a domain with no random jitter, AutoThrottle on
(it can only lengthen the delay). Scrapy has no notion of an origin shared by many domains, of
Crawl-delay or of Retry-After: those it does not do.

Names resolve through the simulated web's DNS server only: `SimWebResolver` (the
TWISTED_DNS_RESOLVER setting) asks it with twisted.names, follows CNAME chains, caches the
first answer per name, and refuses any answer outside 127.0.0.0/8, so nothing but loopback is
ever connected to. The crawl follows every link (Scrapy's LinkExtractor: images and other
non-page extensions are skipped) inside the seed hosts (`allowed_domains`).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.http import TextResponse
from scrapy.linkextractors import LinkExtractor
from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from twisted.internet.task import LoopingCall
from twisted.names import client
from zope.interface import implementer

LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
LAG_INTERVAL = 0.1


@implementer(IResolverSimple)
class SimWebResolver:
    """Resolves every name through the simulated web's DNS server (setting SIMWEB_DNS)."""

    def __init__(self, reactor: Any, server: tuple[str, int]) -> None:
        self.reactor = reactor
        self.names = client.Resolver(servers=[server], reactor=reactor)
        self.cache: dict[str, str] = {}

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> SimWebResolver:
        host, _, port = str(crawler.settings.get("SIMWEB_DNS")).rpartition(":")
        return cls(reactor, (host, int(port)))

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)

    def getHostByName(self, name: str, timeout: Any = ()) -> defer.Deferred[str]:
        if name in self.cache:
            return defer.succeed(self.cache[name])
        d = self.names.getHostByName(name, timeout=(2, 5))
        d.addCallback(self._checked, name)
        return d

    def _checked(self, address: str, name: str) -> str:
        if ipaddress.ip_address(address) not in LOOPBACK:
            raise DNSLookupError(f"{name} -> {address}: not loopback, refused")
        self.cache[name] = address
        return address


class SeedSpider(scrapy.Spider):
    name = "courtier-bench"

    def __init__(self, seeds: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = seeds
        hosts = {urlsplit(url).hostname for url in seeds}
        self.allowed_domains = sorted(h for h in hosts if h)
        self.links = LinkExtractor()

    def parse(self, response: Any, **kwargs: Any) -> Any:
        if not isinstance(response, TextResponse):
            return
        for link in self.links.extract_links(response):
            yield scrapy.Request(link.url, callback=self.parse)


class LoopLag:
    """How late the reactor runs a timer that should fire every LAG_INTERVAL seconds."""

    def __init__(self, crawler: Any) -> None:
        self.samples: list[float] = []
        self.expected = 0.0
        self.call = LoopingCall(self._tick)
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> LoopLag:
        return cls(crawler)

    def opened(self, spider: Any) -> None:
        self.expected = time.monotonic() + LAG_INTERVAL
        self.call.start(LAG_INTERVAL, now=False)

    def _tick(self) -> None:
        now = time.monotonic()
        self.samples.append(max(0.0, now - self.expected))
        self.expected = now + LAG_INTERVAL

    def closed(self, spider: Any) -> None:
        if self.call.running:
            self.call.stop()

    def quantile(self, q: float) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def settings(dns: str, duration: float, concurrency: int) -> dict[str, Any]:
    return {
        "SIMWEB_DNS": dns,
        "TWISTED_DNS_RESOLVER": f"{__name__}.SimWebResolver",
        "USER_AGENT": "courtier-bench-scrapy/1.0 (Scrapy)",
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_USER_AGENT": "courtier",
        "DOWNLOAD_DELAY": 1.0,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 1.0,
        "AUTOTHROTTLE_TARGET_CONCURRENCY": 1.0,
        # Broad-crawl advice (Scrapy docs, "Broad Crawls"): enough global concurrency for every
        # domain to have its request waiting, no cookies, short timeouts, less logging.
        "CONCURRENT_REQUESTS": concurrency,
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "COOKIES_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 15,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "CLOSESPIDER_TIMEOUT": duration,
        "EXTENSIONS": {f"{__name__}.LoopLag": 0},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=Path, required=True)
    parser.add_argument("--dns", required=True, help="HOST:PORT of the simulated web's DNS")
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--concurrency", type=int, help="CONCURRENT_REQUESTS (default: seeds)")
    parser.add_argument("--result", type=Path, required=True)
    args = parser.parse_args()
    seeds = [line.strip() for line in args.seeds.read_text().splitlines() if line.strip()]
    process = CrawlerProcess(settings(args.dns, args.duration, args.concurrency or len(seeds)))
    crawler = process.create_crawler(SeedSpider)
    process.crawl(crawler, seeds=seeds)
    process.start()
    lag = crawler.extensions.middlewares
    extension = next(m for m in lag if isinstance(m, LoopLag))
    stats = crawler.stats.get_stats() if crawler.stats else {}
    args.result.write_text(
        json.dumps(
            {
                "requests": stats.get("downloader/request_count", 0),
                "responses": stats.get("downloader/response_count", 0),
                "loop_lag_p99_ms": round(extension.quantile(0.99) * 1000, 2),
                "loop_lag_max_ms": round(max(extension.samples, default=0.0) * 1000, 2),
                "finish_reason": stats.get("finish_reason"),
                "stats": {k: v for k, v in stats.items() if isinstance(v, int | float | str)},
            },
            default=str,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
