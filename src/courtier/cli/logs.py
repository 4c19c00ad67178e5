"""Logging for the command line: stderr, as text lines or as one JSON object per line.

``-v`` shows INFO, ``-vv`` DEBUG; the default shows warnings and errors. ``--log-format json``
writes ``{"time", "level", "logger", "message"}`` (plus ``"error"`` with the traceback of a
logged exception), for log shippers. A process whose root logger already has handlers (an
embedding program, a test runner) keeps them.
"""

from __future__ import annotations

import json
import logging
import time

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):  # structured figures (progress, anomalies) as fields
            document.update({k: v for k, v in fields.items() if k not in document})
        if record.exc_info:
            document["error"] = self.formatException(record.exc_info)
        return json.dumps(document, ensure_ascii=False, default=str)


def configure_logging(verbosity: int, log_format: str) -> None:
    handler = logging.StreamHandler()  # stderr
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    level = logging.WARNING - 10 * min(verbosity, 2)
    logging.basicConfig(level=level, handlers=[handler])
