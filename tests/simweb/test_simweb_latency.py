"""The real web's latencies on the simulated web: per-site bands, a tail, hanging sites,
handshakes, and worlds without them unchanged."""

from __future__ import annotations

import dataclasses
import statistics
import time
from pathlib import Path

import aiohttp
import pytest
from simweb_helpers import SMALL, Client

from courtier.simweb import SimWeb, build_world
from courtier.simweb.latency import CONNECT_SHARE, JITTER, MEDIA_SHARE, AnswerTimes
from courtier.simweb.sites import MEDIA_KINDS, SEED_KINDS
from courtier.simweb.world import SIZE_PRESETS, Behaviour

REAL = {"latency_median": 0.35, "latency_spread": 0.7, "latency_max": 4.0, "hang_share": 0.05}


def test_latencies_change_nothing_else_of_a_world() -> None:
    plain = build_world(SIZE_PRESETS["web"])
    slow = build_world(dataclasses.replace(SIZE_PRESETS["web"], **REAL))
    assert plain.sites.keys() == slow.sites.keys()
    for host, site in plain.sites.items():
        drawn = slow.sites[host]
        assert dataclasses.replace(drawn, latency=site.latency, hangs=False) == site, host
    assert not any(site.hangs for site in plain.sites.values())


def test_each_origin_draws_a_band_of_its_own_around_the_median_with_a_tail() -> None:
    """Per origin (a platform's tenants share their servers' latency), log-normal around the
    median with a tail to seconds; media hosts answer faster; a share of seed sites hang."""
    world = build_world(dataclasses.replace(SIZE_PRESETS["web"], **REAL))
    pages = [s for s in world.sites.values() if s.kind in SEED_KINDS and not s.behaviours]
    media = [s for s in world.sites.values() if s.kind in MEDIA_KINDS]
    by_origin: dict[str, set[float]] = {}
    for site in pages:
        by_origin.setdefault(site.origin, set()).add(site.latency)
    assert all(len(bands) == 1 for bands in by_origin.values())  # one band per origin
    latencies = [next(iter(bands)) for bands in by_origin.values()]
    assert 0.25 < statistics.median(latencies) < 0.45
    assert max(latencies) <= 4.0 and max(latencies) > 1.0  # a tail to seconds
    assert len(set(latencies)) > 0.9 * len(latencies)  # each origin its own
    assert statistics.median(s.latency for s in media) < MEDIA_SHARE * 0.6
    hanging = sum(s.hangs for s in pages) / len(pages)
    assert 0.02 < hanging < 0.09
    assert not any(s.hangs for s in media)
    slow = world.site_with(Behaviour.SLOW)
    assert slow.latency == SIZE_PRESETS["web"].slow_latency  # a world's own latency is kept
    assert world.site_with(Behaviour.RISING_LATENCY).latency == 0.0
    again = build_world(dataclasses.replace(SIZE_PRESETS["web"], **REAL))
    assert [s.latency for s in again.sites.values()] == [s.latency for s in world.sites.values()]


def test_answers_vary_around_their_band_and_a_new_connection_pays_the_handshake() -> None:
    params = dataclasses.replace(SMALL, **{**REAL, "hang_share": 0.0})
    world = build_world(params)
    site = next(s for s in world.sites.values() if s.kind in SEED_KINDS and not s.behaviours)
    times = AnswerTimes(params)
    delays = [times.delay(site, site.latency, False) for _ in range(500)]
    assert min(delays) >= site.latency * (1 - JITTER) and max(delays) <= site.latency * (1 + JITTER)
    assert statistics.pstdev(delays) > 0.05 * site.latency
    first = [times.delay(site, site.latency, True) for _ in range(200)]
    assert min(first) >= site.latency * (1 - JITTER + CONNECT_SHARE)
    again = AnswerTimes(params)
    assert [again.delay(site, site.latency, False) for _ in range(500)] == delays
    assert AnswerTimes(SMALL).delay(site, 0.125, True) == 0.125  # no latencies: as asked


def test_a_hanging_site_now_and_then_answers_after_hang_seconds() -> None:
    params = dataclasses.replace(SMALL, **{**REAL, "hang_share": 1.0, "hang_seconds": 30.0})
    site = next(s for s in build_world(params).sites.values() if s.hangs)
    times = AnswerTimes(params)
    delays = [times.delay(site, site.latency, False) for _ in range(1000)]
    assert 50 < delays.count(30.0) < 150


@pytest.mark.parametrize("bad", [{"latency_median": -1.0}, {"hang_share": 2.0}])
def test_bad_latency_parameters_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        build_world(dataclasses.replace(SMALL, **bad))


async def test_a_site_answers_after_its_latency_over_loopback(tmp_path: Path) -> None:
    params = dataclasses.replace(SMALL, latency_median=0.2, latency_spread=0.0)
    world = build_world(params)
    host = next(s.host for s in world.sites.values() if s.kind in SEED_KINDS and not s.behaviours)
    async with (
        SimWeb(world, log_path=tmp_path / "requests.jsonl") as web,
        aiohttp.ClientSession() as session,
    ):
        client = Client(web, session)
        took = []
        for _ in range(3):  # one connection, kept alive: the handshake is paid once
            started = time.monotonic()
            assert (await client.get(host, "/")).status == 200
            took.append(time.monotonic() - started)
    assert took[0] >= 0.2 * (1 - JITTER + CONNECT_SHARE)
    assert all(t >= 0.2 * (1 - JITTER) for t in took[1:])


def test_the_ceiling_asks_a_slow_site_no_faster_than_it_answers() -> None:
    """One request at a time: a site answering in 2 s gives at most 0.5 requests/s, whatever
    its interval allows; a hanging one its hangs' share less; at loopback nothing changes."""
    from courtier.simweb.ceiling import _site_limit
    from courtier.simweb.latency import HANG_EVERY, mean_answer_time

    params = dataclasses.replace(SMALL, **{**REAL, "hang_share": 0.0})
    world = build_world(params)
    site = next(s for s in world.sites.values() if s.kind in SEED_KINDS and not s.behaviours)
    slow = dataclasses.replace(site, latency=2.0)
    assert _site_limit(world, slow, 1.0) == pytest.approx(0.5)
    assert _site_limit(world, dataclasses.replace(site, latency=0.3), 1.0) == 1.0
    hanging = dataclasses.replace(slow, hangs=True)
    expected = (1 - 1 / HANG_EVERY) * 2.0 + params.hang_seconds / HANG_EVERY
    assert mean_answer_time(params, hanging) == pytest.approx(expected)
    plain = build_world(SMALL)
    assert mean_answer_time(SMALL, dataclasses.replace(site, latency=2.0)) == 0.0
    assert _site_limit(plain, site, 1.0) == 1.0
