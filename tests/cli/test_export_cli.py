"""``courtier export`` and the ``documents`` / ``texts`` views of ``courtier query``, over
document segments with the shapes a crawl writes: fields only some records have (a PDF's
text, a hook's struct written late), nested lists, a segment left open with a member cut by a
crash, and an older version's ``documents.jsonl`` beside segments."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import duckdb
import pytest

from courtier.cli import main
from courtier.sinks.documents import DocumentSink
from courtier.sinks.warc import compress_member

RECORDS = [
    {"url": "http://a.test/", "site": "a.test", "status": 200, "content_type": "text/html",
     "title": "Home", "links": ["http://a.test/x", "http://a.test/y"]},
    {"url": "http://a.test/x", "site": "a.test", "status": 404, "content_type": "text/html"},
    {"url": "http://a.test/m.pdf", "site": "a.test", "status": 200,
     "content_type": "application/pdf", "format": "pdf", "title": "Manual",
     "text": "Unpack the lamp.", "links": []},
] + [
    {"url": f"http://b.test/{n}", "site": "b.test", "status": 200, "content_type": "text/html",
     "links": []}
    for n in range(30)
] + [
    {"url": "http://b.test/late", "site": "b.test", "status": 200, "content_type": "text/html",
     "hook": {"price": 12.5, "tags": ["a", "b"]}, "links": []},
]  # fmt: skip


def _out(tmp_path: Path, cut_last: bool = False) -> Path:
    out = tmp_path / "crawl-out"
    out.mkdir()
    sink = DocumentSink(out, segment_bytes=1 << 16)
    for n, record in enumerate(RECORDS):
        sink.write(record)
        if n % 10 == 9:
            sink.flush()  # a member each
    sink.close()
    if cut_last:  # a crash mid-write: the segment left open, its last member cut short
        (segment,) = sink.finished
        cut = compress_member(b'{"url": "http://b.test/cut", "status": 200}\n', 2)[:-9]
        segment.rename(segment.with_name(segment.name + ".open"))
        with segment.with_name(segment.name + ".open").open("ab") as file:
            file.write(cut)
    return out


def _run(*args: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(list(args))
    return code, stdout.getvalue(), stderr.getvalue()


def test_parquet_export_is_read_back_by_duckdb_with_every_field(tmp_path: Path) -> None:
    out = _out(tmp_path, cut_last=True)
    code, _stdout, stderr = _run("export", "--out", str(out), "--format", "parquet")
    assert code == 0, stderr
    target = out / "export" / "documents.parquet"
    assert f"{len(RECORDS)} documents" in stderr
    con = duckdb.connect()
    rows = con.execute(
        f"SELECT url, text, hook.price, hook.tags, len(links) FROM read_parquet('{target}')"
    ).fetchall()
    assert [r[0] for r in rows] == [r["url"] for r in RECORDS]
    by_url = {r[0]: r for r in rows}
    assert by_url["http://a.test/m.pdf"][1] == "Unpack the lamp."
    assert by_url["http://b.test/late"][2:4] == (12.5, ["a", "b"])  # a field seen last
    assert by_url["http://a.test/"][4] == 2
    assert not list((out / "export").glob(".*"))  # no partial file left beside it


def test_csv_and_jsonl_with_a_where_condition(tmp_path: Path) -> None:
    out = _out(tmp_path)
    target = tmp_path / "ok.csv"
    code, _out_text, stderr = _run(
        "export", "--out", str(out), "--format", "csv", "--where", "site = 'a.test'",
        "-o", str(target),
    )  # fmt: skip
    assert code == 0, stderr
    with target.open() as lines:
        rows = list(csv.DictReader(lines))
    assert [row["url"] for row in rows] == [r["url"] for r in RECORDS if r["site"] == "a.test"]
    code, stdout, stderr = _run(
        "export", "--out", str(out), "--format", "jsonl", "--view", "texts", "-o", "-"
    )
    assert code == 0, stderr
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert [(d["url"], d["text"]) for d in lines] == [("http://a.test/m.pdf", "Unpack the lamp.")]


def test_query_has_documents_and_texts_views(tmp_path: Path) -> None:
    out = _out(tmp_path)
    code, stdout, _ = _run(
        "query", "--out", str(out), "--json",
        "SELECT (SELECT count(*) FROM documents) AS documents,"
        " (SELECT count(*) FROM texts) AS texts",
    )  # fmt: skip
    assert code == 0
    assert json.loads(stdout) == {"documents": len(RECORDS), "texts": 1}


def test_a_run_without_documents_or_texts_has_empty_views(tmp_path: Path) -> None:
    out = tmp_path / "crawl-out"
    out.mkdir()
    code, stdout, _ = _run(
        "query", "--out", str(out), "--json",
        "SELECT (SELECT count(*) FROM documents) + (SELECT count(*) FROM texts) AS n",
    )  # fmt: skip
    assert code == 0 and json.loads(stdout) == {"n": 0}
    sink = DocumentSink(out)
    sink.write(RECORDS[0])  # no text anywhere
    sink.close()
    code, stdout, _ = _run("query", "--out", str(out), "--json", "SELECT count(*) AS n FROM texts")
    assert code == 0 and json.loads(stdout) == {"n": 0}
    code, _stdout, stderr = _run("export", "--out", str(out), "--view", "texts")
    assert code == 0 and "0 documents" in stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--where", "nonsense((("], "courtier export: SQL: "),
        (["--where", "no_such_column = 1"], "courtier export: SQL: "),
        (["-o", "-"], "Parquet is not written to standard output"),
    ],
)
def test_bad_input_is_one_line_and_status_2(tmp_path: Path, args: list[str], message: str) -> None:
    out = _out(tmp_path)
    code, _stdout, stderr = _run("export", "--out", str(out), *args)
    assert code == 2
    assert len(stderr.strip().splitlines()) == 1 and message in stderr
    assert not (out / "export" / "documents.parquet").exists()
    assert not list((out / "export").glob(".*")) if (out / "export").exists() else True


def test_an_older_documents_jsonl_is_read_beside_segments_times_as_rfc_3339(
    tmp_path: Path,
) -> None:
    out = tmp_path / "crawl-out"
    out.mkdir()
    old = {"url": "http://old.test/", "site": "old.test", "fetched_at": 1796675460.563}
    (out / "documents.jsonl").write_text(json.dumps(old) + "\n")
    sink = DocumentSink(out)
    sink.write(
        {"url": "http://new.test/", "site": "new.test", "fetched_at": "2026-12-07T20:41:00.5Z"}
    )
    sink.close()
    code, stdout, stderr = _run(
        "export", "--out", str(out), "--format", "jsonl", "-o", "-", "--where", "true ORDER BY url"
    )
    assert code == 0, stderr
    assert [(d["url"], d["fetched_at"]) for d in map(json.loads, stdout.splitlines())] == [
        ("http://new.test/", "2026-12-07T20:41:00.500Z"),
        ("http://old.test/", "2026-12-07T20:31:00.563Z"),
    ]
    code, stdout, _ = _run(
        "query", "--out", str(out), "--json",
        "SELECT count(*) AS n, min(fetched_at::TIMESTAMPTZ) AS first FROM documents",
    )  # fmt: skip
    assert code == 0 and json.loads(stdout) == {"n": 2, "first": "2026-12-07T20:31:00.563000+00:00"}
