"""One request as a row: the request log's schema and the pure step from event to row.

Rules:
- Every ``RequestEvent`` is one row, whatever it was: a page, robots.txt, a sitemap, media,
  a robots.txt redirect hop, or a host the SSRF guard refused (no request was sent then:
  ``status_class`` is ``refused`` and ``refusal`` says why).
- A request is booked on all its limit keys at once (one GCRA slot over every key), so its
  booking wait and slot lateness are one pair of numbers shared by every key in ``keys``.
- ``cost_units`` is what the request was booked for (its URL's class); ``extra_units`` is
  what a page's response type cost beyond that, charged after the fact by the engine.
- Times are seconds; ``time`` is the request's start (wall clock, UTC).
- ``row_of`` is pure and runs off the event loop (on the observer's thread).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa

from courtier.net.fetch import Phases
from courtier.origins.media import cache_verdict
from courtier.pipeline.events import RequestEvent
from courtier.politeness.keys import CostModel, RequestClass, origin_key

_FIELDS: list[pa.Field[Any]] = [
    pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("run", pa.string(), nullable=False),
    pa.field("worker", pa.string(), nullable=False),
    pa.field("site", pa.string(), nullable=False),
    pa.field("origin", pa.string()),
    pa.field("lane", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("url", pa.string(), nullable=False),
    pa.field("keys", pa.list_(pa.string()), nullable=False),
    pa.field("key_types", pa.list_(pa.string()), nullable=False),
    pa.field("wait_s", pa.float64(), nullable=False),
    pa.field("late_s", pa.float64(), nullable=False),
    pa.field("cost_class", pa.string(), nullable=False),
    pa.field("cost_units", pa.float64(), nullable=False),
    pa.field("extra_units", pa.float64(), nullable=False),
    pa.field("origin_budget", pa.float64()),
    pa.field("status", pa.int32()),
    pa.field("status_class", pa.string(), nullable=False),
    pa.field("error", pa.string()),
    pa.field("refusal", pa.string()),
    pa.field("dns_s", pa.float64()),
    pa.field("connect_s", pa.float64()),
    pa.field("tls_s", pa.float64()),
    pa.field("first_byte_s", pa.float64()),
    pa.field("total_s", pa.float64()),
    pa.field("reused", pa.bool_(), nullable=False),
    pa.field("bytes", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("content_type", pa.string()),
    pa.field("cache", pa.string()),
    pa.field("bucket", pa.string()),
    pa.field("attempt", pa.int32(), nullable=False),
    pa.field("redirects", pa.int32(), nullable=False),
    pa.field("location", pa.string()),
    pa.field("retry_after", pa.string()),
    pa.field("render_page", pa.string()),
    pa.field("render_decision", pa.string()),
]
SCHEMA: Final = pa.schema(_FIELDS)
"""The request log's columns, in file order (docs/observe.md describes each)."""

ROW_COLUMNS: Final = tuple(name for name in SCHEMA.names if name not in ("run", "worker"))
"""Columns a ``RequestRow`` carries (``run`` and ``worker`` are the same for a whole file)."""

ROBOTS_KINDS: Final = frozenset({"robots", "robots-hop"})
PAGE_KINDS: Final = frozenset({"page", "sitemap"})
THROTTLES: Final = frozenset({429, 503})


@dataclass(slots=True)
class RequestRow:
    """The row of one request (field names are the column names)."""

    time: float
    site: str
    origin: str | None
    lane: str
    kind: str
    url: str
    keys: list[str]
    key_types: list[str]
    wait_s: float
    late_s: float
    cost_class: str
    cost_units: float
    extra_units: float
    origin_budget: float | None
    status: int | None
    status_class: str
    error: str | None
    refusal: str | None
    dns_s: float | None
    connect_s: float | None
    tls_s: float | None
    first_byte_s: float | None
    total_s: float | None
    reused: bool
    bytes: int
    truncated: bool
    content_type: str | None
    cache: str | None
    bucket: str | None
    attempt: int
    redirects: int
    location: str | None
    retry_after: str | None
    render_page: str | None = None
    """A render's request (kind ``render``): the page whose render made it ..."""
    render_decision: str | None = None
    """... and why that page was rendered."""

    @property
    def sent(self) -> bool:
        """Did the request reach the network (the guard did not refuse its host)?"""
        return self.refusal is None

    @property
    def latency(self) -> float | None:
        """The latency the anomaly detector judges: time to first byte, else the total."""
        return self.first_byte_s if self.first_byte_s is not None else self.total_s

    @property
    def units(self) -> float:
        return self.cost_units + self.extra_units

    @property
    def error_kind(self) -> str:
        """The failure's class (``ClientConnectorError``), for low-cardinality counting."""
        return (self.error or "").split(":", 1)[0][:60] or "none"


def status_class(status: int | None, refusal: str | None) -> str:
    if refusal is not None:
        return "refused"
    if status is None:
        return "error"
    return f"{status // 100}xx"


def target_of(url: str) -> str:
    """Path and query of an absolute URL (what the cost rules match)."""
    slash = url.find("/", url.find("//") + 2)
    if slash < 0:
        return "/"
    end = url.find("#", slash)
    return url[slash:] if end < 0 else url[slash:end]


class RowMaker:
    """Turns events into rows, knowing the cost model and the origins' budgets."""

    def __init__(self, costs: CostModel, budget_of: Callable[[str], float | None]) -> None:
        self.costs = costs
        self.budget_of = budget_of
        self._budgets: dict[str, float | None] = {}

    def origin_budget(self, origin: str | None) -> float | None:
        if origin is None:
            return None
        if origin not in self._budgets:
            self._budgets[origin] = self.budget_of(origin_key(origin))
        return self._budgets[origin]

    def row_of(self, event: RequestEvent) -> RequestRow:
        context, result = event.context, event.result
        content_type = result.content_type if result is not None and result.status else None
        klass, extra = self._cost(event.url, context.kind, context.cost, content_type)
        keys = list(context.keys)
        status = result.status if result is not None else None
        phases = result.phases if result is not None else Phases()
        first_byte, total = phases.first_byte, None
        if result is not None:
            first_byte = first_byte if first_byte is not None else result.latency
            total = phases.total or result.elapsed
        cache = None
        if result is not None and result.headers and status is not None:
            cache = cache_verdict(result.headers).value
        bucket = None
        for key in keys:  # a loop, not next() over a generator: this runs for every request
            if key.startswith("bucket:"):
                bucket = key[7:]
                break
        return RequestRow(
            time=event.at,
            site=context.site,
            origin=context.origin,
            lane=context.lane or context.kind,
            kind=context.kind,
            url=event.url,
            keys=keys,
            key_types=[k.partition(":")[0] for k in keys],
            wait_s=context.wait,
            late_s=context.late,
            cost_class=klass,
            cost_units=context.cost,
            extra_units=extra,
            origin_budget=self.origin_budget(context.origin),
            status=status,
            status_class=status_class(status, event.refusal),
            error=result.error if result is not None else None,
            refusal=event.refusal,
            dns_s=phases.dns,
            connect_s=phases.connect,
            tls_s=phases.tls,
            first_byte_s=first_byte,
            total_s=total,
            reused=phases.reused,
            bytes=result.size if result is not None else 0,
            truncated=result.truncated if result is not None else False,
            content_type=content_type or None,
            cache=cache,
            bucket=bucket,
            attempt=context.attempt,
            redirects=context.redirects,
            location=result.location if result is not None else None,
            retry_after=result.retry_after if result is not None else None,
            render_page=context.render_page,
            render_decision=context.render_decision,
        )

    def _cost(
        self, url: str, kind: str, booked: float, content_type: str | None
    ) -> tuple[str, float]:
        """The request's class, and the units its response type cost beyond its booking."""
        if kind in ROBOTS_KINDS:
            return RequestClass.ROBOTS.value, 0.0
        klass = self.costs.classify_target(target_of(url), content_type)
        extra = 0.0
        if kind in PAGE_KINDS and content_type:
            extra = max(0.0, float(self.costs.costs[klass]) - booked)
        return klass.value, extra


def warm_up() -> None:
    """Pay Arrow's one-time set-up of time zones (about half a second, mostly without the
    interpreter lock) now, on the observer's thread, not at the first flush."""
    pa.array([0], type=pa.int64()).view(SCHEMA.field("time").type)


def record_batch(rows: list[RequestRow], run: str, worker: str) -> pa.RecordBatch:
    """Rows as one Arrow batch in ``SCHEMA``."""
    n = len(rows)
    arrays: list[pa.Array[Any]] = []
    for field in SCHEMA:
        name = field.name
        if name == "time":
            values: list[object] = [int(r.time * 1_000_000) for r in rows]
        elif name == "run":
            values = [run] * n
        elif name == "worker":
            values = [worker] * n
        else:
            values = [getattr(r, name) for r in rows]
        try:
            arrays.append(pa.array(values, type=field.type))
        except UnicodeEncodeError:  # a header's undecodable bytes, kept as surrogate escapes
            arrays.append(pa.array([_escaped(v) for v in values], type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)


def _escaped(value: object) -> object:
    """``value`` with lone surrogates (bytes a header held that were no UTF-8) written as
    ``\\udcXX`` escapes: the row is kept, as the document sink keeps its records."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, list):
        return [_escaped(item) for item in value]
    return value
