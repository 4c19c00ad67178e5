"""A fast start: origin inference of the seed hosts runs while the store is being opened and
seeded, not after it (with 2,000 seeds each of them takes seconds)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from courtier.config import Config, CrawlSection
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import StaticResolver
from courtier.origins.dns_evidence import DnsFacts
from courtier.origins.infer import OriginInference
from courtier.pipeline.engine import Engine
from courtier.pipeline.site import read_seeds

HOSTS = ("a.test", "b.test")


class RecordingDns:
    def __init__(self) -> None:
        self.asked = threading.Event()
        self.hosts: list[str] = []

    async def lookup(self, host: str) -> DnsFacts:
        self.hosts.append(host)
        self.asked.set()
        return DnsFacts(host, (), ("127.0.0.1",), {}, 300.0)

    def forget_ptr(self) -> None:
        pass


class SeedingWaitsForDns(SqliteFrontier):
    """Seeding (on the store thread) only proceeds once inference has asked DNS: a crawl
    that infers origins only after seeding would fail here."""

    def __init__(self, path: Path, dns: RecordingDns) -> None:
        super().__init__(path)
        self.dns = dns

    def add_sites(self, sites: Iterable[str], state: str, now: float) -> None:
        assert self.dns.asked.wait(5.0), "the store was seeded before origin inference began"
        super().add_sites(sites, state, now)


async def test_origin_inference_starts_before_the_store_is_seeded(tmp_path: Path) -> None:
    dns = RecordingDns()
    policy = AddressPolicy(allow=["127.0.0.1/32"])
    seeds, errors = read_seeds([f"http://{host}:9/" for host in HOSTS])
    assert not errors
    engine = Engine(
        Config(crawl=replace(CrawlSection(), flush_interval=0.05)),
        store_path=tmp_path / "frontier.sqlite3",
        out_dir=tmp_path,
        guard=Guard(policy, StaticResolver({host: ["127.0.0.1"] for host in HOSTS})),
        address_allowed=lambda address: policy.check(address).allowed,
        seeds=seeds,
        duration=0.5,
        origins=OriginInference(dns),
        store=SeedingWaitsForDns(tmp_path / "frontier.sqlite3", dns),
    )
    await engine.run()
    # Each host looked up once: the early inference is not repeated once the store is open.
    assert sorted(dns.hosts) == sorted(HOSTS)
