"""documents.jsonl: one compact JSON object a line, whatever bytes a header carried."""

from __future__ import annotations

import json
from pathlib import Path

from courtier.sinks.documents import DocumentSink


def test_records_are_compact_lines_and_a_lone_surrogate_is_written_escaped(tmp_path: Path):
    sink = DocumentSink(tmp_path)
    sink.write({"url": "http://a.test/café", "status": 200, "links": [], "n": 2**70})
    sink.write({"url": "http://a.test/", "server": "caf\udce9"})  # a header byte, no UTF-8
    sink.close()
    lines = sink.path.read_bytes().splitlines()
    assert (
        lines[0]
        == '{"url":"http://a.test/café","status":200,"links":[],"n":1180591620717411303424}'.encode()
    )
    assert lines[1] == b'{"url":"http://a.test/","server":"caf\\udce9"}'
    assert json.loads(lines[1])["server"] == "caf\udce9"
