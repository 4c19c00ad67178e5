"""The in-flight bound chosen from the work (Little's law) under what the machine holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from lane_harness import Lanes

from courtier.config import load
from courtier.pipeline import in_flight
from courtier.pipeline.scheduling import concurrency
from courtier.pipeline.scheduling.concurrency import (
    DEFAULT_ANSWER,
    FLOOR,
    HEADROOM,
    SLACK,
    Binding,
    LaneLoad,
)
from courtier.pipeline.scheduling.lanes import Phase
from courtier.pipeline.stats import CrawlStats


def test_what_the_work_needs_is_littles_law_lane_by_lane() -> None:
    """2,000 sites asked once a second, answering in 0.9 s, hold 1,800 places; a media key
    spaced 20 ms apart answering in 100 ms would hold 5 but may hold only its 4."""
    sites = [LaneLoad(1.0, 0.9, 1)] * 2000
    assert concurrency.demand(sites) == pytest.approx(1800)
    assert concurrency.demand([LaneLoad(0.02, 0.1, 4)]) == 4
    assert concurrency.demand([LaneLoad(0.5, 2.0, 1)]) == 1  # one at a time per site
    assert concurrency.demand([LaneLoad(2.0, None, 1)]) == pytest.approx(DEFAULT_ANSWER / 2)
    assert concurrency.demand([]) == 0


def test_the_machine_holds_what_its_open_files_and_memory_allow() -> None:
    by_files = concurrency.machine_cap(
        open_files=10_000, held=200, memory_bytes=1 << 40, body_bytes=512 * 1024
    )
    assert by_files == int(9_800 * (1 - concurrency.IDLE_SHARE))
    by_memory = concurrency.machine_cap(
        open_files=1 << 20, held=200, memory_bytes=1 << 30, body_bytes=1 << 20
    )
    assert by_memory == int((1 << 30) * concurrency.MEMORY_SHARE / (1 << 20))
    assert concurrency.machine_cap(open_files=10, held=200, memory_bytes=1, body_bytes=1) == 1


def test_the_bound_follows_the_work_and_says_what_binds() -> None:
    cap = (10_000, Binding.MACHINE)
    idle = concurrency.choose(1800, cap, in_flight=1200, waiting=0, current=512)
    assert idle.limit == 1800 * HEADROOM + SLACK and idle.binding is Binding.POLITENESS
    small = concurrency.choose(3, cap, in_flight=2, waiting=0, current=512)
    assert small.limit == FLOOR
    # Lanes wait for a place: the bound is at least what is in flight and what waits.
    held = concurrency.choose(100, cap, in_flight=512, waiting=700, current=512)
    assert held.limit == 1212 and held.binding is Binding.DEMAND
    at_cap = concurrency.choose(100_000, cap, in_flight=10_000, waiting=5, current=10_000)
    assert at_cap.limit == 10_000 and at_cap.binding is Binding.MACHINE
    mine = concurrency.choose(100, (300, Binding.OPERATOR), in_flight=300, waiting=9, current=300)
    assert mine.limit == 300 and mine.binding is Binding.OPERATOR


def test_the_machine_cap_is_shared_by_pages_and_media_and_an_operator_caps_it() -> None:
    config = load()
    pages, media = in_flight.machine_caps(config, 100_000, 64 << 30)
    assert media[0] >= concurrency.MEDIA_FLOOR and pages[0] >= 3 * media[0]
    assert pages[1] is media[1] is Binding.MACHINE
    capped = load(None, ["crawl.max_in_flight=512", "media.max_in_flight=32"])
    pages, media = in_flight.machine_caps(capped, 100_000, 64 << 30)
    assert pages == (512, Binding.OPERATOR) and media == (32, Binding.OPERATOR)
    tight = in_flight.machine_caps(capped, 600, 64 << 30)[0]
    assert tight[0] < 512 and tight[1] is Binding.MACHINE  # the machine holds less than asked


@pytest.fixture
async def lanes(tmp_path: Path):
    made: list[Lanes] = []

    def make(*overrides: str) -> Lanes:
        fast = ["limits.origin.rate=1000", "limits.cdn.rate=1000", "limits.cdn-miss.rate=1000"]
        h = Lanes(load(None, [*fast, *overrides]), tmp_path)
        h.start()
        made.append(h)
        return h

    yield make
    for h in made:
        await h.close()


async def test_lanes_waiting_for_a_place_raise_the_bound_and_go(lanes) -> None:
    """Three sites with work, one place: two wait unbooked. Chosen again, the bound takes
    in what waits, and both go at once; the stats say the bound bound."""
    h = lanes("crawl.max_in_flight=1", "limits.site.rate=100")
    sites = [h.site(f"{name}.test", ["/p"]) for name in "abc"]
    for site in ("a.test", "b.test", "c.test"):
        h.fetcher.delays[f"http://{site}/robots.txt"] = 3.0
    h.pages.arm(sites[0])
    await h.timer.advance(0.2)
    for site in sites[1:]:
        h.pages.arm(site)
    await h.timer.advance(0.2)
    assert [s.sched.phase for s in sites[1:]] == [Phase.READY, Phase.READY]
    stats = CrawlStats()
    bound = in_flight.rebound(
        h.pages, in_flight.site_loads(sites), (10_000, Binding.MACHINE), floor=2
    )
    stats.record_bound("pages", bound)
    assert bound.limit >= 3 and bound.binding is Binding.DEMAND
    await h.timer.advance(0.2)
    assert all(s.sched.in_flight == 1 for s in sites)
    assert stats.as_dict()["in_flight_bounds"]["pages"]["binds"] == "demand"
    again = in_flight.rebound(
        h.pages, in_flight.site_loads(sites), (10_000, Binding.MACHINE), floor=2
    )
    assert again.binding is Binding.POLITENESS  # nothing waits for a place any more


def test_while_parsing_is_behind_the_bound_holds_and_the_cpu_binds() -> None:
    """Lanes wait for a place because pages wait for a parse worker: more places would only
    lengthen the parse queue, so the bound stays where it is."""
    cap = (10_000, Binding.MACHINE)
    held = concurrency.choose(100, cap, in_flight=512, waiting=700, current=512, parse_backlog=True)
    assert held.limit == 512 and held.binding is Binding.CPU
    free = concurrency.choose(100, cap, in_flight=100, waiting=0, current=512, parse_backlog=True)
    assert free.binding is Binding.POLITENESS
