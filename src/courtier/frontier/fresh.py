"""Fast sources found by the crawl itself: which pages enter the freshlane, how often they are
looked at, and when they leave it.

Rules (pure; the crawl feeds them its visits, ``pipeline.feed.fresh_sources``):
- **Candidates** are the pages whose change brings news: a site's home page, a feed, a
  sitemap whose newest ``<lastmod>`` is recent, a page flagged critical or popular. A
  candidate is *probing*: looked at again after ``probe`` seconds.
- A visit is **productive** when the page's boilerplate-stripped fingerprint changed since
  the last visit *and* the page yielded links the crawl had not seen. A productive visit
  halves the interval, any other multiplies it by ``grow``: the interval settles where about
  a third of the visits find news, a little under the page's own rate of change. It never
  goes under ``MIN_INTERVAL`` (60 s) nor over ``ceiling`` (the page's refresh floor: a page
  looked at less often than that is no fast source).
- A probing page with ``enter`` productive visits, at least half of its visits, is a
  **source**. A probing page with ``quiet`` unproductive visits in a row leaves (state
  *quiet*); so does a source whose interval has grown to the ceiling, or that had ``quiet``
  times as many unproductive visits in a row: it stopped changing. A quiet page becomes a
  candidate again when a later visit is productive.
- A page listed by hand (``[frontier] freshlane``) keeps its configured interval and is never
  judged: the hand list wins.
- The first visit of a page in a run only records its fingerprint: which links are new is
  known per run, so no judgement rests on a visit without a predecessor in the same run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Final

from courtier.frontier.refresh import DAY

MIN_INTERVAL: Final = 60.0
"""No fast source is looked at more often than once a minute."""


class FreshState(StrEnum):
    HAND = "hand"  # listed in [frontier] freshlane: a fixed interval, never judged
    PROBING = "probing"  # a candidate looked at again to learn how fast it moves
    SOURCE = "source"  # found moving: in the freshlane at its learned interval
    QUIET = "quiet"  # left the freshlane (or never entered): refreshed like any page


@dataclass(frozen=True, slots=True)
class FreshPolicy:
    probe: float = MIN_INTERVAL
    """Seconds after a candidate's visit before it is looked at again."""
    ceiling: float = DAY
    """The longest interval a fast source may have: the refresh floor of ordinary pages."""
    shrink: float = 0.5
    grow: float = 1.5
    enter: int = 2
    """Productive visits (at least half of the visits) that make a candidate a source."""
    quiet: int = 3
    """Unproductive visits in a row after which a candidate leaves (a source: ``quiet``
    times as many)."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.probe) and self.probe >= MIN_INTERVAL):
            raise ValueError(f"the probe interval must be at least {MIN_INTERVAL:.0f} s")
        if not (math.isfinite(self.ceiling) and self.ceiling >= self.probe):
            raise ValueError("the ceiling must be finite and at least the probe interval")
        if not (0.0 < self.shrink < 1.0 < self.grow < math.inf):
            raise ValueError("need 0 < shrink < 1 < grow")
        if self.enter < 1 or self.quiet < 1:
            raise ValueError("enter and quiet must be at least 1")

    def clamp(self, interval: float) -> float:
        return min(self.ceiling, max(MIN_INTERVAL, interval))


@dataclass(frozen=True, slots=True)
class FreshSource:
    """What the store keeps of one watched page (table ``fresh_sources``)."""

    url_id: int
    url: str
    site: str
    state: FreshState
    interval: float
    evidence: str
    """Why the page was watched: ``home page``, ``feed``, ``sitemap lastmod 40 s old``,
    ``critical``, ``configured``."""
    since: float
    """When it entered its present state."""
    last_visit: float
    visits: int = 0
    productive: int = 0
    quiet_run: int = 0
    """Unproductive visits in a row."""
    last_change: float | None = None
    new_links: int = 0
    """Links the last productive visit yielded."""
    fingerprint: str | None = None

    @property
    def watched(self) -> bool:
        """In the freshlane: looked at every ``interval`` seconds."""
        return self.state is not FreshState.QUIET

    @property
    def next_visit(self) -> float:
        return self.last_visit + self.interval


def candidate(
    url_id: int,
    url: str,
    site: str,
    evidence: str,
    at: float,
    fingerprint: str | None,
    policy: FreshPolicy,
) -> FreshSource:
    """A page first seen as a candidate at ``at``: probing, looked at again after ``probe``."""
    return FreshSource(
        url_id,
        url,
        site,
        FreshState.PROBING,
        policy.probe,
        evidence,
        at,
        at,
        fingerprint=fingerprint,
    )


def after_visit(
    source: FreshSource,
    fingerprint: str | None,
    new_links: int,
    at: float,
    policy: FreshPolicy,
) -> FreshSource:
    """``source`` after a visit at ``at`` that found ``fingerprint`` (None: a 304, unchanged)
    and ``new_links`` links not seen before (the module rules)."""
    if source.state is FreshState.HAND:
        return replace(source, last_visit=at, visits=source.visits + 1)
    changed = fingerprint is not None and fingerprint != source.fingerprint
    productive = changed and new_links > 0
    kept = fingerprint if fingerprint is not None else source.fingerprint
    visits = source.visits + 1
    if productive:
        interval = policy.clamp(source.interval * policy.shrink)
        after = replace(
            source,
            interval=interval,
            last_visit=at,
            visits=visits,
            productive=source.productive + 1,
            quiet_run=0,
            last_change=at,
            new_links=new_links,
            fingerprint=kept,
        )
        if after.state is FreshState.QUIET:
            return replace(after, state=FreshState.PROBING, since=at, visits=1, productive=1)
        if (
            after.state is FreshState.PROBING
            and after.productive >= policy.enter
            and 2 * after.productive >= after.visits
        ):
            return replace(after, state=FreshState.SOURCE, since=at)
        return after
    interval = policy.clamp(source.interval * policy.grow)
    after = replace(
        source,
        interval=interval,
        last_visit=at,
        visits=visits,
        quiet_run=source.quiet_run + 1,
        last_change=at if changed else source.last_change,
        fingerprint=kept,
    )
    if after.state is FreshState.PROBING and after.quiet_run >= policy.quiet:
        return replace(after, state=FreshState.QUIET, since=at, interval=policy.ceiling)
    if after.state is FreshState.SOURCE and (
        interval >= policy.ceiling or after.quiet_run >= policy.quiet * policy.quiet
    ):
        return replace(after, state=FreshState.QUIET, since=at, interval=policy.ceiling)
    if after.state is FreshState.QUIET:
        return replace(after, interval=policy.ceiling)
    return after


# -- the store's table (same SQL on SQLite and PostgreSQL, ``?`` placeholders) ------------

_COLUMNS: Final = (
    "url_id, url, site, state, refresh_interval, evidence, since, last_visit, visits, "
    "productive, quiet_run, last_change, new_links, fingerprint"
)
SQLITE_TABLE: Final = """CREATE TABLE IF NOT EXISTS fresh_sources (
    url_id INTEGER PRIMARY KEY, url TEXT NOT NULL, site TEXT NOT NULL, state TEXT NOT NULL,
    refresh_interval REAL NOT NULL, evidence TEXT NOT NULL, since REAL NOT NULL,
    last_visit REAL NOT NULL, visits INTEGER NOT NULL, productive INTEGER NOT NULL,
    quiet_run INTEGER NOT NULL, last_change REAL, new_links INTEGER NOT NULL,
    fingerprint TEXT)"""
POSTGRES_TABLE: Final = """CREATE TABLE IF NOT EXISTS fresh_sources (
    url_id bigint PRIMARY KEY, url text NOT NULL, site text NOT NULL, state text NOT NULL,
    refresh_interval float8 NOT NULL, evidence text NOT NULL, since float8 NOT NULL,
    last_visit float8 NOT NULL, visits integer NOT NULL, productive integer NOT NULL,
    quiet_run integer NOT NULL, last_change float8, new_links integer NOT NULL,
    fingerprint text)"""
UPSERT: Final = (
    f"INSERT INTO fresh_sources ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (url_id) DO UPDATE SET url = excluded.url, site = excluded.site, "
    "state = excluded.state, refresh_interval = excluded.refresh_interval, "
    "evidence = excluded.evidence, since = excluded.since, last_visit = excluded.last_visit, "
    "visits = excluded.visits, productive = excluded.productive, "
    "quiet_run = excluded.quiet_run, last_change = excluded.last_change, "
    "new_links = excluded.new_links, fingerprint = excluded.fingerprint"
)
SELECT: Final = f"SELECT {_COLUMNS} FROM fresh_sources ORDER BY site, url"
FORGET_HAND: Final = "DELETE FROM fresh_sources WHERE state = 'hand'"
HAND: Final = (
    f"INSERT INTO fresh_sources ({_COLUMNS}) SELECT id, fetch_url, site, 'hand', ?, "
    "'configured', ?, ?, 0, 0, 0, NULL, 0, fingerprint FROM urls WHERE canonical = ? "
    "ON CONFLICT (url_id) DO UPDATE SET state = 'hand', "
    "refresh_interval = excluded.refresh_interval, evidence = excluded.evidence, "
    "since = excluded.since"
)
SCHEDULE: Final = (
    # The page's own row: in the freshlane (served first, due at its interval) or back to
    # ordinary refresh. A leased row keeps its lane and due time: its outcome, written later,
    # builds on the interval and freshlane set here.
    "UPDATE urls SET freshlane = ?, refresh_interval = ?, "
    "lane = CASE WHEN status = 1 OR lane = 0 THEN lane ELSE ? END, "
    "next_due = CASE WHEN status = 1 THEN next_due ELSE ? END WHERE id = ?"
)


def row(source: FreshSource) -> tuple[Any, ...]:
    s = source
    return (
        s.url_id,
        s.url,
        s.site,
        s.state.value,
        s.interval,
        s.evidence,
        s.since,
        s.last_visit,
        s.visits,
        s.productive,
        s.quiet_run,
        s.last_change,
        s.new_links,
        s.fingerprint,
    )


def schedule_row(source: FreshSource) -> tuple[Any, ...]:
    """The parameters of ``SCHEDULE`` for ``source``'s page (lanes: freshlane 1, refresh 2)."""
    watched = source.watched
    return (watched, source.interval, 1 if watched else 2, source.next_visit, source.url_id)


def sources_from(rows: Iterable[Sequence[Any]]) -> list[FreshSource]:
    """Rows read back; a row that does not read (another version wrote it) is skipped."""
    found = []
    for r in rows:
        try:
            found.append(
                FreshSource(
                    int(r[0]),
                    str(r[1]),
                    str(r[2]),
                    FreshState(r[3]),
                    float(r[4]),
                    str(r[5]),
                    float(r[6]),
                    float(r[7]),
                    int(r[8]),
                    int(r[9]),
                    int(r[10]),
                    None if r[11] is None else float(r[11]),
                    int(r[12]),
                    r[13],
                )
            )
        except (ValueError, TypeError, IndexError):
            continue
    return found
