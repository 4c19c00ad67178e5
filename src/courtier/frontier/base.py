"""The frontier store interface: what every backend (SQLite, PostgreSQL) promises.

Rules every backend keeps:
- **Batches.** Every method that writes runs in exactly one transaction, whatever the number
  of rows; the engine collects work and hands it over in batches, never one URL at a time.
- **One row per canonical URL.** Writing a URL that is already known changes nothing (apart
  from the lane upgrade below), so the store is the last line of deduplication; the bounded
  cache in ``courtier.frontier.dedup`` only saves the writes.
- **Status, lane, next due time.** A URL is *due* when its ``next_due`` has passed and it is
  not leased. A new URL is due at once. A fetched URL falls due again after its refresh
  interval (``courtier.frontier.refresh``: the fingerprint of the content decides whether the
  interval grows or shrinks). A URL refused (robots.txt) or failed before any successful fetch
  never falls due again; one that fails after a success keeps its schedule.
- **Lanes serve in order.** ``FASTLANE`` (an operator's one-off recrawl) before ``FRESHLANE``
  (configured fast sources and the links they reveal) before ``REFRESH`` before
  ``DISCOVERY``; within a lane, the earliest due first, then the oldest row. After a fetch a
  URL goes back to ``FRESHLANE`` if it is a configured fast source, else to ``REFRESH``: a
  fastlane request is one-off.
- **Priority.** A new URL of priority ``p`` (``NewUrl.priority``, 0 to ``MAX_PRIORITY``: a
  parse hook's) is due ``p`` days before it was written (``lead_of``): within its lane it goes
  ahead of every URL of a lower priority written less than the difference in days before it,
  and behind older ones (nothing waits for ever). Only a new row takes it; a known URL
  keeps its place.
- **Leases.** Leasing marks URLs leased and takes them out of the due set in the same
  transaction, so nothing is handed out twice. ``release_leases`` puts leased URLs back (due
  at once): that is how a stopped crawl resumes and how a dead worker's URLs return.
- **Validators.** A fetched URL keeps what a conditional refresh needs: the ``ETag`` and
  ``Last-Modified`` of its last 2xx answer and that answer's WARC payload digest (a 2xx
  replaces all three, a 304 keeps them, refreshing whichever validator the 304 repeats,
  anything else leaves them). They come back with the URL when it is leased. A 304 is an
  unchanged fetch: the refresh interval grows as for an unchanged fingerprint.
- **Sitemap lastmod.** ``refresh_lastmod`` makes a fetched URL due now when a sitemap says
  it changed after that fetch.
- **Host links.** ``host_links`` aggregates links between hosts (horizon and seed alike),
  which is the graph PageRank ranks.
- **Clock floors.** Per limit key, the wall-clock time before which nothing may start on it,
  saved when a crawl stops and loaded when the next starts, so a quick restart never lets a
  site or an origin start early (or inside a ``Retry-After`` window). A saved floor is only
  ever raised, and floors in the past are forgotten.
- **Origins.** Inferred origins (site -> origin, confidence, evidence, when checked, when due
  for a re-check) are saved through the store, in tables ``origin_sites`` and
  ``origin_changes`` beside the frontier's; every change of a site's origin is logged (a first
  sighting is a change from None). The SQLite store shares these tables, and their SQL, with
  ``courtier.origins.store.OriginStore``, so ``courtier origins`` reads what a crawl saved.

Times are seconds on the caller's clock (the engine passes ``time.time()``); no backend reads
a clock itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any, Final, Protocol

from courtier.frontier.controls import ControlAction, OriginControl, SiteControl
from courtier.frontier.fresh import FreshSource
from courtier.frontier.observations import Observation
from courtier.frontier.refresh import Importance, RefreshPolicy, RefreshState, after_fetch
from courtier.origins.cluster import Assignment, OriginChange
from courtier.politeness.limiter.base import Fence

DEFAULT_REFRESH_POLICY: Final = RefreshPolicy()


class FrontierError(RuntimeError):
    """The store cannot do what was asked (bad file, lost server, malformed argument)."""


class FrontierUnavailable(FrontierError):
    """The store's server cannot be reached now (a restart, a failover, a network blip):
    what was asked was not done, or its transaction rolled back; the same call may succeed
    once the server is back (``FrontierIO.call`` waits for it)."""


class UrlStatus(IntEnum):
    QUEUED = 0  # known, never fetched
    LEASED = 1  # handed to a fetcher, outcome pending
    DONE = 2  # last fetch answered (any HTTP status)
    REFUSED = 3  # not fetched: robots.txt or policy said no
    FAILED = 4  # last fetch failed for good (after the engine's retries)


class SiteState:
    SEED = "seed"
    HORIZON = "horizon"
    REQUESTED = "requested"
    SUSPENDED = "suspended"
    OPTED_OUT = "opted-out"
    """The site's owner asked not to be crawled: nothing changes it back (``controls``)."""


class UrlLane(IntEnum):
    """Scheduling lanes; a lower value is served first."""

    FASTLANE = 0
    FRESHLANE = 1
    REFRESH = 2
    DISCOVERY = 3


MAX_PRIORITY: Final = 100
"""The highest priority a new URL may have (``NewUrl.priority``)."""
PRIORITY_STEP: Final = 86_400.0
"""Seconds a unit of priority moves a new URL's due time ahead: a day."""


def lead_of(priority: int) -> float:
    """How many seconds before it is written a new URL of ``priority`` falls due:
    ``priority`` days (clamped to 0..``MAX_PRIORITY``), so the due query (earliest first
    within a lane) serves it ahead of the URLs of lower priorities written since."""
    return min(max(priority, 0), MAX_PRIORITY) * PRIORITY_STEP


@dataclass(frozen=True, slots=True)
class NewUrl:
    canonical: str
    fetch_url: str
    site: str
    depth: int
    redirects: int = 0
    lane: UrlLane = UrlLane.DISCOVERY
    priority: int = 0
    """0 (found in the crawl's own order) to ``MAX_PRIORITY``: see ``lead_of``."""


@dataclass(frozen=True, slots=True)
class LeasedUrl:
    id: int
    fetch_url: str
    site: str
    depth: int
    redirects: int
    lane: UrlLane = UrlLane.DISCOVERY
    etag: str | None = None
    """The ETag of the URL's last 2xx answer (sent back as If-None-Match)."""
    last_modified: str | None = None
    """Its Last-Modified, exactly as sent (back as If-Modified-Since)."""
    digest: str | None = None
    """The WARC payload digest of the last 2xx answer kept (an identical one is a revisit)."""
    fetched_at: float | None = None
    """When the URL was last fetched (None: never)."""

    @property
    def conditional(self) -> bool:
        """Will the request be conditional (a validator to send back)?"""
        return self.etag is not None or self.last_modified is not None


@dataclass(frozen=True, slots=True)
class DueUrl:
    id: int
    canonical: str
    fetch_url: str
    site: str
    depth: int
    redirects: int
    lane: UrlLane
    next_due: float
    etag: str | None = None
    last_modified: str | None = None
    digest: str | None = None
    fetched_at: float | None = None

    def leased(self) -> LeasedUrl:
        return LeasedUrl(
            self.id,
            self.fetch_url,
            self.site,
            self.depth,
            self.redirects,
            self.lane,
            self.etag,
            self.last_modified,
            self.digest,
            self.fetched_at,
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one leased URL ended. ``fingerprint`` is the content fingerprint of a successful
    fetch (``courtier.frontier.fingerprint``); None when there is no content to compare.
    ``etag``, ``last_modified`` and ``digest`` are the answer's validators and kept payload's
    digest; ``not_modified``: the answer was a 304 to a conditional request."""

    url_id: int
    status: UrlStatus
    http_status: int | None
    fetched_at: float
    fingerprint: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    digest: str | None = None
    not_modified: bool = False


@dataclass(frozen=True, slots=True)
class HorizonLink:
    canonical: str
    site: str
    from_site: str


@dataclass(frozen=True, slots=True)
class HostEdge:
    """``links`` links seen from pages of host ``src`` to pages of host ``dst``."""

    src: str
    dst: str
    links: int = 1


@dataclass(frozen=True, slots=True)
class StoredRobots:
    """One host's robots.txt answer as the crawl read it: enough to rebuild its rules."""

    site: str
    http_status: int | None
    """None: no answer at all (unreachable)."""
    body: bytes
    """The first ``robots.max_bytes`` of the body."""
    fetched_at: float
    expires_at: float
    """When it must be asked again (wall clock)."""


@dataclass(frozen=True, slots=True)
class Ingested:
    """What one ingest wrote: rows really inserted and the sites that received them."""

    offered: int
    inserted: int
    sites: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PageSchedule:
    """Everything the store keeps for scheduling one URL (for inspection and tests)."""

    id: int
    canonical: str
    site: str
    depth: int
    status: UrlStatus
    lane: UrlLane
    next_due: float | None
    refresh_interval: float | None
    fingerprint: str | None
    unchanged_fetches: int
    importance: Importance
    freshlane: bool
    fetched_at: float | None
    http_status: int | None
    etag: str | None = None
    last_modified: str | None = None
    digest: str | None = None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> PageSchedule:
        """From a row of the stores' schedule columns, in their order (id, canonical, site,
        depth, status, lane, next_due, refresh_interval, fingerprint, unchanged_fetches,
        importance, freshlane, fetched_at, http_status, etag, last_modified, digest)."""
        return cls(
            id=int(row[0]),
            canonical=row[1],
            site=row[2],
            depth=int(row[3]),
            status=UrlStatus(row[4]),
            lane=UrlLane(row[5]),
            next_due=row[6],
            refresh_interval=row[7],
            fingerprint=row[8],
            unchanged_fetches=int(row[9]),
            importance=Importance(row[10]),
            freshlane=bool(row[11]),
            fetched_at=row[12],
            http_status=row[13],
            etag=row[14],
            last_modified=row[15],
            digest=row[16],
        )


# -- the refresh rule every backend applies to an outcome -------------------------------


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    """The stored refresh state of a URL before an outcome is applied."""

    fingerprint: str | None
    refresh_interval: float | None
    unchanged_fetches: int
    importance: Importance
    freshlane: bool
    etag: str | None = None
    last_modified: str | None = None
    digest: str | None = None


@dataclass(frozen=True, slots=True)
class ScheduleUpdate:
    status: UrlStatus
    lane: UrlLane
    fingerprint: str | None
    refresh_interval: float | None
    unchanged_fetches: int
    next_due: float | None
    etag: str | None = None
    last_modified: str | None = None
    digest: str | None = None

    def written(self, outcome: Outcome) -> tuple[Any, ...]:
        """The values a store writes for ``outcome`` with this update, in the order of its
        outcome columns: url id, status, HTTP status, fetched at, lane, fingerprint, refresh
        interval, unchanged fetches, next due, ETag, Last-Modified, digest."""
        return (
            outcome.url_id,
            int(self.status),
            outcome.http_status,
            outcome.fetched_at,
            int(self.lane),
            self.fingerprint,
            self.refresh_interval,
            self.unchanged_fetches,
            self.next_due,
            self.etag,
            self.last_modified,
            self.digest,
        )

    def stored(self, importance: Importance, freshlane: bool) -> ScheduleRow:
        """The row this update leaves (a second outcome in one batch builds on it)."""
        return ScheduleRow(
            self.fingerprint,
            self.refresh_interval,
            self.unchanged_fetches,
            importance,
            freshlane,
            self.etag,
            self.last_modified,
            self.digest,
        )


def schedule_after(row: ScheduleRow, outcome: Outcome, policy: RefreshPolicy) -> ScheduleUpdate:
    """The URL's state after ``outcome`` (pure; the module rules say why): its schedule
    (``_schedule``), then its validators (a 2xx replaces them, a 304 refreshes them)."""
    if outcome.not_modified and outcome.status is UrlStatus.DONE:
        # Unchanged: the stored fingerprint held (a fast source's fingerprint too).
        outcome = replace(outcome, fingerprint=row.fingerprint)
    update = _schedule(row, outcome, policy)
    etag, modified, digest = row.etag, row.last_modified, row.digest
    ok = outcome.http_status is not None and 200 <= outcome.http_status < 300
    if outcome.status is UrlStatus.DONE and ok and not outcome.not_modified:
        etag, modified, digest = outcome.etag, outcome.last_modified, outcome.digest
    elif outcome.status is UrlStatus.DONE and outcome.not_modified:
        etag, modified = outcome.etag or etag, outcome.last_modified or modified
    return replace(update, etag=etag, last_modified=modified, digest=digest)


def _schedule(row: ScheduleRow, outcome: Outcome, policy: RefreshPolicy) -> ScheduleUpdate:
    """- DONE with a fingerprint: the refresh policy grows or shrinks the interval;
    - DONE without one (a redirect, an error page, a body we do not fingerprint): the interval
      holds (the class's initial interval on a first fetch);
    - a fast source (configured or found) keeps the interval it has whatever the content did
      (a found one's is set by what the crawl learns, ``frontier.fresh``);
    - FAILED: the schedule holds when the URL was fetched before, else it is never due;
    - REFUSED: never due.
    """
    lane = refresh_lane(row.freshlane, row.importance)
    keep = ScheduleUpdate(
        outcome.status,
        lane,
        row.fingerprint,
        row.refresh_interval,
        row.unchanged_fetches,
        None,
    )
    if outcome.status is UrlStatus.QUEUED or outcome.status is UrlStatus.LEASED:
        raise FrontierError(f"outcome of URL {outcome.url_id} cannot be {outcome.status.name}")
    if outcome.status is UrlStatus.REFUSED:
        return keep
    if outcome.status is UrlStatus.FAILED:
        if row.refresh_interval is None:
            return keep
        return _with_due(keep, outcome.fetched_at + row.refresh_interval)
    if not math.isfinite(outcome.fetched_at):
        raise FrontierError(f"outcome of URL {outcome.url_id} has no finite fetch time")
    bounds = policy.bounds(row.importance)
    if outcome.fingerprint is None:
        interval = row.refresh_interval if row.refresh_interval is not None else bounds.initial
        if row.freshlane:
            return _with_due(keep, outcome.fetched_at + interval, interval)
        interval = bounds.clamp(interval)
        return _with_due(keep, outcome.fetched_at + interval, interval)
    if row.freshlane and row.refresh_interval is not None:
        unchanged = row.unchanged_fetches + 1 if outcome.fingerprint == row.fingerprint else 0
        return ScheduleUpdate(
            UrlStatus.DONE,
            lane,
            outcome.fingerprint,
            row.refresh_interval,
            unchanged,
            outcome.fetched_at + row.refresh_interval,
        )
    previous = None
    if row.fingerprint is not None and row.refresh_interval is not None:
        previous = RefreshState(row.fingerprint, row.refresh_interval, 0.0, row.unchanged_fetches)
    state = after_fetch(previous, outcome.fingerprint, outcome.fetched_at, row.importance, policy)
    return ScheduleUpdate(
        UrlStatus.DONE,
        lane,
        state.fingerprint,
        state.interval,
        state.unchanged_fetches,
        state.next_due,
    )


def refresh_lane(freshlane: bool, importance: Importance) -> UrlLane:
    """The lane a fetched URL falls due in: a fast source's and a page users retrieve most
    or an operator flagged critical go first (the freshlane), before ordinary refresh."""
    if freshlane or importance is not Importance.ORDINARY:
        return UrlLane.FRESHLANE
    return UrlLane.REFRESH


CLASS_LANE: Final = (
    # A fetched URL waiting for its refresh moves to the lane of its new class (a fast
    # source stays in the freshlane); a queued, leased or fastlane URL keeps its lane.
    "lane = CASE WHEN status IN (2, 4) AND lane IN (1, 2) "
    "THEN (CASE WHEN freshlane THEN 1 ELSE ? END) ELSE lane END"
)


def _with_due(
    update: ScheduleUpdate, next_due: float, interval: float | None = None
) -> ScheduleUpdate:
    return ScheduleUpdate(
        update.status,
        update.lane,
        update.fingerprint,
        update.refresh_interval if interval is None else interval,
        update.unchanged_fetches,
        next_due,
    )


def check_limit(limit: int) -> None:
    if limit < 0:
        raise FrontierError(f"limit must be >= 0, got {limit}")


def future_floors(floors: Mapping[str, float], now: float) -> list[tuple[str, float]]:
    """The ``(key, floor)`` pairs of ``floors`` later than ``now``, in key order; a
    ``FrontierError`` for an empty or non-string key or a time that is not a finite number."""
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
        raise FrontierError(f"now must be a finite time, got {now!r}")
    rows: list[tuple[str, float]] = []
    for key, floor in floors.items():
        if not isinstance(key, str) or not key:
            raise FrontierError(f"a limit key must be a non-empty string, got {key!r}")
        if (
            isinstance(floor, bool)
            or not isinstance(floor, int | float)
            or not math.isfinite(floor)
        ):
            raise FrontierError(f"the floor of {key!r} must be a finite time, got {floor!r}")
        if floor > now:
            rows.append((key, float(floor)))
    rows.sort()
    return rows


def upgrades_by_canonical(urls: Iterable[NewUrl]) -> dict[str, NewUrl]:
    """Per canonical URL, the offer with the most urgent lane (first one on a tie)."""
    best: dict[str, NewUrl] = {}
    for url in urls:
        known = best.get(url.canonical)
        if known is None or url.lane < known.lane:
            best[url.canonical] = url
    return best


# -- the interface -----------------------------------------------------------------------


class FrontierStore(Protocol):
    """One frontier store; every method is synchronous and runs on the caller's thread (the
    engine calls them from a single store thread)."""

    def close(self) -> None:
        """Release the connection(s). Nothing written before is lost."""

    # sites ----------------------------------------------------------------------------

    def add_sites(self, sites: Iterable[str], state: str, now: float) -> None:
        """Add ``sites`` in ``state``. A known site keeps its state, except that a horizon site
        moves to any other state given (promotion, a request by name); a seed never falls back
        to the horizon."""

    def sites_in_state(self, *states: str) -> list[str]:
        """The sites currently in any of ``states`` (no particular order)."""

    def set_site_state(self, site: str, state: str) -> None:
        """Force ``site`` into ``state`` (suspend, resume); unknown sites are ignored."""

    def site_states(self) -> dict[str, str]:
        """Every known site and its state (the input of a ranking cycle)."""

    # writing --------------------------------------------------------------------------

    def record_control(
        self,
        action: ControlAction,
        control: SiteControl | OriginControl | None = None,
        states: Mapping[str, str] | None = None,
    ) -> int:
        """Log ``action`` and, in the same transaction, write a site's (or an origin's)
        controls and set sites' states (the operator's word: any state to any state). Its
        id."""
        ...

    def control_actions(self, after: int = 0, limit: int = 1000) -> list[ControlAction]:
        """Actions logged after id ``after``, oldest first."""
        ...

    def last_actions(self, limit: int = 10, target: str = "") -> list[ControlAction]:
        """The latest actions (on ``target`` only, when given), newest first."""
        ...

    def site_controls(self) -> dict[str, SiteControl]:
        """Every site's controls."""
        ...

    def origin_controls(self) -> dict[str, OriginControl]:
        """Every origin's controls (``origins limit``)."""
        ...

    def save_observations(self, observations: Sequence[Observation], now: float) -> None:
        """Origin evidence this worker's fetches showed, for the fleet (``observations``)."""
        ...

    def observations_after(self, after: int, worker: str, limit: int = 1000) -> list[Observation]:
        """Evidence other workers than ``worker`` wrote after id ``after``, oldest first."""
        ...

    def fresh_sources(self) -> list[FreshSource]:
        """Every page the crawl watches or watched for news (``fresh``), by site and URL."""
        ...

    def save_fresh(self, sources: Sequence[FreshSource], scheduled: Sequence[FreshSource]) -> None:
        """Keep what the crawl learned of ``sources`` and schedule the rows of ``scheduled``
        by it (in the freshlane at its interval, or back to ordinary refresh), in one
        transaction."""
        ...

    def set_hand_sources(self, canonicals: Sequence[str], interval: float, now: float) -> None:
        """The hand list (``[frontier] freshlane``, already set by ``set_freshlane``) as the
        watched pages of state ``hand``, in place of the last run's list."""
        ...

    def write_batch(
        self,
        new_urls: Sequence[NewUrl],
        outcomes: Sequence[Outcome],
        horizon: Sequence[HorizonLink],
        now: float,
        *,
        host_edges: Sequence[HostEdge] = (),
    ) -> list[str]:
        """Apply one batch in one transaction: insert new URLs (known ones are left alone,
        except that a queued URL offered in a more urgent lane moves to it), apply outcomes as
        ``record_fetch`` does, record horizon URLs (their sites become horizon sites, each
        horizon link adds one to the ``from_site -> site`` host link) and add ``host_edges``
        to the host graph. Returns the sorted sites that received at least one new URL."""

    def ingest(self, new_urls: Sequence[NewUrl], now: float) -> Ingested:
        """Insert discovered URLs in one transaction (as ``write_batch`` does) and say how many
        rows were really inserted: the denominator of write amplification."""

    def record_fetch(self, outcomes: Sequence[Outcome]) -> None:
        """Apply fetch outcomes in one transaction: status, HTTP status, fetch time, and the
        next due time, interval and fingerprint by ``schedule_after`` with the store's refresh
        policy. Outcomes for unknown ids are ignored."""

    def recrawl(self, urls: Sequence[NewUrl], now: float) -> int:
        """Fastlane: make ``urls`` due at ``now`` in the fastlane, inserting unknown ones. A URL
        already leased is being fetched and is left alone. Returns the URLs scheduled."""

    def set_freshlane(self, urls: Sequence[NewUrl], interval: float, now: float) -> int:
        """Configure fast sources: ``urls`` (inserted if unknown) are refetched every
        ``interval`` seconds in the freshlane, starting at ``now``. Returns the URLs set."""

    def set_importance(
        self, canonicals: Iterable[str], importance: Importance, now: float
    ) -> list[str]:
        """Set the refresh class of known URLs (critical flags, the popular set of a feed). A
        stricter class pulls the schedule under its ceiling at once (``refresh.reclassify``,
        never due before ``now``). Returns the canonicals that are not in the store."""

    def evict_deeper(self, site: str, max_depth: int) -> int:
        """Surface mode: delete ``site``'s queued URLs deeper than ``max_depth``; the count."""

    # crawling -------------------------------------------------------------------------

    def due(self, limit_per_host: int, hosts: Sequence[str], now: float) -> dict[str, list[DueUrl]]:
        """Read-only: for each host of ``hosts`` with work, up to ``limit_per_host`` URLs due at
        ``now``, lane first, then earliest due, then oldest. Hosts with nothing due are absent."""

    def lease_due(
        self,
        limit_per_host: int,
        hosts: Sequence[str],
        now: float,
        fences: Mapping[str, Fence] | None = None,
    ) -> dict[str, list[LeasedUrl]]:
        """``due`` and mark the result leased in the same transaction (concurrent workers on
        a shared store never receive the same URL). With ``fences`` (a scale-out crawl:
        site -> its shard's lease), only sites in it whose lease still holds are served,
        checked in the same transaction; a store of one machine has no shard leases and
        ignores them."""

    def lease(
        self, site: str, limit: int, now: float | None = None, fence: Fence | None = None
    ) -> list[LeasedUrl]:
        """Queued (never fetched) URLs of ``site``, shallowest first, marked leased (at
        ``now`` when given; a lease of unknown age counts as old for ``release_leases``);
        nothing if ``fence`` is given and no longer holds (as in ``lease_due``)."""

    def release_leases(
        self,
        leased_before: float | None = None,
        *,
        sites: Sequence[str] | None = None,
        ids: Sequence[int] | None = None,
        fence: Fence | None = None,
    ) -> int:
        """Return leased URLs (all, or those leased before ``leased_before``; only of
        ``sites``, only ``ids``, when given) to the due set, due at once; the count
        released. A worker taking over a shard releases its sites' leases; one handing a
        shard back releases what it had leased and not started, under its ``fence``: nothing
        if the shard was taken from it meanwhile (the taker released them, and may have
        leased them again since). A store of one machine ignores the fence."""

    # reading --------------------------------------------------------------------------

    def sites_with_queued(self) -> list[str]:
        """Sites that have at least one queued (never fetched) URL."""

    def site_sizes(self, sites: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
        """Per site with URLs (of ``sites`` only, when given): (URLs known in any state,
        queued discovery URLs). Without ``sites`` it scans the table: for start-up, not for
        the crawl loop (a worker taking a shard asks for its sites)."""

    def counts(self) -> dict[str, int]:
        """URL counts per status name, plus ``horizon_sites`` and ``horizon_urls``."""

    def horizon_sites(self, limit: int = 20) -> list[tuple[str, int]]:
        """Link destinations with the most inbound host links, most first."""

    def host_links(self) -> list[HostEdge]:
        """The whole host graph (seed and horizon hosts), for ranking."""

    def schedule_of(self, canonical: str) -> PageSchedule | None:
        """The scheduling state of one URL, or None if unknown."""

    # budgets --------------------------------------------------------------------------

    def spent(self) -> dict[str, int]:
        """What every run on the store spent of the crawl's budgets: ``requests``, ``pages``,
        ``bytes`` (``courtier.frontier.spend``), 0 for what was never saved."""
        ...

    def add_spent(self, amounts: Mapping[str, int]) -> dict[str, int]:
        """Add ``amounts`` (by measure) to the spend, in one transaction; the totals after."""
        ...

    def fetched_per_site(self, sites: Sequence[str] | None = None) -> dict[str, int]:
        """Per site with any (of ``sites`` only, when given): its URLs fetched at least once
        (a fetch time, and not refused). Without ``sites`` it scans the table."""
        ...

    # clock floors ---------------------------------------------------------------------

    def save_clock_floors(self, floors: Mapping[str, float], now: float) -> None:
        """In one transaction: forget saved floors at or before ``now``, then save each floor
        of ``floors`` later than ``now`` (per limit key, the wall-clock time before which
        nothing may start on it), raising a saved one, never lowering it."""

    def load_clock_floors(self, now: float) -> dict[str, float]:
        """The saved floors later than ``now``."""

    # robots.txt -----------------------------------------------------------------------

    def save_robots(self, answers: Sequence[StoredRobots]) -> None:
        """Keep each host's last robots.txt answer (replacing the one before), so a restart
        uses it until it expires instead of asking again."""

    def load_robots(
        self, now: float, sites: Sequence[str] | None = None
    ) -> dict[str, StoredRobots]:
        """The saved robots.txt answers that have not expired at ``now`` (of ``sites`` only,
        when given)."""

    # sitemaps -------------------------------------------------------------------------

    def refresh_lastmod(self, changes: Sequence[tuple[str, float]], now: float) -> int:
        """In one transaction, make each fetched URL of ``changes`` (canonical, the sitemap's
        lastmod) due at ``now`` (or earlier, if it already was) when it was last fetched
        before that lastmod; leased, refused, failed and unknown URLs are left alone. Returns
        the URLs moved."""

    # origins --------------------------------------------------------------------------

    def save_origins(
        self,
        assignments: Sequence[Assignment],
        checked_at: float,
        recheck_at: Mapping[str, float],
    ) -> list[OriginChange]:
        """In one transaction, upsert each site's origin, confidence, evidence, ``checked_at``
        and ``recheck_at`` (the site's entry, else ``checked_at``), and log in
        ``origin_changes`` every assignment whose origin differs from the site's stored one (a
        site never seen before changes from None). Returns those changes, in batch order:
        exactly ``courtier.origins.store.OriginStore.save``."""

    def origins(self) -> dict[str, str]:
        """Every site with a saved origin, and that origin."""
