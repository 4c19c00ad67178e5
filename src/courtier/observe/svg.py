"""Charts as inline SVG (no plotting library, no script): lines, stacked areas, bars.

Every chart is an ``<svg class="chart">`` whose ``data-points`` counts the data points it
draws, each series a ``path.series`` with a ``<title>`` (the browser's tooltip), so a test
can check that a chart holds data. The x axis is seconds since the run's start, labelled
with UTC wall-clock time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
STATUS_COLORS = {
    "2xx": "#2ca02c",
    "3xx": "#17becf",
    "4xx": "#ff7f0e",
    "5xx": "#d62728",
    "error": "#7f0000",
    "refused": "#7f7f7f",
}
TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    points: Sequence[tuple[float, float]]
    """(seconds since the start, value)"""
    color: str | None = None
    dashed: bool = False


@dataclass(frozen=True, slots=True)
class Marker:
    """A moment on the time axis (an anomaly)."""

    x: float
    label: str
    color: str = "#d62728"


@dataclass(frozen=True, slots=True)
class Frame:
    width: int = 920
    height: int = 260
    left: int = 64
    right: int = 16
    top: int = 30
    bottom: int = 34

    @property
    def inner_width(self) -> int:
        return self.width - self.left - self.right

    @property
    def inner_height(self) -> int:
        return self.height - self.top - self.bottom


def nice_ceiling(value: float) -> float:
    if value <= 0 or not math.isfinite(value):
        return 1.0
    scale = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= step * scale:
            return step * scale
    return 10.0 * scale


def nice_top(value: float, ticks: int = 4) -> float:
    """The top of a y axis at or above ``value`` whose ``ticks`` steps are round numbers."""
    return ticks * nice_ceiling(value / ticks)


def number(value: float) -> str:
    """A short label: 1.5k, 250, 0.25, 2.5m."""
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:.3g}M"
    if magnitude >= 1e3:
        return f"{value / 1e3:.3g}k"
    if magnitude >= 1 or magnitude == 0:
        return f"{value:.3g}"
    return f"{value:.2g}"


def time_step(span: float, ticks: int = 8) -> int:
    for step in TIME_STEPS:
        if span / step <= ticks:
            return step
    return TIME_STEPS[-1]


def clock_label(epoch: float, step: int) -> str:
    fmt = "%H:%M:%S" if step < 60 else "%H:%M"
    return time.strftime(fmt, time.gmtime(epoch))


class _Plot:
    def __init__(self, frame: Frame, x_max: float, y_max: float) -> None:
        self.f = frame
        self.x_max = max(x_max, 1e-9)
        self.y_max = max(y_max, 1e-12)

    def x(self, value: float) -> float:
        return self.f.left + self.f.inner_width * min(max(value / self.x_max, 0.0), 1.0)

    def y(self, value: float) -> float:
        return self.f.top + self.f.inner_height * (1.0 - min(max(value / self.y_max, 0.0), 1.0))


def _axes(plot: _Plot, start: float, unit: str) -> list[str]:
    f = plot.f
    parts = [
        f'<rect class="plot" x="{f.left}" y="{f.top}" width="{f.inner_width}" '
        f'height="{f.inner_height}" fill="#fff" stroke="#ccc"/>'
    ]
    for i in range(5):
        value = plot.y_max * i / 4
        y = plot.y(value)
        parts.append(
            f'<line x1="{f.left}" x2="{f.left + f.inner_width}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#eee"/>'
            f'<text x="{f.left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{number(value)}</text>"
        )
    step = time_step(plot.x_max)
    tick = 0.0
    while tick <= plot.x_max + 1e-9:
        x = plot.x(tick)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{f.top + f.inner_height}" '
            f'y2="{f.top + f.inner_height + 4}" stroke="#999"/>'
            f'<text x="{x:.1f}" y="{f.top + f.inner_height + 17}" text-anchor="middle" '
            f'class="tick">{clock_label(start + tick, step)}</text>'
        )
        tick += step
    parts.append(
        f'<text x="{f.left}" y="{f.top - 8}" class="unit">{escape(unit)}</text>'
        f'<text x="{f.left + f.inner_width}" y="{f.height - 2}" text-anchor="end" '
        'class="unit">time (UTC)</text>'
    )
    return parts


def _legend(frame: Frame, names: Sequence[tuple[str, str, bool]]) -> list[str]:
    parts: list[str] = []
    x = frame.left + frame.inner_width
    for name, color, dashed in reversed(names):
        label = escape(name[:40])
        width = 7 * len(name[:40]) + 26
        x -= width
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        parts.append(
            f'<line x1="{x}" x2="{x + 16}" y1="{frame.top - 12}" y2="{frame.top - 12}" '
            f'stroke="{color}" stroke-width="2.5"{dash}/>'
            f'<text x="{x + 20}" y="{frame.top - 8}" class="legend">{label}</text>'
        )
    return parts


def _markers(plot: _Plot, markers: Sequence[Marker]) -> list[str]:
    parts: list[str] = []
    f = plot.f
    for marker in markers:
        if not 0 <= marker.x <= plot.x_max:
            continue
        x = plot.x(marker.x)
        parts.append(
            f'<g class="marker"><title>{escape(marker.label)}</title>'
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{f.top}" y2="{f.top + f.inner_height}" '
            f'stroke="{marker.color}" stroke-width="1.5" stroke-dasharray="3 3"/>'
            f'<path d="M{x - 5:.1f},{f.top} L{x + 5:.1f},{f.top} L{x:.1f},{f.top + 8} Z" '
            f'fill="{marker.color}"/></g>'
        )
    return parts


def _svg(chart_id: str, title: str, frame: Frame, points: int, body: list[str]) -> str:
    return (
        f'<svg class="chart" id="{escape(chart_id)}" data-points="{points}" role="img" '
        f'aria-label="{escape(title)}" viewBox="0 0 {frame.width} {frame.height}" '
        f'width="{frame.width}" height="{frame.height}" xmlns="http://www.w3.org/2000/svg">'
        + "".join(body)
        + "</svg>"
    )


def line_chart(
    chart_id: str,
    title: str,
    series: Sequence[Series],
    *,
    start: float,
    span: float,
    unit: str,
    markers: Sequence[Marker] = (),
    y_max: float | None = None,
    frame: Frame | None = None,
) -> str:
    """Lines over time; ``start`` is the epoch of x = 0, ``span`` the x range in seconds."""
    frame = frame or Frame()
    top = max((y for s in series for _x, y in s.points), default=0.0)
    plot = _Plot(frame, span, nice_top(y_max if y_max is not None else top * 1.02))
    body = _axes(plot, start, unit)
    named: list[tuple[str, str, bool]] = []
    count = 0
    for i, s in enumerate(series):
        color = s.color or PALETTE[i % len(PALETTE)]
        named.append((s.name, color, s.dashed))
        if not s.points:
            continue
        count += len(s.points)
        d = " ".join(
            f"{'M' if j == 0 else 'L'}{plot.x(x):.1f},{plot.y(y):.1f}"
            for j, (x, y) in enumerate(s.points)
        )
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        body.append(
            f'<path class="series" data-name="{escape(s.name)}" data-points="{len(s.points)}" '
            f'd="{d}" fill="none" stroke="{color}" stroke-width="1.8"{dash}>'
            f"<title>{escape(s.name)}</title></path>"
        )
    body += _markers(plot, markers) + _legend(frame, named)
    return _svg(chart_id, title, frame, count, body)


def stacked_chart(
    chart_id: str,
    title: str,
    xs: Sequence[float],
    layers: Sequence[tuple[str, Sequence[float], str]],
    *,
    start: float,
    span: float,
    unit: str,
    markers: Sequence[Marker] = (),
    frame: Frame | None = None,
) -> str:
    """Stacked areas: ``layers`` are (name, one value per x, color), bottom first."""
    frame = frame or Frame()
    totals = [sum(layer[1][i] for layer in layers) for i in range(len(xs))]
    plot = _Plot(frame, span, nice_top(max(totals, default=0.0) * 1.02))
    body = _axes(plot, start, unit)
    base = [0.0] * len(xs)
    count = 0
    for name, values, color in layers:
        if not xs or not any(values):
            continue
        upper = [b + v for b, v in zip(base, values, strict=True)]
        forward = " ".join(
            f"{'M' if i == 0 else 'L'}{plot.x(x):.1f},{plot.y(y):.1f}"
            for i, (x, y) in enumerate(zip(xs, upper, strict=True))
        )
        backward = " ".join(
            f"L{plot.x(x):.1f},{plot.y(y):.1f}"
            for x, y in reversed(list(zip(xs, base, strict=True)))
        )
        count += len(xs)
        body.append(
            f'<path class="series" data-name="{escape(name)}" data-points="{len(xs)}" '
            f'd="{forward} {backward} Z" fill="{color}" fill-opacity="0.75" stroke="{color}" '
            f'stroke-width="0.8"><title>{escape(name)}: {number(sum(values))} in all</title>'
            "</path>"
        )
        base = upper
    names = [(name, color, False) for name, values, color in layers if any(values)]
    body += _markers(plot, markers) + _legend(frame, names)
    return _svg(chart_id, title, frame, count, body)


def bar_chart(
    chart_id: str,
    title: str,
    bars: Sequence[tuple[str, float]],
    *,
    unit: str,
    width: int = 920,
    color: str = PALETTE[0],
) -> str:
    """Horizontal bars, largest first as given."""
    row, label_width = 22, 300
    frame = Frame(width=width, height=30 + row * max(1, len(bars)), left=label_width, top=24)
    top = nice_ceiling(max((v for _n, v in bars), default=0.0))
    body = [f'<text x="{label_width}" y="16" class="unit">{escape(unit)}</text>']
    span = frame.inner_width - 60
    for i, (name, value) in enumerate(bars):
        y = frame.top + i * row
        length = span * (value / top if top else 0.0)
        body.append(
            f'<text x="{label_width - 8}" y="{y + 15}" text-anchor="end" class="tick">'
            f"{escape(name[:44])}</text>"
            f'<path class="series" data-name="{escape(name)}" data-points="1" '
            f'd="M{label_width},{y + 3} h{length:.1f} v16 h{-length:.1f} Z" fill="{color}">'
            f"<title>{escape(name)}: {number(value)}</title></path>"
            f'<text x="{label_width + length + 6:.1f}" y="{y + 15}" class="tick">'
            f"{number(value)}</text>"
        )
    return _svg(chart_id, title, frame, len(bars), body)
