"""News sites of the simulated web: a home page and a feed that gain a listing every few seconds.

Rules:
- A news site (`SiteKind.NEWS`, `n_news`) publishes listing N at `published(params, N)`
  seconds after the server started: `NEWS_AT_START` listings are there from the start, then
  one more every `news_every` seconds. Nothing is ever unpublished.
- The home page `/` lists the newest `NEWS_ON_HOME` published listings, newest first, and
  links the feed and the about page: it changes with every listing. `/feed.xml` (RSS 2.0,
  linked from the home page) holds the same listings with their publication dates.
- A listing `/news/N` that is published never changes; one not yet published is a 404, as
  is any other path. `/about` never changes.
- Answers are made per request from the time since the server started (never cached), so
  the server's log says when each listing appeared and when a crawler first asked for it.
"""

from __future__ import annotations

import math
from email.utils import formatdate
from html import escape

from courtier.simweb.catalogue import HTML, TEXT, Page
from courtier.simweb.world import Site, WorldParams

NEWS_AT_START = 5
NEWS_ON_HOME = 20
RSS = "application/rss+xml"


def published(params: WorldParams, n: int) -> float:
    """Seconds after the server's start at which listing `n` (1-based) appears."""
    return max(0.0, (n - NEWS_AT_START) * params.news_every)


def newest(params: WorldParams, elapsed: float) -> int:
    """The newest listing published `elapsed` seconds after the server's start."""
    return NEWS_AT_START + max(0, math.floor(max(0.0, elapsed) / params.news_every))


def render(params: WorldParams, site: Site, path: str, elapsed: float, started: float) -> Page:
    """The answer to `path` of news site `site`, `elapsed` seconds after a start at
    `started` (Unix time)."""
    last = newest(params, elapsed)
    if path == "/":
        return _home(site, last)
    if path == "/feed.xml":
        return _feed(params, site, last, started)
    if path == "/about":
        body = _html(f"About {site.host}", "<p>A news site that never sleeps.</p>", [("/", "Home")])
        return Page(200, body, HTML)
    if path.startswith("/news/"):
        number = path.removeprefix("/news/")
        if number.isdigit() and 1 <= int(number) <= last:
            n = int(number)
            text = f"<p>Listing {n} of {escape(site.host)}: details, price, pictures.</p>"
            return Page(200, _html(f"Listing {n}", text, [("/", "Home")]), HTML)
    return Page(404, b"Not found\n", TEXT)


def _home(site: Site, last: int) -> Page:
    shown = range(last, max(0, last - NEWS_ON_HOME), -1)
    links = [(f"/news/{n}", f"Listing {n}") for n in shown]
    links += [("/about", "About us"), ("/feed.xml", "Feed")]
    head = '<link rel="alternate" type="application/rss+xml" title="News" href="/feed.xml">'
    return Page(200, _html(f"{site.host}: the latest", "", links, head), HTML)


def _feed(params: WorldParams, site: Site, last: int, started: float) -> Page:
    # Relative links, resolved against the feed's own URL (the simulated web's port varies).
    items = "".join(
        f"<item><title>Listing {n}</title><link>/news/{n}</link>"
        f'<guid isPermaLink="false">{escape(site.host)}-{n}</guid>'
        f"<pubDate>{formatdate(started + published(params, n), usegmt=True)}</pubDate></item>"
        for n in range(last, max(0, last - NEWS_ON_HOME), -1)
    )
    body = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
        f"<title>{escape(site.host)}</title><link>/</link>"
        f"<description>The latest listings</description>{items}</channel></rss>\n"
    )
    return Page(200, body.encode(), RSS)


def _html(title: str, text: str, links: list[tuple[str, str]], head: str = "") -> bytes:
    items = "".join(f'<li><a href="{escape(h)}">{escape(t)}</a></li>' for h, t in links)
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title>{head}</head><body><h1>{escape(title)}</h1>{text}<ul>{items}</ul>"
        "</body></html>\n"
    ).encode()
