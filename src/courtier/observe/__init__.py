"""Seeing a crawl: the request log (Parquet, DuckDB, ClickHouse), Prometheus metrics,
anomaly detection per site and origin, progress, and the HTML report.

The engine hands every request to an ``Observation`` (its ``Observer``); see
``observation.py`` for the theory of operation and ``docs/observe.md`` for the outputs.
"""

from courtier.observe.anomaly import Anomaly, AnomalyDetector
from courtier.observe.observation import Observation
from courtier.observe.probe import CrawlSample, engine_probe, stats_probe
from courtier.observe.settings import ObserveSettings

__all__ = [
    "Anomaly",
    "AnomalyDetector",
    "CrawlSample",
    "Observation",
    "ObserveSettings",
    "engine_probe",
    "stats_probe",
]
