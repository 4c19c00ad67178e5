"""Streaming anomaly detection per site and per origin, each against its own baseline.

Theory of operation:
- Every site and every origin has its own state, in memory (never metric labels). Signals:
  ``latency`` (time to first byte), ``errors`` (5xx other than 503, and no answer at all),
  ``throttled`` (429 and 503: the server pushing back), per request; and per origin, the
  achieved rate in cost units against the origin's budget (``over-budget``, ``rate-drop``),
  per window of ``anomaly_rate_window`` seconds.
- Per-request signals keep two exponentially weighted moving averages: a slow one, the
  *baseline* (with its exponentially weighted variance, West's update), and a fast one, the
  *recent level*. A sample is *beyond* the band when the recent level exceeds the baseline
  by ``anomaly_band`` deviations (for latency the baseline's own; for a share the binomial
  spread of the recent level around the baseline share) and by a floor that makes the band
  meaningful when the baseline is flat (latency: ``anomaly_latency_ratio`` times and
  ``anomaly_latency_min_rise`` seconds above; error shares: ``anomaly_rate_min_rise``).
  Latency is judged in log space: latencies spread multiplicatively, and a site's baseline
  of 5 ms and another's of 500 ms need the same rule.
- ``anomaly_persist`` samples in a row beyond the band raise an anomaly (one is enough for
  a 429/503 with ``Retry-After``: the server says it is unavailable, and the crawler obeys,
  so a second one may never come). It clears after a sustained recovery: twice as many
  samples back inside in a row, and no sooner than ``anomaly_hold`` seconds after it was
  raised, so a site whose answers swing in and out of the band raises the same anomaly at
  most once per ``anomaly_hold`` (an operator mutes an alert that flaps). While raised, the
  baseline is frozen, so an anomaly is not learnt as normal; a run beyond the band that
  ends before it is raised is learnt (a lone outlier too: that is how a flaky site's
  baseline comes to expect its errors); after ``anomaly_relearn`` seconds the level it
  settled at becomes the new baseline (and the anomaly is cleared with that said).
- Error shares start from a prior of a healthy site (a baseline of 0 that has already seen
  ``PRIOR_WEIGHT`` good answers), so a site that is broken from its very first request (an
  outage at start) is judged too; latency has no such prior, its baseline is learnt from
  the first ``LATENCY_WARMUP`` answers. Every answer's latency counts, a 503's too: an
  overloaded server is often slow to refuse. An origin's latency is its own servers': a
  media answer charged to it (a CDN miss, an image-service render) came from an edge, and
  counts on the media host only, as in the crawl's latency feedback.
- Rate: in each window the cost units an origin started are compared with its budget
  (``over-budget``: more than ``budget x window x (1 + anomaly_budget_tolerance)`` plus the
  largest cost of one request, what GCRA allows at a window's edge: a politeness breach),
  and its utilisation with its own baseline (``rate-drop``, only in windows whose requests
  waited for their slots: there was work, yet the origin got little of its budget. A site
  that runs out of work is not an anomaly).
- The detector is pure: time is what the events say; ``advance(now)`` closes rate windows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from courtier.observe.rows import THROTTLES, RequestRow
from courtier.observe.settings import ObserveSettings
from courtier.politeness.keys import origin_key

SLOW_ALPHA = 0.1
"""Weight of one answer in a latency baseline (about the last 20 answers)."""
SHARE_ALPHA = 0.02
"""Weight of one answer in the baseline of an error share: a share of a few percent needs
a memory of about a hundred answers to be told from a run of bad luck."""
FAST_ALPHA = 0.5
"""Weight of one sample in the recent level (about the last 2-3 samples)."""
LATENCY_WARMUP = 1
"""Answers a latency baseline learns from before it judges (the floors of the band keep a
young baseline from crying wolf: a rise must double the latency and add 50 ms)."""
SPREAD_WARMUP = 8
"""Samples a baseline needs before its deviation widens the band: a young baseline's spread
is mostly the very rise it should catch, so until then the band is its floor alone."""
PRIOR_WEIGHT = 10
"""Good answers the prior of an error share counts as (it then moves like a learnt one)."""
RATE_WARMUP = 2
"""Rate windows an origin's utilisation baseline learns from before it judges a drop."""
MIN_LATENCY = 1e-4


@dataclass(frozen=True, slots=True)
class Anomaly:
    """One anomaly raised (or cleared) on a site or an origin."""

    at: float
    """When (wall clock, the time of the sample or window that decided it)."""
    scope: str
    """``site`` or ``origin``."""
    name: str
    """The site or the origin id."""
    signal: str
    """``latency``, ``errors``, ``throttled``, ``over-budget`` or ``rate-drop``."""
    state: str
    """``raised`` or ``cleared``."""
    value: float
    """The recent level (seconds, a share, or cost units per second)."""
    baseline: float
    threshold: float
    """Where the band ended: the value had to pass it (fall below it, for a drop)."""
    samples: int
    """Requests the entity had when this was decided."""
    origin: str | None = None
    """The origin the site books on (the origin to slow down); the origin itself for one."""
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "time": self.at,
            "scope": self.scope,
            "name": self.name,
            "signal": self.signal,
            "state": self.state,
            "value": round(self.value, 6),
            "baseline": round(self.baseline, 6),
            "threshold": round(self.threshold, 6),
            "samples": self.samples,
            "origin": self.origin,
            "detail": self.detail,
        }


@dataclass(slots=True)
class Ewma:
    """An exponentially weighted mean and variance (West, 1979)."""

    alpha: float
    mean: float = 0.0
    var: float = 0.0
    n: int = 0

    def update(self, x: float) -> None:
        if self.n == 0:
            self.mean, self.var = x, 0.0
        else:
            delta = x - self.mean
            self.mean += self.alpha * delta
            self.var = (1.0 - self.alpha) * (self.var + self.alpha * delta * delta)
        self.n += 1

    @property
    def std(self) -> float:
        return math.sqrt(self.var)


@dataclass(slots=True)
class Track:
    """One signal of one entity: baseline, recent level, and whether it is raised."""

    slow: Ewma = field(default_factory=lambda: Ewma(SLOW_ALPHA))
    fast: Ewma = field(default_factory=lambda: Ewma(FAST_ALPHA))
    streak: int = 0
    calm: int = 0
    raised_at: float | None = None
    pending: list[float] = field(default_factory=list)
    """Samples of the current run beyond the band, not learnt yet."""
    last: float = 0.0
    """The last sample (a rate window's utilisation)."""


def _prior_track() -> Track:
    return Track(slow=Ewma(SHARE_ALPHA, 0.0, 0.0, PRIOR_WEIGHT), fast=Ewma(FAST_ALPHA, 0.0, 0.0, 1))


@dataclass(slots=True)
class Entity:
    scope: str
    name: str
    origin: str | None
    requests: int = 0
    latency: Track = field(default_factory=Track)
    errors: Track = field(default_factory=_prior_track)
    throttled: Track = field(default_factory=_prior_track)
    # rate windows (origins only)
    window: int | None = None
    units: float = 0.0
    waited: int = 0
    in_window: int = 0
    max_cost: float = 0.0
    utilisation: Track = field(default_factory=Track)
    over_budget: Track = field(default_factory=Track)


@dataclass(frozen=True, slots=True)
class _Judgement:
    beyond: bool
    value: float
    baseline: float
    threshold: float


class AnomalyDetector:
    """Feed it rows (``observe``), then ``advance`` the time; both return new anomalies."""

    def __init__(self, settings: ObserveSettings, budget_of: Callable[[str], float | None]) -> None:
        self.settings = settings
        self.budget_of = budget_of
        self.sites: dict[str, Entity] = {}
        self.origins: dict[str, Entity] = {}
        self.active: dict[tuple[str, str, str], Anomaly] = {}
        self._budgets: dict[str, float | None] = {}
        self._log_ratio = math.log(settings.anomaly_latency_ratio)
        # the settings are frozen: their figures, read for every sample, are kept at hand
        self._band = settings.anomaly_band
        self._rate_min_rise = settings.anomaly_rate_min_rise
        self._latency_min_rise = settings.anomaly_latency_min_rise
        self._persist = settings.anomaly_persist
        self._next_close = math.inf
        """No open rate window is due before this (``advance`` skips its walk until then)."""

    # -- per request ----------------------------------------------------------------------

    def observe(self, row: RequestRow) -> list[Anomaly]:
        if not row.sent:
            return []  # the guard refused: the server never heard of it
        found: list[Anomaly] = []
        origin = row.origin
        site = self._entity(self.sites, "site", row.site, origin)
        if origin is None:
            self._request((site,), row, found)
        else:
            entity = self._entity(self.origins, "origin", origin, origin)
            # A media answer came from an edge or a store, not the origin's servers: its
            # latency is theirs (as for the crawl's own latency feedback, which skips it).
            self._request((site, entity), row, found, origin_latency=row.kind != "media")
            found += self._rate(entity, row)
        return found

    def _entity(
        self, table: dict[str, Entity], scope: str, name: str, origin: str | None
    ) -> Entity:
        entity = table.get(name)
        if entity is None:
            entity = table[name] = Entity(scope, name, origin)
        elif origin is not None:
            entity.origin = origin
        return entity

    def _request(
        self,
        entities: tuple[Entity, ...],
        row: RequestRow,
        found: list[Anomaly],
        *,
        origin_latency: bool = True,
    ) -> None:
        """One answer, judged on its site and its origin (the samples are worked out once);
        its latency on the origin only when the origin's servers gave it."""
        status = row.status
        at = row.time
        if status is None:
            error, throttled = row.error is not None, False
        else:
            throttled = status in THROTTLES
            error = status >= 500 and not throttled
        # A 429/503 that says how long to stay away is the server's own word: no need to
        # wait for a second one (the crawler obeys it, so there may never be one).
        explicit = throttled and bool(row.retry_after)
        latency = row.latency
        x: float | None = None
        if status is not None and latency is not None:
            x = math.log(latency if latency > MIN_LATENCY else MIN_LATENCY)
        e = 1.0 if error else 0.0
        t = 1.0 if throttled else 0.0
        step = self._step
        for entity in entities:
            entity.requests += 1
            anomaly = step(entity, "errors", entity.errors, e, at)
            if anomaly is not None:
                found.append(anomaly)
            anomaly = step(entity, "throttled", entity.throttled, t, at, explicit)
            if anomaly is not None:
                found.append(anomaly)
            if x is not None and (origin_latency or entity.scope != "origin"):
                anomaly = step(entity, "latency", entity.latency, x, at)
                if anomaly is not None:
                    found.append(anomaly)

    def _beyond(self, signal: str, track: Track) -> bool:
        """Is the recent level beyond the band? (The cheap test of every sample.)"""
        slow, level = track.slow, track.fast.mean
        if signal == "latency":
            if slow.n < LATENCY_WARMUP:
                return False
            margin = max(self._band * _spread(slow), self._log_ratio)
            if level <= slow.mean + margin:
                return False
            return math.exp(level) > math.exp(slow.mean) + self._latency_min_rise
        if level <= slow.mean + self._rate_min_rise:
            return False
        return level > slow.mean + self._band * _share_spread(slow.mean)

    def _judge(self, signal: str, track: Track) -> _Judgement:
        """The figures of a decision (only computed when one is announced)."""
        s = self.settings
        slow, fast = track.slow, track.fast
        if signal == "rate-drop":
            judged = slow.n >= RATE_WARMUP and slow.mean >= 0.5
            margin = max(s.anomaly_band * _spread(slow), s.anomaly_rate_min_rise)
            threshold = slow.mean - margin
            return _Judgement(judged and track.last < threshold, track.last, slow.mean, threshold)
        if signal == "latency":
            baseline = math.exp(slow.mean)
            if slow.n < LATENCY_WARMUP:
                return _Judgement(False, math.exp(fast.mean), baseline, math.inf)
            margin = max(s.anomaly_band * _spread(slow), self._log_ratio)
            threshold = max(math.exp(slow.mean + margin), baseline + s.anomaly_latency_min_rise)
            value = math.exp(fast.mean)
            return _Judgement(value > threshold, value, baseline, threshold)
        margin = max(s.anomaly_band * _share_spread(slow.mean), s.anomaly_rate_min_rise)
        threshold = slow.mean + margin
        return _Judgement(fast.mean > threshold, fast.mean, slow.mean, threshold)

    def _step(
        self,
        entity: Entity,
        signal: str,
        track: Track,
        x: float,
        at: float,
        explicit: bool = False,
    ) -> Anomaly | None:
        track.fast.update(x)
        if self._beyond(signal, track):
            track.streak = max(track.streak + 1, self._persist if explicit else 0)
            track.calm = 0
            if track.raised_at is None:
                track.pending.append(x)  # learnt only if the run ends before it is raised
        else:
            track.streak = 0
            if track.raised_at is None:
                if track.pending:
                    for earlier in track.pending:
                        track.slow.update(earlier)
                    track.pending.clear()
                track.slow.update(x)
                return None
            track.calm += 1
        return self._decide(entity, signal, track, at)

    def _decide(self, entity: Entity, signal: str, track: Track, at: float) -> Anomaly | None:
        persist = self._persist
        if track.raised_at is None:
            if track.streak >= persist:
                track.raised_at = at
                track.pending.clear()
                return self._anomaly(entity, signal, "raised", self._judge(signal, track), at)
            return None
        if track.calm >= 2 * persist and at - track.raised_at >= self.settings.anomaly_hold:
            track.raised_at, track.calm = None, 0
            return self._anomaly(entity, signal, "cleared", self._judge(signal, track), at)
        if at - track.raised_at >= self.settings.anomaly_relearn:
            judgement = self._judge(signal, track)
            track.raised_at, track.streak, track.calm = None, 0, 0
            level = track.fast.mean
            track.slow = Ewma(track.slow.alpha, level, track.slow.var, track.slow.n)
            return self._anomaly(
                entity, signal, "cleared", judgement, at, "its level is the new baseline"
            )
        return None

    def _anomaly(
        self,
        entity: Entity,
        signal: str,
        state: str,
        judgement: _Judgement,
        at: float,
        detail: str = "",
    ) -> Anomaly:
        anomaly = Anomaly(
            at=at,
            scope=entity.scope,
            name=entity.name,
            signal=signal,
            state=state,
            value=judgement.value,
            baseline=judgement.baseline,
            threshold=judgement.threshold,
            samples=entity.requests,
            origin=entity.origin,
            detail=detail or _describe(signal, state, judgement),
        )
        key = (entity.scope, entity.name, signal)
        if state == "raised":
            self.active[key] = anomaly
        else:
            self.active.pop(key, None)
        return anomaly

    # -- rate windows (origins) -----------------------------------------------------------

    def _budget(self, origin: str) -> float | None:
        if origin not in self._budgets:
            self._budgets[origin] = self.budget_of(origin_key(origin))
        return self._budgets[origin]

    def _rate(self, entity: Entity, row: RequestRow) -> list[Anomaly]:
        size = self.settings.anomaly_rate_window
        window = int(row.time // size)
        found: list[Anomaly] = []
        if entity.window is None:
            entity.window = window
            self._closes_at(window)
        elif window > entity.window:
            found += self._close(entity, (entity.window + 1) * size)
            entity.window = window
            self._closes_at(window)
        # a request started in an earlier window (it answered late) counts in the open one
        entity.units += row.units
        entity.in_window += 1
        entity.waited += row.wait_s > 0.0
        entity.max_cost = max(entity.max_cost, row.units)
        return found

    def _closes_at(self, window: int) -> None:
        size = self.settings.anomaly_rate_window
        due = (window + 1) * size + size
        if due < self._next_close:
            self._next_close = due

    def advance(self, now: float) -> list[Anomaly]:
        """Close the rate windows that ended before ``now`` (minus a grace for answers)."""
        if now < self._next_close:
            return []  # no window is due: the walk over every origin waits until one is
        size = self.settings.anomaly_rate_window
        found: list[Anomaly] = []
        next_close = math.inf
        for entity in self.origins.values():
            if entity.window is None:
                continue
            end = (entity.window + 1) * size
            if now >= end + size:  # one more window of grace for slow answers
                found += self._close(entity, end)
            elif end + size < next_close:
                next_close = end + size
        self._next_close = next_close
        return found

    def _close(self, entity: Entity, end: float) -> list[Anomaly]:
        size = self.settings.anomaly_rate_window
        units, waited, count = entity.units, entity.waited, entity.in_window
        max_cost = entity.max_cost
        entity.window = None
        entity.units, entity.waited, entity.in_window, entity.max_cost = 0.0, 0, 0, 0.0
        budget = self._budget(entity.name)
        if budget is None or count == 0:
            return []
        found: list[Anomaly] = []
        allowed = budget * size * (1.0 + self.settings.anomaly_budget_tolerance) + max_cost
        over = _Judgement(units > allowed, units / size, budget, allowed / size)
        track = entity.over_budget
        track.streak = track.streak + 1 if over.beyond else 0
        track.calm = 0 if over.beyond else track.calm + 1
        # over budget is a breach at once: one window is enough
        if over.beyond and track.raised_at is None:
            track.raised_at = end
            found.append(self._anomaly(entity, "over-budget", "raised", over, end))
        elif (
            not over.beyond
            and track.raised_at is not None
            and track.calm >= 1
            and end - track.raised_at >= self.settings.anomaly_hold
        ):
            track.raised_at = None
            found.append(self._anomaly(entity, "over-budget", "cleared", over, end))
        if waited * 2 >= count:  # most requests waited for their slot: there was work
            found += self._utilisation(entity, units / (budget * size), end)
        return found

    def _utilisation(self, entity: Entity, u: float, end: float) -> list[Anomaly]:
        track = entity.utilisation
        track.last = u
        track.fast.update(u)
        judgement = self._judge("rate-drop", track)
        if judgement.beyond:
            track.streak, track.calm = track.streak + 1, 0
        else:
            track.streak = 0
            if track.raised_at is None:
                track.slow.update(u)
            else:
                track.calm += 1
        anomaly = self._decide(entity, "rate-drop", track, end)
        return [] if anomaly is None else [anomaly]


def _spread(baseline: Ewma) -> float:
    return baseline.std if baseline.n >= SPREAD_WARMUP else 0.0


def _share_spread(p: float) -> float:
    """The standard deviation of the recent level of a share whose true value is ``p``: the
    binomial spread through the fast average (the sample variance of 0/1 samples collapses
    after a good run, which would make two errors in a row an anomaly on a flaky site)."""
    p = min(max(p, 0.0), 1.0)
    return math.sqrt(p * (1.0 - p) * FAST_ALPHA / (2.0 - FAST_ALPHA))


def _describe(signal: str, state: str, j: _Judgement) -> str:
    verb = "is" if state == "raised" else "is back within"
    if signal == "latency":
        return (
            f"latency {j.value * 1000:.0f} ms {verb} {'above ' if state == 'raised' else ''}"
            f"its band (baseline {j.baseline * 1000:.0f} ms, band to {j.threshold * 1000:.0f} ms)"
        )
    if signal in ("errors", "throttled"):
        what = "5xx/no answer" if signal == "errors" else "429/503"
        return f"{what} share {j.value:.0%} (baseline {j.baseline:.0%}, band to {j.threshold:.0%})"
    if signal == "over-budget":
        return (
            f"{j.value:.2f} cost units/s against a budget of {j.baseline:.2f} "
            f"(allowed {j.threshold:.2f} in a window)"
        )
    return (
        f"utilisation {j.value:.0%} of the budget while work waited "
        f"(baseline {j.baseline:.0%}, band down to {j.threshold:.0%})"
    )
