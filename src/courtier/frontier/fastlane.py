"""The fastlane from outside a crawl: URLs due now, ahead of everything, and an action in the
store's log that running workers read within a second (``pipeline.lanes.controls``), so
each URL's site leases it at once (the feeder's priority path). The command line
(``courtier recrawl``), the Python API (``courtier.api.recrawl``) and the crawl's own HTTP
endpoint (``[control] http_port``) all go through ``recrawl``: it jumps the queue, never
politeness (the request is booked like any other)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from courtier.frontier.base import FrontierStore, NewUrl
from courtier.frontier.controls import ControlAction
from courtier.url import Url


def recrawl(
    store: FrontierStore, urls: Sequence[Url], *, command: str, actor: str, now: float | None = None
) -> int:
    """Make ``urls`` due now in the fastlane (unknown ones are inserted at depth 0) and log a
    ``recrawl`` action per site; how many were scheduled (one being fetched is left alone).
    The caller has checked that every URL's site is in the seed."""
    at = time.time() if now is None else now
    scheduled = store.recrawl([NewUrl(u.canonical, u.fetch_url, u.site, 0) for u in urls], at)
    for site in sorted({u.site for u in urls}):
        count = sum(u.site == site for u in urls)
        store.record_control(ControlAction("recrawl", site, {"urls": count}, command, actor, at))
    return scheduled
