"""What every lane kind uses: the shared stages of the engine, handed over as one value."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from courtier.config import Config
from courtier.pipeline.apply import FeedbackWriter
from courtier.pipeline.fetching import GuardedFetch
from courtier.pipeline.robots_fetch import RobotsCache
from courtier.pipeline.stats import CrawlStats
from courtier.pipeline.timer import Timer


@dataclass(frozen=True, slots=True)
class LaneServices:
    config: Config
    timer: Timer
    fetch: GuardedFetch
    """The one guarded fetch."""
    robots: RobotsCache
    """robots.txt rules of every host, seed sites and media hosts alike."""
    feedback: FeedbackWriter
    stats: CrawlStats
    write_document: Callable[[dict[str, Any]], None]
    book_hop: Callable[[str], Awaitable[bool]]
    """Book a request on ``site:<site>`` and wait for its slot (robots.txt redirect hops)."""
