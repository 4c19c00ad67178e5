"""What the engine tells an observer: one event per request it sends (or was refused).

The engine only emits; ``courtier.observe`` (request log, metrics, anomaly detection)
decides what to keep. An observer is called on the event loop and must not block: it
buffers and writes elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from courtier.net.fetch import FetchResult


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Why a request is made, as the lane that makes it knows it."""

    site: str
    """The lane's site (a seed site, or the media host for media)."""
    kind: str
    """page, robots, sitemap, media, or robots-hop."""
    keys: tuple[str, ...] = ()
    """Every limit key the request was booked on."""
    cost: float = 0.0
    wait: float = 0.0
    """Seconds from booking to the slot's start."""
    late: float = 0.0
    """Seconds the start came after the slot's start (within its slack)."""
    attempt: int = 0
    """Earlier attempts of the same URL in this run."""
    redirects: int = 0
    """Redirect hops that led here."""
    origin: str | None = None
    lane: str = ""
    """The scheduling lane (frontier lane for pages, the media key for media, the browser's
    request type for a render's requests)."""
    render_page: str | None = None
    """A render's request: the page whose render made it."""
    render_decision: str | None = None
    """... and why that page was rendered (``render.decision``)."""
    sent: Callable[[float], None] | None = field(default=None, compare=False, repr=False)
    """Told the wall time the request's headers went out (``Launch.sent``: the scheduler
    spaces the next start on the same shared keys from it)."""


@dataclass(frozen=True, slots=True)
class RequestEvent:
    context: RequestContext
    url: str
    at: float
    """When the request started (wall clock)."""
    result: FetchResult | None
    refusal: str | None
    """The guard's reason when it refused the host (then no request was sent)."""


class Observer(Protocol):
    def request(self, event: RequestEvent) -> None: ...


class NoObserver:
    def request(self, event: RequestEvent) -> None:
        """Nobody is listening."""
