"""Metrics of what a crawl leaves behind and of the process that runs it.

- **Output**, from the latest ``CrawlSample`` when Prometheus scrapes: WARC bytes, records
  by type and write errors (``courtier.pipeline.keeping.archive``), documents handed to the
  document sink by kind, and the frontier's URLs by status (counted on the store's thread
  every ``[observe] frontier_seconds``, and at the end).
- **The process**: prometheus-client's ``ProcessCollector`` (``process_cpu_seconds_total``,
  ``process_resident_memory_bytes``, open files...; Linux) on the crawl's own registry, the
  CPU of the crawl's descendants (parse workers, browsers: ``courtier_child_cpu_seconds_total``)
  and ``courtier_build_info``. CPU per request is ``process_cpu_seconds_total`` (plus the
  children's) over ``courtier_requests_total``: ``deploy/prometheus-rules.yml`` records it.
"""

from __future__ import annotations

import os
import platform
import resource
import threading
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from courtier import __version__
from courtier.observe.probe import URL_STATES, CrawlSample

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class OutputCollector(Collector):
    """WARC, documents and the frontier, from the latest sample (``sample()``)."""

    def __init__(self, sample: Callable[[], CrawlSample | None]) -> None:
        self.sample = sample

    def collect(self) -> Iterable[Metric]:
        sample = self.sample()
        if sample is None:
            return
        stats = sample.stats
        yield counter_family(
            "courtier_warc_bytes",
            "Bytes of WARC records written (compressed)",
            [((), _num(stats.get("warc_bytes")))],
        )
        yield counter_family(
            "courtier_warc_records",
            "WARC captures written, by the type of their record (response, revisit)",
            by_label(stats.get("warc_records")),
            ["type"],
        )
        yield counter_family(
            "courtier_warc_errors",
            "Captures lost because a WARC write failed (a full disk)",
            [((), _num(stats.get("warc_errors")))],
        )
        yield counter_family(
            "courtier_documents",
            "Document records handed to the document sink, by kind (page, pdf, feed, media)",
            by_label(stats.get("documents")),
            ["kind"],
        )
        if sample.frontier:
            yield gauge_family(
                "courtier_frontier_urls",
                "URLs in the frontier store by status, as last counted (queued: never "
                "fetched; leased: handed to a fetcher; done; refused; failed)",
                [((state,), float(sample.frontier.get(state, 0))) for state in URL_STATES],
                ["state"],
            )


class ChildrenCpu(Collector):
    """CPU seconds of the process's descendants: those running (``/proc``, a walk of the
    parent links) and those that ended and were waited for (``RUSAGE_CHILDREN``). A child
    that ended and is not waited for yet is counted by neither for a moment: the value never
    goes down (it holds until the count catches up), as a counter must."""

    def __init__(self, pid: int | None = None, proc: str = "/proc") -> None:
        self.pid = pid if pid is not None else os.getpid()
        self.proc = proc
        self._lock = threading.Lock()
        self._most = 0.0

    def collect(self) -> Iterable[Metric]:
        live = descendants_cpu(self.pid, self.proc)
        if live is None:
            return  # no /proc: not Linux
        ended = resource.getrusage(resource.RUSAGE_CHILDREN)
        with self._lock:
            self._most = max(self._most, live + ended.ru_utime + ended.ru_stime)
            value = self._most
        yield counter_family(
            "courtier_child_cpu_seconds",
            "CPU seconds (user and system) of the crawl's child processes: parse workers, browsers",
            [((), value)],
        )


def descendants_cpu(root: int, proc: str = "/proc") -> float | None:
    """CPU seconds of the running descendants of ``root`` (each with its own waited-for
    children); None without a ``/proc``."""
    try:
        names = os.listdir(proc)
    except OSError:
        return None
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{proc}/{name}/stat", "rb") as stat:
                data = stat.read()
        except OSError:
            continue  # gone meanwhile
        fields = data[data.rindex(b")") + 2 :].split()
        try:
            parent = int(fields[1])
            used = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        except (IndexError, ValueError):
            continue
        pid = int(name)
        children.setdefault(parent, []).append(pid)
        ticks[pid] = used
    total = 0
    stack = list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        total += ticks.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total / _TICKS


class BuildInfo(Collector):
    def collect(self) -> Iterable[Metric]:
        yield gauge_family(
            "courtier_build_info",
            "Always 1: the crawler's version and Python's",
            [((__version__, platform.python_version()), 1.0)],
            ["version", "python"],
        )


def register_output_metrics(
    registry: CollectorRegistry, sample: Callable[[], CrawlSample | None]
) -> None:
    """Register every metric of this module on ``registry`` (the crawl's own)."""
    registry.register(OutputCollector(sample))
    ProcessCollector(registry=registry)
    registry.register(ChildrenCpu())
    registry.register(BuildInfo())


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def by_label(mapping: Any) -> list[tuple[tuple[str, ...], float]]:
    """A counter-by-reason dictionary as (label values, value) pairs, sorted."""
    if not isinstance(mapping, dict):
        return []
    return [((str(k),), _num(v)) for k, v in sorted(mapping.items())]


def counter_family(
    name: str,
    doc: str,
    values: list[tuple[tuple[str, ...], float]],
    labels: list[str] | None = None,
) -> Metric:
    family = CounterMetricFamily(name, doc, labels=labels or [])
    for label_values, value in values:
        family.add_metric(list(label_values), value)
    return family


def gauge_family(
    name: str,
    doc: str,
    values: list[tuple[tuple[str, ...], float]],
    labels: list[str] | None = None,
) -> Metric:
    family = GaugeMetricFamily(name, doc, labels=labels or [])
    for label_values, value in values:
        family.add_metric(list(label_values), value)
    return family
