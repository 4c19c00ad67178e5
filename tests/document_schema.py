"""The published schema of a document record (``docs/documents.schema.json``), as tests hold
records to it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "docs" / "documents.schema.json"


def validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_errors(records: Iterable[dict[str, Any]]) -> list[str]:
    """Every way ``records`` break the schema, one line each (url: path: message)."""
    check = validator()
    found = []
    for record in records:
        for error in check.iter_errors(record):
            where = "/".join(str(part) for part in error.absolute_path)
            found.append(f"{record.get('url')}: {where}: {error.message[:300]}")
    return found
