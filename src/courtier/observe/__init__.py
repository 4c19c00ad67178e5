"""Seeing a crawl: the request log (Parquet, DuckDB, ClickHouse), Prometheus metrics,
anomaly detection per site and origin, progress, and the HTML report.

The engine hands every request to an ``Observation`` (its ``Observer``); see
``observation.py`` for the theory of operation and ``docs/observe.md`` for the outputs.
Names are loaded on first use: ``courtier.observe.settings`` (read by the configuration)
must not pull pyarrow and prometheus-client into every command.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "Anomaly": "courtier.observe.anomaly",
    "AnomalyDetector": "courtier.observe.anomaly",
    "Observation": "courtier.observe.observation",
    "CrawlSample": "courtier.observe.probe",
    "engine_probe": "courtier.observe.probe",
    "stats_probe": "courtier.observe.probe",
    "ObserveSettings": "courtier.observe.settings",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'courtier.observe' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
