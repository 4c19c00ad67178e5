"""A fast start: origin inference of the seed hosts runs while the store is being
seeded, not after it (with 2,000 seeds each of them takes seconds)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pytest

from courtier.config import Config, CrawlSection
from courtier.frontier.base import FrontierError
from courtier.frontier.sqlite_store import SqliteFrontier
from courtier.inputs import parse_seed_lines
from courtier.net.guard import Guard
from courtier.net.policy import AddressPolicy
from courtier.net.resolve import StaticResolver
from courtier.origins.dns_evidence import DnsFacts
from courtier.origins.infer import OriginInference
from courtier.pipeline.engine import Engine

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


def _engine(
    tmp_path: Path,
    dns: RecordingDns,
    store_path: Path,
    *,
    duration: float = 0.3,
    store: SqliteFrontier | None = None,
) -> Engine:
    policy = AddressPolicy(allow=["127.0.0.1/32"])
    seeds, errors = parse_seed_lines([f"http://{host}:9/" for host in HOSTS])
    assert not errors
    return Engine(
        Config(crawl=replace(CrawlSection(), flush_interval=0.05)),
        store_path=store_path,
        out_dir=tmp_path,
        guard=Guard(policy, StaticResolver({host: ["127.0.0.1"] for host in HOSTS})),
        address_allowed=lambda address: policy.check(address).allowed,
        seeds=seeds,
        duration=duration,
        origins=OriginInference(dns),
        store=store,
    )


async def test_origin_inference_starts_before_the_store_is_seeded(tmp_path: Path) -> None:
    dns = RecordingDns()
    path = tmp_path / "frontier.sqlite3"
    await _engine(tmp_path, dns, path, duration=0.5, store=SeedingWaitsForDns(path, dns)).run()
    # Each host looked up once: the early inference is not repeated once the store is open.
    assert sorted(dns.hosts) == sorted(HOSTS)


class FrozenWhenAsked(RecordingDns):
    """Records whether the collector's start (collect, then freeze) came before DNS."""

    frozen_at_first_question: int | None = None

    async def lookup(self, host: str) -> DnsFacts:
        if self.frozen_at_first_question is None:
            self.frozen_at_first_question = gc.get_freeze_count()
        return await super().lookup(host)


async def test_the_collectors_start_pause_comes_before_any_dns_question(tmp_path: Path) -> None:
    # Its full collection held every DNS answer of the start for 120-210 ms when it came
    # after origin inference had begun.
    before = gc.get_threshold()
    dns = FrozenWhenAsked()
    await _engine(tmp_path, dns, tmp_path / "frontier.sqlite3").run()
    assert dns.frozen_at_first_question, "origin inference asked DNS before the heap was frozen"
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


async def test_the_collector_is_given_back_when_the_store_cannot_be_opened(
    tmp_path: Path,
) -> None:
    before = gc.get_threshold()
    with pytest.raises(FrontierError):
        await _engine(tmp_path, RecordingDns(), tmp_path).run()  # a directory: no store
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
