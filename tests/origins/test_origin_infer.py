"""Orchestration: probe only where DNS is indeterminate, never past the guard, re-check on TTL."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

import pytest
from origin_facts import plinth

from courtier.origins.dns_evidence import DnsFacts
from courtier.origins.header_evidence import HeaderFingerprint, ProbeResponse, probe_response
from courtier.origins.infer import OriginInference
from courtier.origins.tls_evidence import TlsFacts


class TableDns:
    """DNS facts from a table that tests can change; counts lookups."""

    def __init__(self, table: Mapping[str, DnsFacts]) -> None:
        self.table = dict(table)
        self.lookups: list[str] = []

    async def lookup(self, host: str) -> DnsFacts:
        self.lookups.append(host)
        return self.table.get(host, DnsFacts(host, error="nxdomain: not in the table"))

    def forget_ptr(self) -> None:
        pass


class RecordingProbe:
    def __init__(self, fail: frozenset[str] = frozenset()) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.fail = fail

    async def __call__(self, host: str, addresses: tuple[str, ...]) -> HeaderFingerprint | None:
        self.calls.append((host, addresses))
        if host in self.fail:
            raise RuntimeError("probe exploded")
        return plinth(host)


def _dns(host: str, *addresses: str, cname: tuple[str, ...] = (), ttl: float = 300.0) -> DnsFacts:
    return DnsFacts(host, cname, addresses, {}, ttl)


WORLD = {
    "t1.test": _dns("t1.test", "10.0.0.5"),
    "t2.test": _dns("t2.test", "10.0.0.5"),
    "c1.test": _dns("c1.test", "10.0.0.9", cname=("p.platform.test",)),
    "c2.test": _dns("c2.test", "10.0.0.9", cname=("p.platform.test",)),
    "solo.test": _dns("solo.test", "10.0.0.7"),
    "k1.test": _dns("k1.test", "10.0.0.11", cname=("d1.cloudfront.net",)),
    "bad1.test": _dns("bad1.test", "10.0.0.5", "192.168.1.1"),
    "bad2.test": _dns("bad2.test", "192.168.1.1"),
}


def _allowed(address: str) -> bool:
    return address.startswith("10.")


async def test_only_hosts_on_an_unexplained_shared_address_are_probed() -> None:
    probe = RecordingProbe()
    inference = OriginInference(TableDns(WORLD), probe=probe, address_allowed=_allowed)
    result = await inference.add(["t1.test", "t2.test", "c1.test", "c2.test", "solo.test"])
    assert sorted(host for host, _ in probe.calls) == ["t1.test", "t2.test"]
    assert result.probed == 2
    assert result.assignments["t1.test"].origin == result.assignments["t2.test"].origin
    assert result.assignments["c1.test"].origin == "cname:p.platform.test"


async def test_a_host_with_any_refused_address_is_never_probed() -> None:
    probe = RecordingProbe()
    inference = OriginInference(TableDns(WORLD), probe=probe, address_allowed=_allowed)
    await inference.add(["t1.test", "bad1.test", "bad2.test"])
    probed = {host for host, _ in probe.calls}
    assert "bad1.test" not in probed and "bad2.test" not in probed
    assert all(_allowed(a) for _, addresses in probe.calls for a in addresses)


async def test_a_host_is_probed_once_and_a_newcomer_regroups_the_known_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe = RecordingProbe()
    inference = OriginInference(TableDns(WORLD), probe=probe, address_allowed=_allowed)
    first = await inference.add(["t1.test", "solo.test"])
    assert probe.calls == []  # alone on its address: nothing to decide
    assert first.assignments["t1.test"].origin == "site:t1.test"
    with caplog.at_level(logging.INFO, logger="courtier.origins"):
        second = await inference.add(["t2.test", "t1.test"])
    assert sorted(host for host, _ in probe.calls) == ["t1.test", "t2.test"]
    assert {(c.site, c.old) for c in second.changes} == {
        ("t1.test", "site:t1.test"),
        ("t2.test", None),
    }
    assert "t1.test: origin site:t1.test -> hdr:" in caplog.text
    await inference.add(["t1.test", "t2.test"])
    assert len(probe.calls) == 2


async def test_expired_facts_are_looked_up_again_and_a_move_drops_old_headers() -> None:
    now = [1000.0]
    dns = TableDns(WORLD | {"t1.test": _dns("t1.test", "10.0.0.5", ttl=60.0)})
    probe = RecordingProbe()
    inference = OriginInference(dns, probe=probe, address_allowed=_allowed, clock=lambda: now[0])
    await inference.add(["t1.test", "t2.test"])
    dns.lookups.clear()
    now[0] += 61.0
    dns.table["t1.test"] = _dns("t1.test", "10.0.0.6", ttl=60.0)
    result = await inference.recheck()
    assert dns.lookups == ["t1.test"]
    assert result.assignments["t1.test"].origin == "site:t1.test"
    assert inference.origin_of("t2.test") == "site:t2.test"
    assert inference.origin_of("unknown.test") is None


async def test_a_failing_probe_does_not_stop_inference() -> None:
    probe = RecordingProbe(fail=frozenset({"t1.test"}))
    inference = OriginInference(TableDns(WORLD), probe=probe, address_allowed=_allowed)
    result = await inference.add(["t1.test", "t2.test"])
    # t1 has no headers: it joins the one signature on its address, with low confidence.
    assert result.assignments["t1.test"].origin == result.assignments["t2.test"].origin
    assert result.assignments["t1.test"].confidence < result.assignments["t2.test"].confidence


async def test_without_a_probe_dns_alone_decides() -> None:
    inference = OriginInference(TableDns(WORLD), address_allowed=_allowed)
    result = await inference.add(["t1.test", "t2.test", "nowhere.test"])
    assert result.probed == 0
    assert result.assignments["t1.test"].origin == "addr:10.0.0.5"
    assert result.assignments["nowhere.test"].origin == "site:nowhere.test"


def _home(host: str) -> ProbeResponse:
    headers = [
        ("Server", "Plinth/2.3"),
        ("X-Powered-By", "PlinthSites"),
        ("X-Plinth-Tenant", host.split(".")[0]),
        ("Content-Type", "text/html"),
    ]
    return probe_response(200, headers, f"<h1>{host}</h1>".encode(), host)


async def test_headers_a_crawl_saw_anyway_count_where_dns_is_indeterminate() -> None:
    inference = OriginInference(TableDns(WORLD), address_allowed=_allowed)
    await inference.add(["t1.test", "t2.test", "c1.test", "c2.test", "solo.test", "k1.test"])
    before = inference.assignments["t1.test"]
    assert before.origin == inference.assignments["t2.test"].origin  # the shared address
    assert inference.observe("t1.test", _home("t1.test"), None)
    assert inference.observe("t2.test", _home("t2.test"), None)
    assert not inference.observe("t1.test", _home("t1.test"), None)  # once per host
    # A shared CNAME name may be a CDN edge (strangers) or a platform: headers tell.
    assert inference.observe("c1.test", _home("c1.test"), None)
    # Behind a known CDN's name only a brand shared by the answers groups a platform's
    # tenants: kept too.
    assert inference.observe("k1.test", _home("k1.test"), None)
    assert not inference.observe("solo.test", _home("solo.test"), None)  # shares nothing
    assert not inference.observe("unknown.test", _home("unknown.test"), None)
    result = await inference.recheck()  # nothing expired: the observations re-cluster
    after = result.assignments["t1.test"]
    assert after.origin == result.assignments["t2.test"].origin
    assert after.confidence > before.confidence
    assert any(e.kind.value == "headers" for e in after.evidence), after.evidence


async def test_a_certificate_a_fetch_saw_corroborates_a_grouping() -> None:
    inference = OriginInference(TableDns(WORLD), address_allowed=_allowed)
    await inference.add(["t1.test", "t2.test", "solo.test"])
    before = inference.assignments["t1.test"]
    one = TlsFacts("ab" * 32, "01", "CN=Plinth CA", ("*.test",))
    assert inference.observe_tls("t1.test", one)
    assert not inference.observe_tls("t1.test", one)  # nothing new
    assert inference.observe_tls("t2.test", one)
    assert inference.observe_tls("solo.test", one)
    assert not inference.observe_tls("unknown.test", one)
    result = await inference.recheck()
    after = result.assignments["t1.test"]
    assert after.confidence > before.confidence
    assert any(e.kind.value == "tls" for e in after.evidence), after.evidence
    # A shared certificate never places a site on its own.
    assert result.assignments["solo.test"].origin != after.origin


async def test_a_host_whose_lookup_failed_is_looked_up_again_and_joins_its_server() -> None:
    """A timeout under a start-up burst leaves a host alone on ``site:<host>``; ``retry``
    asks again (only for failed hosts) and it joins the origin of the server it shares."""
    dns = TableDns(WORLD | {"t2.test": DnsFacts("t2.test", error="timeout: no answer")})
    inference = OriginInference(dns, address_allowed=_allowed)
    await inference.add(["t1.test", "t2.test", "solo.test"])
    assert inference.failed("t2.test") and not inference.failed("t1.test")
    assert inference.failed("unknown.test")
    assert inference.origin_sharing(["10.0.0.5"]) == "site:t1.test"  # t1 is alone so far
    assert inference.origin_sharing(["192.0.2.1"]) is None
    dns.lookups.clear()
    dns.table["t2.test"] = WORLD["t2.test"]
    result = await inference.retry(["t1.test", "t2.test"])
    assert dns.lookups == ["t2.test"]
    assert not inference.failed("t2.test")
    assert result.assignments["t2.test"].origin == result.assignments["t1.test"].origin
    assert [(c.site, c.new) for c in result.changes if c.site == "t1.test"] == [
        ("t1.test", "addr:10.0.0.5")
    ]


async def test_a_large_seed_is_clustered_on_a_thread_with_the_same_result(monkeypatch) -> None:
    import courtier.origins.infer as infer

    inline = OriginInference(TableDns(WORLD), address_allowed=_allowed)
    expected = await inline.add(WORLD)
    monkeypatch.setattr(infer, "CLUSTER_IN_THREAD", 0)
    threads: list[object] = []
    real_to_thread = infer.asyncio.to_thread

    async def counting_to_thread(fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(fn)
        return await real_to_thread(fn, *args, **kwargs)

    monkeypatch.setattr(infer.asyncio, "to_thread", counting_to_thread)
    threaded = OriginInference(TableDns(WORLD), address_allowed=_allowed)
    hosts = list(WORLD)
    # Two calls at once: the later one's facts win, whatever thread finishes first.
    first, second = await asyncio.gather(threaded.add(hosts[:3]), threaded.add(hosts))
    assert len(threads) == 2
    assert {s: a.origin for s, a in second.assignments.items()} == {
        s: a.origin for s, a in expected.assignments.items()
    }
    assert threaded.assignments.keys() == set(WORLD)
    assert set(first.assignments) <= set(WORLD)


async def test_a_large_seed_is_looked_up_a_bounded_number_at_a_time() -> None:
    # 2,000 seed hosts as 2,000 tasks ran every first step in one turn of the loop.
    class SlowTable(TableDns):
        running = most = 0

        async def lookup(self, host: str) -> DnsFacts:
            SlowTable.running += 1
            SlowTable.most = max(SlowTable.most, SlowTable.running, len(asyncio.all_tasks()))
            await asyncio.sleep(0)
            SlowTable.running -= 1
            return await super().lookup(host)

    hosts = [f"h{n}.test" for n in range(500)]
    dns = SlowTable({h: _dns(h, f"10.1.{n // 250}.{n % 250}") for n, h in enumerate(hosts)})
    inference = OriginInference(dns, lookup_concurrency=16)
    result = await inference.add(hosts)
    assert sorted(dns.lookups) == sorted(hosts)
    assert set(result.assignments) == set(hosts)
    assert SlowTable.most <= 16 + 1  # the lookups' tasks, and the test's own


async def test_an_unanswered_host_is_left_out_and_the_rest_clustered_without_it() -> None:
    """A seed host whose DNS question is lost must not hold every other site for the
    resolver's timeout: the rest are placed, it stays unknown until ``retry`` asks again."""
    answer = asyncio.Event()

    class LostQuestion(TableDns):
        async def lookup(self, host: str) -> DnsFacts:
            if host == "t2.test" and not answer.is_set():
                self.lookups.append(host)
                await answer.wait()
            return await super().lookup(host)

    dns = LostQuestion(WORLD)
    inference = OriginInference(dns, address_allowed=_allowed)
    hosts = ["t1.test", "t2.test", "c1.test", "c2.test", "solo.test"]
    result = await asyncio.wait_for(inference.add(hosts, stragglers_after=0.05), 5.0)
    assert set(result.assignments) == set(hosts) - {"t2.test"}
    assert result.assignments["c1.test"].origin == result.assignments["c2.test"].origin
    assert inference.failed("t2.test") and inference.origin_of("t2.test") is None
    dns.lookups.clear()
    await inference.add(hosts, stragglers_after=0.05)  # left out: only retry asks again
    assert dns.lookups == []
    answer.set()
    result = await inference.retry(hosts)
    assert dns.lookups == ["t2.test"]
    assert not inference.failed("t2.test")
    assert result.assignments["t2.test"].origin == result.assignments["t1.test"].origin
