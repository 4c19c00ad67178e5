"""What a host keeps when it is looked up again, which hosts take headers a crawl saw
anyway, and what inference tells its operator in the log."""

from __future__ import annotations

import asyncio
import logging

from test_origin_infer import WORLD, RecordingProbe, TableDns, _allowed, _dns, _home

from courtier.origins.cdn import CdnRules
from courtier.origins.dns_evidence import DnsFacts
from courtier.origins.evidence import Kind
from courtier.origins.header_evidence import probe_response
from courtier.origins.infer import OriginInference
from courtier.origins.tls_evidence import TlsFacts

CERT = TlsFacts("ab" * 32, "01", "CN=Plinth CA", ("*.test",))


async def test_a_host_looked_up_again_on_the_same_addresses_keeps_its_headers_and_certificate() -> (
    None
):
    now = [1000.0]
    dns = TableDns(WORLD | {"t1.test": _dns("t1.test", "10.0.0.5", ttl=60.0)})
    probe = RecordingProbe()
    inference = OriginInference(dns, probe=probe, address_allowed=_allowed, clock=lambda: now[0])
    await inference.add(["t1.test", "t2.test"])
    assert inference.observe_tls("t1.test", CERT)
    headers = inference.facts()["t1.test"].headers
    assert headers is not None
    now[0] += 60.0  # the TTL runs out exactly now: due
    dns.lookups.clear()
    await inference.recheck()
    assert dns.lookups == ["t1.test"]
    assert len(probe.calls) == 2  # not probed again: its answers are still its server's
    kept = inference.facts()["t1.test"]
    assert kept.headers == headers
    assert kept.tls == CERT


async def test_a_host_that_moved_drops_its_headers_keeps_its_certificate_and_is_probed_anew() -> (
    None
):
    now = [1000.0]
    dns = TableDns(
        WORLD
        | {"t1.test": _dns("t1.test", "10.0.0.5", ttl=60.0), "t3.test": _dns("t3.test", "10.0.0.8")}
    )
    probe = RecordingProbe()
    inference = OriginInference(dns, probe=probe, address_allowed=_allowed, clock=lambda: now[0])
    await inference.add(["t1.test", "t2.test", "t3.test"])
    assert sorted(host for host, _ in probe.calls) == ["t1.test", "t2.test"]
    assert inference.observe_tls("t1.test", CERT)
    probe.calls.clear()
    now[0] += 61.0
    dns.table["t1.test"] = _dns("t1.test", "10.0.0.8", ttl=60.0)
    result = await inference.recheck()
    moved = inference.facts()["t1.test"]
    assert moved.tls == CERT  # corroboration only: kept whatever DNS says
    # The new address is shared and unexplained: the host is probed there again.
    assert sorted(host for host, _ in probe.calls) == ["t1.test", "t3.test"]
    assert moved.headers is not None
    assert result.recheck_at["t1.test"] == now[0] + 60.0


async def test_a_host_that_left_a_shared_address_no_longer_counts_as_sharing_it() -> None:
    now = [1000.0]
    dns = TableDns(WORLD | {"t1.test": _dns("t1.test", "10.0.0.5", ttl=60.0)})
    inference = OriginInference(dns, address_allowed=_allowed, clock=lambda: now[0])
    await inference.add(["t1.test", "t2.test"])
    now[0] += 61.0
    dns.table["t1.test"] = _dns("t1.test", "10.0.0.6", ttl=60.0)
    await inference.recheck()
    # t2 is alone on 10.0.0.5 now: nothing for headers to tell.
    assert not inference.observe("t2.test", _home("t2.test"), None)


async def test_a_host_that_left_a_shared_cname_no_longer_counts_as_sharing_it() -> None:
    now = [1000.0]
    table = {
        "x1.test": _dns("x1.test", "10.0.0.20", cname=("p.shared.test",), ttl=60.0),
        "x2.test": _dns("x2.test", "10.0.0.21", cname=("p.shared.test",)),
    }
    dns = TableDns(table)
    inference = OriginInference(dns, address_allowed=_allowed, clock=lambda: now[0])
    await inference.add(["x1.test", "x2.test"])
    now[0] += 61.0
    dns.table["x1.test"] = _dns("x1.test", "10.0.0.22", cname=("p.other.test",), ttl=60.0)
    await inference.recheck()
    assert not inference.observe("x2.test", _home("x2.test"), None)


async def test_headers_are_kept_for_hosts_sharing_a_cname_name_on_different_addresses() -> None:
    table = {
        "x1.test": _dns("x1.test", "10.0.0.20", cname=("p.shared.test",)),
        "x2.test": _dns("x2.test", "10.0.0.21", cname=("p.shared.test",)),
        "lone.test": _dns("lone.test", "10.0.0.23", cname=("p.lone.test",)),
    }
    inference = OriginInference(TableDns(table), address_allowed=_allowed)
    await inference.add(table)
    assert inference.observe("x1.test", _home("x1.test"), None)
    assert not inference.observe("lone.test", _home("lone.test"), None)  # its name is its own


async def test_headers_are_kept_for_hosts_sharing_an_address_that_cnames_explain() -> None:
    table = {
        "y1.test": _dns("y1.test", "10.0.0.30", cname=("a.one.test",)),
        "y2.test": _dns("y2.test", "10.0.0.30", cname=("b.two.test",)),
    }
    inference = OriginInference(TableDns(table), address_allowed=_allowed)
    await inference.add(table)
    # Two names on one address: an edge (strangers) or a platform (one origin)? Headers tell.
    assert inference.observe("y1.test", _home("y1.test"), None)


async def test_headers_are_kept_for_a_host_on_a_published_cdn_address_or_a_cdn_ptr_name() -> None:
    table = {
        "cf.test": _dns("cf.test", "173.245.48.1"),
        "ptr.test": DnsFacts(
            "ptr.test", (), ("10.0.0.40",), {"10.0.0.40": ("edge-1.example.cloudfront.net",)}
        ),
    }
    inference = OriginInference(TableDns(table), address_allowed=_allowed)
    await inference.add(table)
    assert inference.observe("cf.test", _home("cf.test"), None)
    assert inference.observe("ptr.test", _home("ptr.test"), None)


async def test_a_host_whose_lookup_failed_takes_no_observed_headers() -> None:
    inference = OriginInference(TableDns(WORLD), address_allowed=_allowed)
    await inference.add(["t1.test", "gone.test"])
    assert inference.failed("gone.test")
    assert not inference.observe("gone.test", _home("gone.test"), None)


async def test_the_rules_given_to_inference_are_the_ones_it_clusters_with() -> None:
    table = {
        "e1.test": _dns("e1.test", "10.0.0.50", cname=("c1.edge.example",)),
        "e2.test": _dns("e2.test", "10.0.0.51", cname=("c1.edge.example",)),
    }
    plain = await OriginInference(TableDns(table)).add(table)
    assert plain.assignments["e1.test"].origin == plain.assignments["e2.test"].origin
    rules = CdnRules(extra_suffixes=("edge.example",))
    told = await OriginInference(TableDns(table), rules=rules).add(table)
    # Told the name is a CDN's, the evidence says so.
    assert not any(e.kind is Kind.CDN for e in plain.assignments["e1.test"].evidence)
    assert any(e.kind is Kind.CDN for e in told.assignments["e1.test"].evidence)


async def test_left_out_hosts_are_named_in_the_log(caplog) -> None:  # type: ignore[no-untyped-def]
    lost = asyncio.Event()

    class LostQuestions(TableDns):
        async def lookup(self, host: str) -> DnsFacts:
            if host in ("t1.test", "t2.test"):
                await lost.wait()
            return await super().lookup(host)

    inference = OriginInference(LostQuestions(WORLD), address_allowed=_allowed)
    with caplog.at_level(logging.INFO, logger="courtier.origins"):
        await inference.add(["t1.test", "t2.test", "solo.test"], stragglers_after=0.05)
    lost.set()
    [message] = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert message.startswith("2 of 3 hosts left out of origin inference")
    assert "0.1 s after the last lookup began" in message
    assert message.endswith(": t1.test, t2.test")


async def test_a_failed_probe_and_an_origin_change_are_logged_with_the_host(caplog) -> None:  # type: ignore[no-untyped-def]
    probe = RecordingProbe(fail=frozenset({"t1.test"}))
    inference = OriginInference(TableDns(WORLD), probe=probe, address_allowed=_allowed)
    with caplog.at_level(logging.INFO, logger="courtier.origins"):
        await inference.add(["t1.test"])
        await inference.add(["t2.test"])
    messages = [r.getMessage() for r in caplog.records]
    assert "origin probe of t1.test failed" in messages
    changed = [m for m in messages if m.startswith("origin changed: ")]
    assert changed and "t1.test" in changed[0]


async def test_a_host_that_moved_to_an_address_of_its_own_has_no_headers_left() -> None:
    now = [1000.0]
    dns = TableDns(WORLD | {"t1.test": _dns("t1.test", "10.0.0.5", ttl=60.0)})
    inference = OriginInference(dns, address_allowed=_allowed, clock=lambda: now[0])
    await inference.add(["t1.test", "t2.test"])
    assert inference.observe("t1.test", _home("t1.test"), None)
    now[0] += 61.0
    dns.table["t1.test"] = _dns("t1.test", "10.0.0.6", ttl=60.0)
    await inference.recheck()
    # The answers were the old server's: they say nothing about the new one.
    assert inference.facts()["t1.test"].headers is None


async def test_a_not_found_page_a_crawl_saw_counts_with_the_home_page() -> None:
    inference = OriginInference(TableDns(WORLD), address_allowed=_allowed)
    await inference.add(["t1.test", "t2.test"])
    home = _home("t1.test")
    missing = probe_response(
        404, [("Server", "Plinth/2.3")], b"<h1>Page not found</h1><p>Plinth.</p>", "t1.test"
    )
    assert inference.observe("t1.test", home, missing)
    headers = inference.facts()["t1.test"].headers
    assert headers is not None and headers.not_found_hash is not None


async def test_only_a_host_grouped_before_its_answers_tell_is_provisional() -> None:
    table = {
        "x1.test": _dns("x1.test", "10.0.0.20", cname=("p.shared.test",)),
        "x2.test": _dns("x2.test", "10.0.0.21", cname=("p.shared.test",)),
        "solo.test": _dns("solo.test", "10.0.0.7"),
    }
    inference = OriginInference(TableDns(table))
    result = await inference.add(table)
    assert result.assignments["x1.test"].provisional
    assert inference.provisional("x1.test")
    assert not inference.provisional("solo.test")
    assert not inference.provisional("unknown.test")


async def test_a_large_seed_clustered_on_a_thread_uses_the_rules_given(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import courtier.origins.infer as infer

    monkeypatch.setattr(infer, "CLUSTER_IN_THREAD", 0)
    table = {
        "e1.test": _dns("e1.test", "10.0.0.50", cname=("c1.edge.example",)),
        "e2.test": _dns("e2.test", "10.0.0.51", cname=("c1.edge.example",)),
    }
    rules = CdnRules(extra_suffixes=("edge.example",))
    told = await OriginInference(TableDns(table), rules=rules).add(table)
    assert any(e.kind is Kind.CDN for e in told.assignments["e1.test"].evidence)
