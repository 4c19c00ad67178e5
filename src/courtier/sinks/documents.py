"""Documents as JSON Lines, one object per fetched URL, written by one writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Protocol


class Sink(Protocol):
    """Where a crawl's document records go (one writer: the engine, on its event loop)."""

    def write(self, record: dict[str, Any]) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class DocumentSink:
    """Appends to ``documents.jsonl``; a resumed crawl keeps adding to the same file."""

    def __init__(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.path = out_dir / "documents.jsonl"
        # Header values may carry bytes that are no UTF-8 (surrogate escapes): they are
        # written escaped, never raised on, so no document is lost.
        self._file: IO[str] = self.path.open(
            "a", encoding="utf-8", errors="backslashreplace", buffering=1 << 16
        )
        self.written = 0

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.written += 1

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
