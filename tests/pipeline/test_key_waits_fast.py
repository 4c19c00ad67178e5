"""Lanes a saturated key refused wait in that key's line: on fake time, no sockets."""

from __future__ import annotations

import pytest

from courtier.pipeline.scheduling.key_waits import KeyWaits
from courtier.pipeline.scheduling.timer import FakeTimer


class Asker:
    """Lanes that ask a key with one slot every ``interval`` seconds, as a limiter with no
    lead would answer: the first to ask after a slot opened books, later ones are refused."""

    def __init__(self, timer: FakeTimer, interval: float) -> None:
        self.timer = timer
        self.interval = interval
        self.next_free = timer.now()
        self.asked: list[tuple[float, str]] = []
        self.booked: list[tuple[float, str]] = []
        self.waits: KeyWaits[str] = KeyWaits(timer, self.ask)
        self.places: dict[str, object] = {}
        self.gone: set[str] = set()

    def ask(self, lane: str) -> None:
        now = self.timer.now()
        self.asked.append((now, lane))
        if lane in self.gone:
            return  # it has no work any more: it leaves the line
        if now >= self.next_free:
            self.booked.append((now, lane))
            self.next_free = now + self.interval
        else:
            self.places[lane] = self.waits.wait(lane, "origin:o", self.next_free)


async def test_a_slot_costs_one_booking_and_at_most_one_refusal_however_many_wait() -> None:
    timer = FakeTimer()
    asker = Asker(timer, interval=1.0)
    lanes = [f"s{n}" for n in range(50)]
    for lane in lanes:
        asker.ask(lane)
    await timer.advance(49.5)
    assert [lane for _t, lane in asker.booked] == lanes  # served in the order refused
    starts = [t for t, _lane in asker.booked]
    assert starts == pytest.approx([timer.now() - 49.5 + n for n in range(50)])
    # 50 first asks, then per slot one booking and one refused probe of the next in line.
    assert len(asker.asked) <= 50 + 2 * 49
    assert asker.waits.lines() == 0 and asker.waits.waiting() == 0


async def test_without_a_line_every_refused_lane_asks_at_every_slot() -> None:
    """What the line saves: each lane on its own timer at the refusal's not_before."""
    timer = FakeTimer()
    asked = 0
    next_free = timer.now()

    def ask(lane: int) -> None:
        nonlocal asked, next_free
        asked += 1
        now = timer.now()
        if now >= next_free:
            next_free = now + 1.0
        else:
            timer.call_at(next_free, ask, lane)

    for lane in range(50):
        ask(lane)
    await timer.advance(49.5)
    assert asked > 1000  # ~N^2/2: the herd the line removes


async def test_a_cancelled_place_is_skipped_and_the_next_lane_is_woken() -> None:
    timer = FakeTimer()
    asker = Asker(timer, interval=1.0)
    for lane in ("a", "b", "c"):
        asker.ask(lane)
    asker.places["b"].cancel()  # type: ignore[attr-defined]
    await timer.advance(5.0)
    assert [lane for _t, lane in asker.booked] == ["a", "c"]
    assert all(lane != "b" for _t, lane in asker.asked[3:])


async def test_a_lane_that_leaves_hands_its_turn_to_the_next_at_once() -> None:
    timer = FakeTimer()
    asker = Asker(timer, interval=1.0)
    for lane in ("a", "b", "c"):
        asker.ask(lane)
    asker.gone.add("b")  # its work went away while it waited
    start = timer.now()
    await timer.advance(5.0)
    assert [(t - start, lane) for t, lane in asker.booked] == [(0.0, "a"), (1.0, "c")]


async def test_an_earlier_not_before_moves_the_lines_timer_earlier() -> None:
    timer = FakeTimer()
    woken: list[tuple[float, str]] = []
    waits: KeyWaits[str] = KeyWaits(timer, lambda lane: woken.append((timer.now(), lane)))
    start = timer.now()
    waits.wait("late", "k", start + 5.0)
    waits.wait("early", "k", start + 1.0)
    await timer.advance(1.0)
    # The line's head asks at the earliest time any refusal gave; the next at once after.
    assert woken == [(start + 1.0, "late"), (start + 1.0, "early")]


async def test_a_lane_about_to_book_on_a_busy_key_joins_its_line_unasked() -> None:
    timer = FakeTimer()
    woken: list[str] = []
    busy_while_asking: list[str | None] = []
    waits: KeyWaits[str] = KeyWaits(timer, woken.append)
    start = timer.now()
    assert waits.busy(["site:a", "origin:o"], start) is None  # no line yet
    waits.wait("a", "origin:o", start + 2.0)
    assert waits.busy(["site:b", "origin:o"], start) == "origin:o"
    waits.join("b", "origin:o")  # no timer moved: the line still turns at start + 2
    await timer.advance(1.0)
    assert woken == []

    def ask(lane: str) -> None:
        # The woken lane is never sent back to its own line: it has no timer while it asks.
        busy_while_asking.append(waits.busy(["origin:o"], timer.now()))
        woken.append(lane)

    waits.wake = ask
    await timer.advance(1.0)
    assert woken == ["a", "b"] and busy_while_asking == [None, None]
    assert waits.busy(["origin:o"], timer.now()) is None and waits.lines() == 0


async def test_a_line_due_now_is_not_busy() -> None:
    timer = FakeTimer()
    waits: KeyWaits[str] = KeyWaits(timer, lambda lane: None)
    waits.wait("a", "k", timer.now())
    assert waits.busy(["k"], timer.now()) is None  # due: asking may succeed


class QueuedAsker(Asker):
    """The same lanes and key, booked by a task (as a SQLite or PostgreSQL limiter is): a
    woken lane is queued, and asks the key when the booker takes the queue."""

    def __init__(self, timer: FakeTimer, interval: float) -> None:
        super().__init__(timer, interval)
        self.queued: list[str] = []
        self.waits = KeyWaits(timer, self.queue)

    def queue(self, lane: str) -> bool:
        self.queued.append(lane)
        return True  # its ask is out until the booker answers it

    def book_queued(self) -> None:
        """The booker's turn: every queued lane asks, then the line hears each answer."""
        queued, self.queued = self.queued, []
        for lane in queued:
            self.ask(lane)
        for lane in queued:
            self.waits.answered(lane)


async def test_a_line_waits_for_its_queued_lanes_answer_before_the_next_asks() -> None:
    timer = FakeTimer()
    asker = QueuedAsker(timer, interval=1.0)
    lanes = [f"s{n}" for n in range(20)]
    for lane in lanes:
        asker.ask(lane)
    for _ in range(400):  # the booker takes the queue every 50 ms
        await timer.advance(0.05)
        assert len(asker.queued) <= 1  # never the whole line queued at once
        asker.book_queued()
    assert [lane for _t, lane in asker.booked] == lanes
    assert len(asker.asked) <= 20 + 2 * 19  # still one refusal at most per slot
    assert asker.waits.lines() == 0


async def test_a_queued_lane_that_never_asks_lets_the_line_go_on() -> None:
    """A lane woken from the line and dropped before the booker took it: answered anyway,
    and the next in line asks."""
    timer = FakeTimer()
    asker = QueuedAsker(timer, interval=1.0)
    for lane in ("a", "b", "c"):
        asker.ask(lane)  # a books; b and c are refused and wait in the line
    await timer.advance(1.0)
    assert asker.queued == ["b"]  # c waits for b's answer
    asker.queued.clear()
    asker.waits.answered("b")  # dropped: it left without asking
    await timer.advance(0.0)
    assert asker.queued == ["c"]
    asker.book_queued()
    assert asker.booked[-1][1] == "c"
    assert asker.waits.lines() == 0


async def test_a_line_counts_its_waiting_lanes_and_is_gone_once_served() -> None:
    timer = FakeTimer()
    asker = Asker(timer, interval=1.0)
    for lane in ("a", "b", "c", "d"):
        asker.ask(lane)  # a books; b, c and d wait in the line of origin:o
    assert asker.waits.lined("origin:o") and not asker.waits.lined("origin:other")
    assert (asker.waits.waiting(), asker.waits.lines()) == (3, 1)
    asker.places["c"].cancel()  # type: ignore[attr-defined]
    assert asker.waits.waiting() == 2
    await timer.advance(5.0)
    assert (asker.waits.waiting(), asker.waits.lines()) == (0, 0)
    assert not asker.waits.lined("origin:o")


def test_an_answer_for_a_lane_no_line_woke_is_ignored() -> None:
    timer = FakeTimer()
    waits: KeyWaits[str] = KeyWaits(timer, lambda lane: True)
    waits.answered("stranger")
    waits.wait("a", "k", timer.now() + 1.0)
    waits.answered("a")  # not woken yet: it keeps its place
    assert waits.waiting() == 1 and waits.lined("k")
