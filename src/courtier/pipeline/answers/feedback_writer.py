"""The one writer of feedback: applies ``feedback.after_answer`` to lanes, origins, clocks.

Pages and media lanes get the same treatment: the lane's backoff and latency, its origin's
state (push-back, error runs, latency) and the key clocks (pauses as floors, late charges).
The origin's latency state also sets its booking limit (``origin_limit``): the configured
interval divided by the rate factor, used for pages, CDN misses and saved floors alike.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Protocol

from courtier.config import Config
from courtier.pipeline.answers.feedback import (
    Answered,
    Effects,
    FeedbackParams,
    LaneFeedback,
    OriginState,
    after_answer,
)
from courtier.pipeline.scheduling.clocks import KeyClocks
from courtier.pipeline.stats import CrawlStats
from courtier.politeness.backoff import BackoffParams, BackoffState, after_response
from courtier.politeness.gcra import Limit
from courtier.politeness.keys import KeyType, LimitKey, origin_key
from courtier.politeness.latency import LatencyParams, LatencyState

log = logging.getLogger(__name__)


class FeedbackLane(Protocol):
    name: str

    @property
    def key(self) -> str:
        """The lane's own limit key (its pause is kept there, durable across a crash)."""
        ...

    backoff: BackoffState
    latency: LatencyState


def feedback_params(config: Config, *, one_in_flight: bool) -> FeedbackParams:
    p = config.politeness
    latency = LatencyParams(
        ratio=p.latency_ratio,
        min_rise=p.latency_min_rise,
        decrease=p.latency_decrease,
        increase=p.latency_increase,
        floor=p.latency_floor,
        cooldown=p.latency_cooldown,
    )
    return FeedbackParams(
        backoff=backoff_params(config),
        # With one request in flight, every answer was sent at the lane's current rate, so
        # it needs no cooldown between cuts; an origin (many lanes in flight) does.
        lane_latency=dataclasses.replace(latency, cooldown=0.0) if one_in_flight else latency,
        origin_latency=latency,
        default_retry_after=p.default_retry_after,
        max_retry_after=p.max_retry_after,
        origin_pause_sites=p.origin_pause_sites,
        origin_pause_window=p.origin_pause_window,
        origin_error_run=p.origin_error_run,
        suspend_after_errors=p.suspend_after_errors,
        suspend_for=p.suspend_for,
    )


def backoff_params(config: Config) -> BackoffParams:
    p = config.politeness
    return BackoffParams(
        base_interval=config.site_interval,
        default_retry_after=p.default_retry_after,
        max_backoff=p.max_backoff,
        suspend_after=p.suspend_after_errors,
        suspend_for=p.suspend_for,
    )


_FULL_RATE = OriginState()


class FeedbackWriter:
    def __init__(self, config: Config, clocks: KeyClocks, stats: CrawlStats) -> None:
        self.config = config
        self.clocks = clocks
        self.stats = stats
        self.origins: dict[str, OriginState] = {}
        self.site_params = feedback_params(
            config, one_in_flight=config.politeness.max_in_flight_per_site == 1
        )
        self.media_params = feedback_params(config, one_in_flight=False)

    def origin_limit(self, origin: str) -> Limit:
        """The origin's key as the clocks' policy has it (configured, or the operator's
        budget), slowed by the origin's own latency feedback."""
        params = self.clocks.policy.params(LimitKey(KeyType.ORIGIN, origin))
        factor = self.origins.get(origin, _FULL_RATE).latency.factor
        if factor < 1.0:
            params = dataclasses.replace(params, interval=params.interval / factor)
        return Limit(origin_key(origin), params)

    def slow_origin(self, origin: str) -> None:
        """Halve the origin's rate (an anomaly said so); latency feedback's additive
        recovery brings it back as its answers stay calm."""
        state = self.origins.get(origin, _FULL_RATE)
        floor = self.site_params.origin_latency.floor
        latency = dataclasses.replace(state.latency, factor=max(floor, state.latency.factor / 2))
        self.origins[origin] = dataclasses.replace(state, latency=latency)
        self.stats.latency_slowdowns["anomaly"] += 1

    def host_unresolved(self, lane: FeedbackLane, now: float) -> None:
        """The lane's host could not be resolved for now (DNS trouble), before any request:
        the lane backs off as after no answer (nothing was booked, so no floor)."""
        params = self._own(lane, self.site_params)
        lane.backoff = after_response(lane.backoff, None, None, now, params.backoff)

    @staticmethod
    def _own(lane: FeedbackLane, params: FeedbackParams) -> FeedbackParams:
        """``params``, with the lane's own base interval when it has one (``[limits]
        overrides``): backoff recovers to it, not to the type's."""
        base = getattr(lane, "base_interval", None)
        if base is None:
            return params
        backoff = dataclasses.replace(params.backoff, base_interval=base)
        return dataclasses.replace(params, backoff=backoff)

    def origin_interval(self, origin: str) -> float:
        return self.origin_limit(origin).params.interval

    async def apply(self, lane: FeedbackLane, answer: Answered, *, media: bool = False) -> Effects:
        origin = None
        if answer.origin is not None:
            origin = self.origins.get(answer.origin, _FULL_RATE)
        params = self._own(lane, self.media_params if media else self.site_params)
        before = lane.backoff
        effects = after_answer(answer, LaneFeedback(lane.backoff, lane.latency), origin, params)
        lane.backoff, lane.latency = effects.lane.backoff, effects.lane.latency
        if answer.origin is not None and effects.origin is not None:
            self.origins[answer.origin] = effects.origin
        floors = dict(effects.floors)
        if lane.backoff.paused_until > before.paused_until:
            floors[lane.key] = lane.backoff.paused_until
        if floors:
            await self.clocks.raise_floors(floors)
        if effects.origin_charge > 0 and answer.origin is not None:
            await self.clocks.charge(self.origin_limit(answer.origin), effects.origin_charge)
        self._count(lane, answer, effects)
        return effects

    def _count(self, lane: FeedbackLane, answer: Answered, effects: Effects) -> None:
        stats = self.stats
        for event in effects.events:
            if event == "suspended":
                stats.suspended_sites += 1
                log.warning(
                    "suspending %s for %.0f s after %d failures in a row",
                    lane.name,
                    self.config.politeness.suspend_for,
                    self.config.politeness.suspend_after_errors,
                )
            elif event == "slowdown-lane":
                stats.latency_slowdowns["site"] += 1
            elif event == "slowdown-origin":
                stats.latency_slowdowns["origin"] += 1
            elif event == "cost-correction":
                stats.cost_corrections += 1
            elif event in ("origin-paused", "origin-backoff", "origin-stopped"):
                stats.origin_pauses += 1
                stats.origin_backoffs[event] += 1
                log.warning("%s: origin %s (answer from %s)", event, answer.origin, lane.name)
