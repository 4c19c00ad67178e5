"""Spacing requests that are not a lane's own work: robots.txt redirect hops.

Every request's real start raises its site's key (``sent``), so a hop to a host spaces from
the last request that really went there, whoever sent it.

A robots.txt that redirects sends the next request to another host (or the same one): that
request is booked on the ``site:`` key of the host it goes to, at that site's own interval
(a seed site's current one, else the configured site interval), and sent only inside its
slot, so robots.txt files that all redirect to one innocent host cannot make it a target.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from courtier.config import Config
from courtier.pipeline.clocks import KeyClocks
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.timer import Timer, sleep_until
from courtier.politeness.gcra import KeyParams, Limit, Refusal


class HopBooker:
    def __init__(
        self,
        config: Config,
        clocks: KeyClocks,
        timer: Timer,
        stats: CrawlStats,
        interval_of: Callable[[str], float | None],
        stopping: Callable[[], bool],
    ) -> None:
        self.config = config
        self.clocks = clocks
        self.timer = timer
        self.stats = stats
        self.interval_of = interval_of
        self.stopping = stopping

    async def sent(self, site: str, sent_at: float) -> None:
        """A request to ``site`` went out at ``sent_at``: nothing else (a robots.txt hop from
        another site, another lane) starts there before its interval from that moment."""
        default = self.config.site_interval + self.config.politeness.start_margin
        spacing = self.interval_of(site) or default
        await self.clocks.raise_floors({f"site:{site}": sent_at + spacing}, durable=False)

    async def __call__(self, site: str) -> bool:
        """Book one request on ``site:<site>`` and wait for its slot; False when the crawl
        stops first (then nothing may be sent)."""
        interval = self.interval_of(site) or self.config.site_interval
        params = self.config.limits.site
        limit = Limit(f"site:{site}", KeyParams(interval, params.burst, params.slot_width, False))
        while not self.stopping():
            booking = await self.clocks.book((limit,), 1.0, max_lead=math.inf)
            if isinstance(booking, Refusal):
                await sleep_until(self.timer, booking.not_before)
                continue
            self.stats.slots += 1
            await sleep_until(self.timer, booking.start)
            if not booking.is_missed(self.timer.now()):
                return not self.stopping()
            self.stats.missed_slots += 1
        return False
