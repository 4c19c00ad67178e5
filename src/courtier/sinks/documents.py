"""Documents as JSON Lines, one object per fetched URL, written by one writer."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any, Protocol

from courtier.compact_json import dumps_line


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
        # written escaped, never raised on, so no document is lost (``dumps_line``).
        self._file: IO[bytes] = self.path.open("ab", buffering=1 << 16)
        self.written = 0

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(dumps_line(record))
        self.written += 1

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
