"""A render's requests to hosts outside the seed that it may fetch from: media hosts (by
their names or their DNS, ``media_places``) and the hosts ``[render] hosts`` names.

Rules:
- Such a request goes to the host's media lane, before its images (a page waits on it), and
  is booked on the lane's keys (a bucket; a CDN, its customer's misses and the page's origin
  while a miss is expected; an image service; a named host's own ``site:`` key, one request
  in flight) at the render's cost for it (``lanes.rendering``).
- The host's robots.txt comes first and is obeyed: a request it disallows is answered with
  the refusal ``robots``. Feedback (backoff, Retry-After, latency) and a cache's verdict are
  learnt as for the host's images; the answer is kept (redacted, archived: the render's
  keeper, as a site's request of the render is kept), also when the render no longer waits
  for it, and goes back to the render, which hands it to the browser. Nothing is retried or
  followed here: the browser asks again for a redirect's target.
- A host not known to be media is looked up (its DNS) for later renders; this request is
  aborted as ``third-party``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.lanes.media_lane import MediaItem, MediaLane
from courtier.pipeline.lanes.media_places import Placement
from courtier.pipeline.lanes.services import context_of
from courtier.pipeline.lanes.site import RenderFetch
from courtier.pipeline.scheduling.lanes import Launch
from courtier.url import Url

if TYPE_CHECKING:
    from courtier.pipeline.lanes.media import MediaLanes

ROBOTS = "robots"
"""The refusal a render's request robots.txt disallows is answered with."""


def ask_media(
    media: MediaLanes, url: Url, work: RenderFetch, referrer: str, placement: Placement | None
) -> bool:
    """Queue ``work`` (a render's request for ``url``, made by a page of the seed site
    ``referrer``: the customer a CDN's miss reaches) on its media lane. False: ``url`` is
    no media host's and ``placement`` (a named host's) is None. (Not while the media lanes
    stop: ``media.stopping`` is for the caller to check.)"""
    source = media.rules.media_source(url)
    places = media.places
    if source is not None:
        placement = None  # a name that says media wins
    elif placement is None and places is not None:
        placement = places.placement(url)
        if placement is None and not places.known(url.site):
            places.ask(url, referrer, image=False)
    if source is None:
        if placement is None:
            return False
        source = placement.source
    lane = media.lane_for(url, source, placement)
    lane.queue.appendleft(
        MediaItem(url, referrer, source, 0, media.origin_of(referrer), placement, work)
    )
    media.queued += 1
    media.arm(lane)
    return True


def refuse_render(work: RenderFetch | None) -> None:
    """The host's robots.txt disallows ``work`` (if it is a render's request): say so."""
    if work is not None and not work.answer.done():
        work.answer.set_result(Answer(work.url, None, refusal=ROBOTS))


async def answer_render(
    media: MediaLanes,
    lane: MediaLane,
    item: MediaItem,
    work: RenderFetch,
    launch: Launch,
    origin: str | None,
) -> None:
    """``work`` at its start: fetched, learnt from, handed back to its render."""
    context = context_of(
        item.url.site,
        "render",
        launch,
        origin=origin,
        lane=work.kind,
        render_page=work.page,
        render_decision=work.decision,
    )
    try:
        if work.answer.done():  # the render gave up on it: nothing is sent
            return
        answer = await media.fetch(work.url, work.host, context, headers=work.headers or None)
        await media.answered(lane, answer, origin=origin, media=True)
        if answer.result is not None:
            media.stats.media_requests[item.source.value] += 1
            await media.observe_cache(lane, item, context.keys, answer.result)
    finally:
        launch.answered()  # the key's place in flight: keeping the answer is our own work
    await work.deliver(answer)
