"""An operator's controls of a running crawl, kept in the store every worker reads.

Rules (the store keeps them; the workers apply them, ``pipeline.lanes.controls``):
- **One row per site** (``site_controls``): paused (until a time, or until resumed), a rate
  of its own (until a time, or for good), opted out. A row is the whole present state: a
  command reads it, changes one part and writes it back with the action, in one transaction.
- **Every action is logged** (``control_actions``): when, what, on which target, with what
  detail, by which command line and which machine and process. The log is also how running
  workers learn of a change: each reads the actions after the last it saw, every
  ``[control] poll`` seconds, and re-reads the present state of what they name.
- **An operator's origin** (``origins pin``/``split``) places a site on an origin of the
  operator's naming, over inference, until ``origins unpin``.
- **One row per origin** (``origin_controls``, ``origins limit``): a budget of its own for
  the origin's shared key (a rate in cost units per second, and a burst in seconds or the
  configured one), over the configuration and its overrides, until a time or for good.
- **An operator's rendering** (``site render``): a site's own render mode and URL rules
  (``never``, ``auto``, ``always``), over the configuration's ``[render]``, until cleared.
- **Opted out is for good**: the site's state becomes ``opted-out`` (``SiteState.OPTED_OUT``),
  which no seeding, promotion, ``seed add`` or redirect changes back; no request of any kind
  (page, robots.txt, media, a render's) goes to its host again.
- Times are seconds on the wall clock (``time.time()``), as everywhere in the store.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

HELD_FOR_GOOD: Final = math.inf
"""``SiteControl.held_until`` of a site paused until someone resumes it."""


@dataclass(frozen=True, slots=True)
class SiteControl:
    """The operator's present controls of one site."""

    site: str
    paused: bool = False
    paused_until: float | None = None
    """When a pause ends by itself (None: when resumed)."""
    rate: float | None = None
    """Requests per second the site may get, in place of the configured rate."""
    rate_until: float | None = None
    """When the rate of its own ends (None: it stays)."""
    opted_out: bool = False
    reason: str = ""
    updated_at: float = 0.0
    origin: str | None = None
    """The origin the operator placed the site on (``courtier origins pin|split``), over
    what inference says; None: inference decides."""
    render: str | None = None
    """The site's render mode (``never``, ``auto``, ``always``) over the configuration's;
    None: the configuration decides."""
    render_rules: tuple[str, ...] = ()
    """``"REGEX => MODE"`` rules for the site's URLs, over its render mode."""

    def held_until(self, now: float) -> float:
        """Before when nothing may start on the site (0: no pause in effect)."""
        if self.opted_out:
            return HELD_FOR_GOOD
        if not self.paused:
            return 0.0
        if self.paused_until is None:
            return HELD_FOR_GOOD
        return self.paused_until if self.paused_until > now else 0.0

    def interval(self, now: float) -> float | None:
        """The site's own start-to-start interval now (None: the configured one)."""
        if self.rate is None or (self.rate_until is not None and self.rate_until <= now):
            return None
        return 1.0 / self.rate

    def next_change(self, now: float) -> float | None:
        """When what is in effect changes by itself (a pause or a rate running out)."""
        ends = [t for t in (self.paused_until, self.rate_until) if t is not None and t > now]
        return min(ends) if ends else None

    def paused_at(self, now: float, until: float | None, reason: str) -> SiteControl:
        return replace(self, paused=True, paused_until=until, reason=reason, updated_at=now)

    def resumed_at(self, now: float) -> SiteControl:
        return replace(self, paused=False, paused_until=None, updated_at=now)

    def limited_at(self, now: float, rate: float | None, until: float | None) -> SiteControl:
        return replace(self, rate=rate, rate_until=None if rate is None else until, updated_at=now)

    def pinned_at(self, now: float, origin: str | None) -> SiteControl:
        return replace(self, origin=origin, updated_at=now)

    def rendering(self, now: float, mode: str | None, rule: str | None) -> SiteControl:
        """The site's render ``mode`` (None: cleared), or with ``rule`` (a regex) the mode
        of the site's URLs it matches (None: that rule removed). The newest rule for a
        regex replaces an older one and goes first."""
        if rule is None:
            rules = () if mode is None else self.render_rules
            return replace(self, render=mode, render_rules=rules, updated_at=now)
        kept = tuple(r for r in self.render_rules if r.rpartition("=>")[0].strip() != rule)
        rules = kept if mode is None else (f"{rule} => {mode}", *kept)
        return replace(self, render_rules=rules, updated_at=now)

    def describe(self, now: float) -> str:
        """One line: what is in effect (``-`` when nothing is)."""
        parts = [] if self.origin is None else [f"origin {self.origin} (operator's)"]
        if self.opted_out:
            parts.append("opted out")
        elif self.held_until(now) > now:
            until = self.paused_until
            parts.append("paused" + ("" if until is None else f" until {utc_text(until)}"))
        interval = self.interval(now)
        if interval is not None:
            until = self.rate_until
            parts.append(
                f"rate {1 / interval:g}/s" + ("" if until is None else f" until {utc_text(until)}")
            )
        if self.render is not None:
            parts.append(f"render {self.render}")
        parts.extend(f"render {rule}" for rule in self.render_rules)
        if self.reason and parts:
            parts.append(f"({self.reason})")
        return " ".join(parts) or "-"


@dataclass(frozen=True, slots=True)
class OriginControl:
    """The operator's budget of one origin's key (``origin:<origin>``): ``rate`` cost units
    per second, ``burst`` seconds (None: the configured burst), until ``rate_until``."""

    origin: str
    rate: float | None = None
    burst: float | None = None
    rate_until: float | None = None
    reason: str = ""
    updated_at: float = 0.0

    def in_effect(self, now: float) -> bool:
        return self.rate is not None and (self.rate_until is None or self.rate_until > now)

    def next_change(self, now: float) -> float | None:
        until = self.rate_until
        return until if self.rate is not None and until is not None and until > now else None

    def limited_at(
        self, now: float, rate: float | None, burst: float | None, until: float | None, reason: str
    ) -> OriginControl:
        if rate is None:
            return OriginControl(self.origin, reason=reason, updated_at=now)
        return OriginControl(self.origin, rate, burst, until, reason, now)

    def describe(self, now: float) -> str:
        """One line: the budget in effect (``-`` when none is)."""
        if not self.in_effect(now):
            return "-"
        text = f"rate {self.rate:g} units/s"
        if self.burst is not None:
            text += f" burst {self.burst:g} s"
        if self.rate_until is not None:
            text += f" until {utc_text(self.rate_until)}"
        return text + (f" ({self.reason})" if self.reason else "")


@dataclass(frozen=True, slots=True)
class ControlAction:
    """One logged action: ``action`` is the command's words (``site pause``, ``seed add``)."""

    action: str
    target: str
    detail: Mapping[str, Any]
    command: str
    actor: str
    at: float
    id: int = 0

    def line(self) -> str:
        detail = " ".join(f"{k}={v}" for k, v in self.detail.items())
        return f"{utc_text(self.at)} {self.action} {self.target} {detail}".rstrip() + (
            f"  [{self.actor}]"
        )


def utc_text(at: float) -> str:
    """``at`` (wall-clock seconds) as an ISO 8601 UTC time, to the second."""
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


# -- the tables, for both stores (SQLite placeholders; ``postgres_sql`` converts) ----------

SQLITE_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS control_actions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL,
        detail TEXT NOT NULL, command TEXT NOT NULL, actor TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS site_controls (
        site TEXT PRIMARY KEY, paused INTEGER NOT NULL, paused_until REAL,
        rate REAL, rate_until REAL, opted_out INTEGER NOT NULL, reason TEXT NOT NULL,
        updated_at REAL NOT NULL, origin TEXT, render TEXT, render_rules TEXT)""",
    """CREATE TABLE IF NOT EXISTS origin_controls (
        origin TEXT PRIMARY KEY, rate REAL, burst REAL, rate_until REAL,
        reason TEXT NOT NULL, updated_at REAL NOT NULL)""",
)
POSTGRES_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS control_actions (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        at float8 NOT NULL, action text NOT NULL, target text NOT NULL,
        detail text NOT NULL, command text NOT NULL, actor text NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS site_controls (
        site text PRIMARY KEY, paused boolean NOT NULL, paused_until float8,
        rate float8, rate_until float8, opted_out boolean NOT NULL, reason text NOT NULL,
        updated_at float8 NOT NULL, origin text, render text, render_rules text)""",
    # A store made before a column was: the column added, NULL for every row.
    """ALTER TABLE site_controls ADD COLUMN IF NOT EXISTS origin text,
        ADD COLUMN IF NOT EXISTS render text, ADD COLUMN IF NOT EXISTS render_rules text""",
    """CREATE TABLE IF NOT EXISTS origin_controls (
        origin text PRIMARY KEY, rate float8, burst float8, rate_until float8,
        reason text NOT NULL, updated_at float8 NOT NULL)""",
)
LATER_COLUMNS: Final = (("origin", "TEXT"), ("render", "TEXT"), ("render_rules", "TEXT"))
"""``site_controls`` columns a SQLite store made before them gets (``ALTER TABLE``)."""

INSERT_ACTION: Final = (
    "INSERT INTO control_actions (at, action, target, detail, command, actor) "
    "VALUES (?, ?, ?, ?, ?, ?) RETURNING id"
)
UPSERT_CONTROL: Final = (
    "INSERT INTO site_controls (site, paused, paused_until, rate, rate_until, opted_out, "
    "reason, updated_at, origin, render, render_rules) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (site) DO "
    "UPDATE SET paused = excluded.paused, paused_until = excluded.paused_until, "
    "rate = excluded.rate, rate_until = excluded.rate_until, opted_out = excluded.opted_out, "
    "reason = excluded.reason, updated_at = excluded.updated_at, origin = excluded.origin, "
    "render = excluded.render, render_rules = excluded.render_rules"
)
UPSERT_ORIGIN_CONTROL: Final = (
    "INSERT INTO origin_controls (origin, rate, burst, rate_until, reason, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (origin) DO UPDATE SET rate = excluded.rate, "
    "burst = excluded.burst, rate_until = excluded.rate_until, reason = excluded.reason, "
    "updated_at = excluded.updated_at"
)
SET_STATE: Final = (
    "INSERT INTO sites (site, state, added_at) VALUES (?, ?, ?) "
    "ON CONFLICT (site) DO UPDATE SET state = excluded.state"
)
_ACTION_COLUMNS: Final = "id, at, action, target, detail, command, actor"
ACTIONS_AFTER: Final = (
    f"SELECT {_ACTION_COLUMNS} FROM control_actions WHERE id > ? ORDER BY id LIMIT ?"
)
LAST_ACTIONS: Final = (
    f"SELECT {_ACTION_COLUMNS} FROM control_actions "
    "WHERE (? = '' OR target = ?) ORDER BY id DESC LIMIT ?"
)
CONTROLS: Final = (
    "SELECT site, paused, paused_until, rate, rate_until, opted_out, reason, updated_at, "
    "origin, render, render_rules FROM site_controls"
)

ORIGIN_CONTROLS: Final = (
    "SELECT origin, rate, burst, rate_until, reason, updated_at FROM origin_controls"
)


def postgres_sql(statement: str) -> str:
    """A statement above with PostgreSQL's placeholders (none of them holds a literal ?)."""
    return statement.replace("?", "%s")


def action_row(action: ControlAction) -> tuple[Any, ...]:
    detail = json.dumps(dict(action.detail), sort_keys=True, default=str)
    return (action.at, action.action, action.target, detail, action.command, action.actor)


def control_row(control: SiteControl) -> tuple[Any, ...]:
    c = control
    return (
        c.site, c.paused, c.paused_until, c.rate, c.rate_until, c.opted_out, c.reason,
        c.updated_at, c.origin, c.render,
        json.dumps(list(c.render_rules)) if c.render_rules else None,
    )  # fmt: skip


def origin_controls_from(rows: Iterable[Sequence[Any]]) -> dict[str, OriginControl]:
    return {row[0]: OriginControl(*row) for row in rows}


def actions_from(rows: Iterable[Sequence[Any]]) -> list[ControlAction]:
    actions = []
    for id_, at, action, target, detail, command, actor in rows:
        try:
            fields = json.loads(detail)
        except ValueError:
            fields = {"detail": detail}
        if not isinstance(fields, dict):
            fields = {"detail": fields}
        actions.append(ControlAction(action, target, fields, command, actor, at, int(id_)))
    return actions


def controls_from(rows: Iterable[Sequence[Any]]) -> dict[str, SiteControl]:
    return {
        row[0]: SiteControl(
            row[0],
            bool(row[1]),
            row[2],
            row[3],
            row[4],
            bool(row[5]),
            row[6],
            row[7],
            row[8],
            row[9],
            _rules(row[10]),
        )
        for row in rows
    }


def _rules(text: str | None) -> tuple[str, ...]:
    """A site's render rules as stored (a JSON list of strings); unreadable ones: none."""
    try:
        rules = json.loads(text) if text else []
    except ValueError:
        return ()
    return tuple(r for r in rules if isinstance(r, str)) if isinstance(rules, list) else ()


Execute = Callable[[str, Sequence[Any]], Any]


def write_control(
    execute: Callable[[str, Sequence[Any]], Any],
    action: ControlAction,
    control: SiteControl | OriginControl | None,
    states: Mapping[str, str],
    convert: Callable[[str], str] = lambda s: s,
) -> int:
    """The writes of ``FrontierStore.record_control``, inside the caller's transaction."""
    cursor = execute(convert(INSERT_ACTION), action_row(action))
    (action_id,) = cursor.fetchone()
    if isinstance(control, OriginControl):
        c = control
        row = (c.origin, c.rate, c.burst, c.rate_until, c.reason, c.updated_at)
        execute(convert(UPSERT_ORIGIN_CONTROL), row)
    elif control is not None:
        execute(convert(UPSERT_CONTROL), control_row(control))
    for site, state in states.items():
        execute(convert(SET_STATE), (site, state, action.at))
    return int(action_id)
