"""The server-side request log: one JSON object per line, one line per request received.

Rules:
- Times are `time.time()` seconds: `start` when the request's headers were parsed, `end` when
  the last byte of the response was handed to the transport. `arrived_after` is there only
  when the server's loop had stood still before `start` (``stalls``): the request may have
  arrived as early as that.
- `host` is the Host header exactly as sent; `target` is the raw path and query as sent.
- One log per run: opening it truncates the file.
- Lines are buffered in memory and written in batches (`flush`); `close` writes what is left.
  A reader tolerates a truncated last line (a killed server), and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

FLUSH_LINES = 2_000
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass(frozen=True, slots=True)
class RequestRecord:
    start: float
    end: float
    server: str  # "address:port" that accepted the connection
    host: str  # the Host header as sent
    method: str
    target: str  # raw path and query
    status: int
    bytes: int  # body bytes sent
    cache: str | None  # X-Cache value, when the server is a cache
    bucket: str | None  # object-store bucket, when the server is the store
    ua: str  # User-Agent as sent
    canary: bool  # the request reached the canary: an SSRF escape
    retry_until: float | None = None  # set on 429/503 answers that carry Retry-After
    arrived_after: float | None = None  # set when the server had stalled: earliest arrival

    @property
    def earliest(self) -> float:
        """The earliest the request may have arrived (its stamp, unless the server stalled)."""
        return self.start if self.arrived_after is None else self.arrived_after

    def to_json(self) -> dict[str, object]:
        # Spelled out: dataclasses.asdict costs several times more, on the server's hot path.
        data: dict[str, object] = {
            "start": self.start,
            "end": self.end,
            "server": self.server,
            "host": self.host,
            "method": self.method,
            "target": self.target,
            "status": self.status,
            "bytes": self.bytes,
            "cache": self.cache,
            "bucket": self.bucket,
            "ua": self.ua,
            "canary": self.canary,
            "retry_until": self.retry_until,
        }
        if self.arrived_after is not None:
            data["arrived_after"] = self.arrived_after
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RequestRecord:
        return cls(**data)  # type: ignore[arg-type]


class RequestLog:
    """Appends records to a JSON-lines file in batches."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: list[str] = []
        self._file: IO[str] | None = path.open("w", encoding="utf-8")
        self.count = 0

    def write(self, record: RequestRecord) -> None:
        self._lines.append(_encode(record.to_json()))
        self.count += 1
        if len(self._lines) >= FLUSH_LINES:
            self.flush()

    def flush(self) -> None:
        if self._file is None or not self._lines:
            return
        self._file.write("\n".join(self._lines) + "\n")
        self._file.flush()
        self._lines.clear()

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


def read_log(path: Path) -> Iterator[RequestRecord]:
    """Records in file order. A malformed line raises ValueError unless it is the last one."""
    with path.open(encoding="utf-8") as lines:
        pending: tuple[int, str] | None = None
        for number, line in enumerate(lines, 1):
            if pending is not None:
                yield _parse(*pending)
            pending = (number, line)
        if pending is not None:
            try:
                yield _parse(*pending)
            except ValueError:
                return  # a server killed mid-write leaves at most a partial last line


def _parse(number: int, line: str) -> RequestRecord:
    try:
        return RequestRecord.from_json(json.loads(line))
    except (json.JSONDecodeError, TypeError) as exc:
        raise ValueError(f"request log line {number} is not a request record: {exc}") from exc
