import pytest

from courtier.frontier.surface import (
    SurfaceLevel,
    SurfacePolicy,
    admits,
    decide_depth_cap,
)

POLICY = SurfacePolicy(
    levels=(SurfaceLevel(100, 4), SurfaceLevel(1000, 2)), max_depth=10, release_fraction=0.5
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def tick(self) -> float:
        self.now += 1.0
        return self.now


def test_small_host_has_only_the_absolute_depth_cap():
    decision = decide_depth_cap(99, None, POLICY)
    assert decision.cap == 10 and not decision.surface_mode and decision.tightened
    assert decide_depth_cap(99, 10, POLICY).tightened is False


@pytest.mark.parametrize(
    ("size", "cap"), [(0, 10), (99, 10), (100, 4), (999, 4), (1000, 2), (10**9, 2)]
)
def test_each_threshold_sets_its_depth_cap(size: int, cap: int):
    assert decide_depth_cap(size, None, POLICY).cap == cap


def test_growing_host_enters_surface_mode_and_its_deep_urls_leave_the_frontier():
    """A site where every page links to six new pages one level deeper, crawled one page a
    tick on a fake clock; the frontier is re-checked after every fetch."""
    clock = FakeClock()
    frontier: dict[str, int] = {"/": 0}
    discovered, cap, fetched, evicted = 1, None, 0, 0
    tightened_at: list[tuple[float, int | None]] = []
    queue = ["/"]
    while queue and fetched < 3000:
        page = queue.pop(0)
        if page not in frontier:
            continue  # evicted while waiting
        depth = frontier[page]
        fetched += 1
        clock.tick()
        for child in range(6):
            url = f"{page.rstrip('/')}/{child}"
            discovered += 1
            if admits(depth + 1, cap):
                frontier[url] = depth + 1
                queue.append(url)
        decision = decide_depth_cap(discovered, cap, POLICY)
        if decision.tightened:
            tightened_at.append((clock.now, decision.cap))
            too_deep = [u for u, d in frontier.items() if not admits(d, decision.cap)]
            for url in too_deep:
                del frontier[url]
            evicted += len(too_deep)
        cap = decision.cap
        assert all(d <= cap for d in frontier.values())
    assert [c for _, c in tightened_at] == [10, 4, 2]
    assert tightened_at[1][0] < tightened_at[2][0]
    assert evicted > 0
    assert max(frontier.values()) == 2
    assert queue == []  # the capped host runs dry instead of growing forever


def test_cap_loosens_only_after_the_size_falls_well_below_the_threshold():
    held = decide_depth_cap(600, 2, POLICY)  # below 1000 but above half of it
    assert held.cap == 2 and not held.tightened and held.level == SurfaceLevel(1000, 2)
    eased = decide_depth_cap(499, 2, POLICY)
    assert eased.cap == 4 and eased.level == SurfaceLevel(100, 4)
    assert decide_depth_cap(50, 4, POLICY).cap == 4
    assert decide_depth_cap(49, 4, POLICY).cap == 10


def test_no_levels_and_no_absolute_cap_means_unlimited():
    policy = SurfacePolicy(levels=(), max_depth=None)
    decision = decide_depth_cap(10**9, None, policy)
    assert decision.cap is None and not decision.tightened
    assert admits(10**6, None)


def test_admission_is_inclusive_of_the_cap():
    assert admits(2, 2) and not admits(3, 2) and admits(0, 0)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: SurfacePolicy(levels=(SurfaceLevel(100, 2), SurfaceLevel(1000, 4))),
            "surface levels must have ascending sizes and strictly descending depth caps",
        ),
        (
            lambda: SurfacePolicy(levels=(SurfaceLevel(100, 4), SurfaceLevel(100, 2))),
            "surface levels must have ascending sizes and strictly descending depth caps",
        ),
        (
            lambda: SurfacePolicy(levels=(SurfaceLevel(0, 4),)),
            "surface levels need frontier_size >= 1 and max_depth >= 0",
        ),
        (
            lambda: SurfacePolicy(levels=(SurfaceLevel(10, -1),)),
            "surface levels need frontier_size >= 1 and max_depth >= 0",
        ),
        (lambda: SurfacePolicy(max_depth=-1), "max_depth must be >= 0, got -1"),
        (
            lambda: SurfacePolicy(release_fraction=0.0),
            "release_fraction must lie in (0, 1], got 0.0",
        ),
        (
            lambda: SurfacePolicy(release_fraction=1.5),
            "release_fraction must lie in (0, 1], got 1.5",
        ),
        (lambda: decide_depth_cap(-1, None, POLICY), "frontier_size must be >= 0, got -1"),
    ],
)
def test_invalid_thresholds_are_refused(build, message):
    with pytest.raises(ValueError) as refused:
        build()
    assert str(refused.value) == message


def test_the_edges_of_every_range_are_accepted():
    policy = SurfacePolicy(levels=(SurfaceLevel(1, 0),), max_depth=0, release_fraction=1.0)
    assert decide_depth_cap(1, None, policy).cap == 0


def test_without_an_absolute_cap_a_big_host_takes_its_levels_cap() -> None:
    policy = SurfacePolicy(levels=POLICY.levels, max_depth=None)
    decision = decide_depth_cap(5000, None, policy)
    assert (decision.cap, decision.tightened) == (2, True)
    assert decide_depth_cap(50, None, policy).cap is None
