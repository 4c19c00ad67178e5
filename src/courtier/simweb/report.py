"""The audit as tables for a terminal (rich) and as one JSON document."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from courtier.simweb.audit import AuditReport

WORST_SITES = 15


def print_report(report: AuditReport, console: Console) -> None:
    console.print(_summary(report))
    console.print(_criteria(report))
    console.print(_sites(report))
    console.print(_origins(report))
    if report.ceiling.origins:
        console.print(_ceiling(report))
    if report.buckets:
        console.print(_buckets(report))
    if report.spa:
        console.print(_spa(report))
    if report.violations:
        console.print(_violations(report))


def write_json(report: AuditReport, path: Path) -> None:
    path.write_text(json.dumps(report.to_json(), indent=1, ensure_ascii=False) + "\n")


def _summary(report: AuditReport) -> Table:
    table = Table(title="Simulated-web audit", show_header=False)
    table.add_row("requests", str(report.requests))
    table.add_row("duration", f"{report.duration:.1f} s")
    table.add_row("throughput", f"{report.throughput:.1f} req/s")
    table.add_row("statuses", ", ".join(f"{k}: {v}" for k, v in report.statuses.items()))
    outside = ", ".join(f"{k}: {v}" for k, v in report.outside_seed.items()) or "none"
    table.add_row("outside the seed", outside)
    media = report.media
    if media.requests:
        kinds = ", ".join(f"{k}: {v}" for k, v in media.requests.items())
        cache = f"cache hits {media.cache_hits}, misses {media.cache_misses}"
        if media.unattributed_misses:
            cache += f" ({media.unattributed_misses} for no known customer)"
        table.add_row("media", f"{kinds}; {cache}")
    c = report.ceiling
    table.add_row(
        "ceiling",
        f"{c.rate:.1f} cost units/s over {c.origins_with_work} origins with work; achieved "
        f"{c.units / c.duration if c.duration else 0.0:.1f} units/s"
        + (
            f"; first request {c.first_request:.1f} s after the start"
            if c.first_request is not None and c.first_request >= 0.05
            else ""
        ),
    )
    table.add_row(
        "utilisation",
        f"{c.utilisation:.1%} (second half {c.second_half_utilisation:.1%}; uncapped "
        f"{c.raw_utilisation:.1%})",
    )
    if len(c.kinds) > 1:
        table.add_row("utilisation by kind", kinds_line(report))
    table.add_row("fast start", _fast_start(report))
    stalled = report.stamp_uncertainty
    if stalled.requests:
        table.add_row(
            "server stalls",
            f"{stalled.requests} requests stamped after the server's loop stood still, "
            f"each up to {stalled.longest * 1000:.0f} ms after it may have arrived (gaps and "
            "windows allow for it)",
        )
    table.add_row("verdict", "[green]OK[/green]" if report.ok else "[red]FAIL[/red]")
    return table


def kinds_line(report: AuditReport) -> str:
    """Utilisation per kind of site, with the share of the ceiling each kind holds."""
    c = report.ceiling
    return ", ".join(
        f"{k.kind} {k.utilisation:.1%} ({k.origins} origins, "
        f"{_share(k.ceiling_units, c.ceiling_units):.0%} of the ceiling)"
        for k in c.kinds
    )


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def _fast_start(report: AuditReport) -> str:
    c = report.ceiling
    text = (
        f"{len(c.late_start)} origins with work not requested in the first {c.fast_start:g} s"
        f" ({len(c.never_requested)} never)"
    )
    if c.late_start:
        text += ": " + ", ".join(c.late_start[:5]) + (" …" if len(c.late_start) > 5 else "")
    if c.finished or c.neglected:
        text += f"; {len(c.finished)} finished early, {len(c.neglected)} left idle with work"
    return text


def _criteria(report: AuditReport) -> Table:
    table = Table(title="Criteria")
    for column in ("criterion", "required", "result", "detail"):
        table.add_column(column)
    for c in report.criteria:
        result = "[green]pass[/green]" if c.ok else "[red]fail[/red]"
        table.add_row(c.name, "yes" if c.required else "no", result, c.detail)
    return table


def _sites(report: AuditReport) -> Table:
    table = Table(title=f"Sites (the {WORST_SITES} with the smallest gaps)")
    for column in ("site", "requests", "min gap s", "max/1s", "robots", "delay", "retry"):
        table.add_column(column, justify="left" if column == "site" else "right")
    ranked = sorted(report.sites, key=lambda s: (s.min_gap is None, s.min_gap or 0.0))
    for s in ranked[:WORST_SITES]:
        gap = "-" if s.min_gap is None else f"{s.min_gap:.3f}"
        table.add_row(
            s.host,
            str(s.requests),
            gap,
            str(s.max_per_second),
            str(s.robots_violations),
            str(s.crawl_delay_violations),
            str(s.retry_after_violations),
        )
    return table


def _origins(report: AuditReport) -> Table:
    table = Table(title="Origins (cost units in the busiest window vs the limit)")
    for column in ("origin", "requests", "misses", "units", "budget/s", "max 1s", "max 5s"):
        table.add_column(column, justify="left" if column == "origin" else "right")
    ranked = sorted(report.origins, key=lambda o: o.max_units_5s / o.limit_5s, reverse=True)
    for o in ranked[:WORST_SITES]:
        mark = "[red]" if o.over_budget else ""
        table.add_row(
            o.origin,
            str(o.requests),
            str(o.miss_requests),
            str(o.cost_units),
            f"{o.budget:g}",
            f"{mark}{o.max_units_1s}/{o.limit_1s:g}",
            f"{mark}{o.max_units_5s}/{o.limit_5s:g}",
        )
    return table


def _ceiling(report: AuditReport) -> Table:
    c = report.ceiling
    ranked = sorted(c.origins, key=lambda o: (o.utilisation, o.origin))
    table = Table(
        title=f"Ceiling (the {min(WORST_SITES, len(ranked))} of {len(ranked)} origins with work "
        "furthest below it)"
    )
    columns = ("origin", "sites", "rate/s", "with work s", "ceiling", "units", "util", "first s")
    for column in columns:
        table.add_column(column, justify="left" if column == "origin" else "right")
    for o in ranked[:WORST_SITES]:
        table.add_row(
            o.origin,
            str(o.sites),
            f"{o.rate:.2f}",
            f"{o.work_until - o.work_from:.1f}" + (" (done)" if o.finished else ""),
            f"{o.ceiling_units:.0f}",
            str(o.units),
            f"{o.utilisation:.2f}",
            "-" if o.first_request is None else f"{o.first_request:.1f}",
        )
    return table


def _buckets(report: AuditReport) -> Table:
    busiest = sorted(report.buckets, key=lambda b: b.load, reverse=True)
    table = Table(
        title=f"Buckets (the {min(WORST_SITES, len(busiest))} busiest of {len(busiest)}: "
        "requests in the busiest window vs the limit)"
    )
    for column in ("bucket", "requests", "max 1s", "max 5s"):
        table.add_column(column, justify="left" if column == "bucket" else "right")
    for b in busiest[:WORST_SITES]:
        mark = "[red]" if b.over_limit else ""
        table.add_row(
            b.bucket,
            str(b.requests),
            f"{mark}{b.max_1s}/{b.limit_1s:g}",
            f"{mark}{b.max_5s}/{b.limit_5s:g}",
        )
    return table


def _spa(report: AuditReport) -> Table:
    table = Table(title="Single-page apps and their twin (requests by path class)")
    columns = ("site", "kind", "items reached", "pages", "api", "static (304)", "other")
    for column in columns:
        table.add_column(column, justify="left" if column in ("site", "kind") else "right")
    for f in report.spa:
        n = f.requests.get
        table.add_row(
            f.host,
            f.kind + (" (hangs)" if f.render_hang else ""),
            str(f.items_reached),
            str(n("home", 0) + n("listing", 0) + n("item", 0)),
            str(n("api-list", 0) + n("api-item", 0)),
            f"{n('static', 0)} ({f.not_modified})",
            str(n("robots", 0) + n("other", 0)),
        )
    return table


def _violations(report: AuditReport) -> Table:
    table = Table(title="Violations (first examples of each kind)")
    for column in ("kind", "host", "target", "detail"):
        table.add_column(column)
    for v in report.violations:
        table.add_row(v.kind, v.host, v.target, v.detail)
    return table
