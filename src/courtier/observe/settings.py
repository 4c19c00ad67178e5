"""What observing a crawl may be told: the ``[observe]`` section of the configuration."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class ObserveSettings:
    """Settings of the request log, metrics, anomaly detection and progress (all optional)."""

    request_log: bool = True
    """Write every request as a row in ``OUT/requests/*.parquet``."""
    flush_seconds: float = 5.0
    """Rows reach a complete Parquet file at least this often (a crash loses at most this)."""
    rotate_seconds: float = 300.0
    """A file holds at most this many seconds of requests, then the next file starts."""
    rotate_rows: int = 250_000
    """... and at most this many rows."""
    rotate_bytes: int = 32 * 1024 * 1024
    """... and at most this much data in memory (Arrow bytes; the file is a few times smaller)."""
    compression: str = "zstd"
    """Parquet codec: zstd, snappy, gzip, lz4 or none."""
    worker: str = ""
    """The worker's name in every row (default: host name and process id)."""

    metrics_port: int | None = None
    """Serve Prometheus metrics on this port (0: any free port; None: no server)."""
    metrics_host: str = "127.0.0.1"

    anomalies: bool = True
    """Watch every site and origin for drift; raised anomalies go to ``OUT/anomalies.jsonl``."""
    anomaly_band: float = 4.0
    """Deviations (EWMA standard deviations) a signal must move beyond its baseline."""
    anomaly_latency_ratio: float = 2.0
    """... and latency must be at least this many times its baseline ..."""
    anomaly_latency_min_rise: float = 0.05
    """... and at least this many seconds above it (loopback jitter is no anomaly)."""
    anomaly_rate_min_rise: float = 0.4
    """An error or 429/503 share must rise at least this much above its baseline."""
    anomaly_persist: int = 2
    """Samples (requests, or rate windows) in a row beyond the band before one is raised."""
    anomaly_rate_window: float = 10.0
    """Seconds per window of achieved rate (cost units) against the budget."""
    anomaly_budget_tolerance: float = 0.05
    """Over budget: more than budget x window x (1 + this) + one request's cost in a window."""
    anomaly_relearn: float = 600.0
    """Seconds a raised anomaly may last before its level becomes the new baseline."""
    anomaly_hold: float = 60.0
    """A raised anomaly clears no sooner than this many seconds after it was raised (and
    after a sustained recovery): the same anomaly is raised at most once per this long."""
    anomaly_slowdown: bool = False
    """Ask the engine to slow a site's origin down when an anomaly is raised on it."""

    live: bool = True
    """A live view (rich) on a terminal; without one, a log line every ``progress_seconds``."""
    progress_seconds: float = 30.0
    sample_seconds: float = 2.0
    """Gauges (in flight, queues) are sampled this often, into metrics and ``OUT/samples.jsonl``."""
    stats_seconds: float = 10.0
    """``OUT/stats.json`` is rewritten this often (and at the end)."""
    frontier_seconds: float = 5.0
    """The frontier store's URLs are counted by status (a query on the store's thread) at
    most this often, and never more than 2% of the time (0: only at the end)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"observe.{f.name} must be a finite number >= 0, got {value}")
        for name in ("flush_seconds", "rotate_seconds", "sample_seconds", "anomaly_rate_window"):
            if getattr(self, name) <= 0:
                raise ValueError(f"observe.{name} must be positive")
        if self.rotate_rows < 1 or self.rotate_bytes < 1:
            raise ValueError("observe.rotate_rows and observe.rotate_bytes must be positive")
        if self.flush_seconds > self.rotate_seconds:
            raise ValueError("observe.flush_seconds must not exceed observe.rotate_seconds")
        if self.compression not in ("zstd", "snappy", "gzip", "lz4", "none"):
            raise ValueError(f"observe.compression {self.compression!r} is not a Parquet codec")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"observe.metrics_port {self.metrics_port} is not a port")
        if self.anomaly_persist < 1:
            raise ValueError("observe.anomaly_persist must be at least 1")
        if self.anomaly_latency_ratio < 1:
            raise ValueError("observe.anomaly_latency_ratio must be at least 1")
