"""``courtier url explain``: text and JSON output, stdin input, errors and exit codes."""

from __future__ import annotations

import io
import json

import pytest

import courtier.cli
from courtier.cli import main


@pytest.fixture(autouse=True)
def _only_the_url_command(monkeypatch: pytest.MonkeyPatch) -> None:
    # The CLI imports every command module; test this one without depending on the others.
    monkeypatch.setattr(courtier.cli, "COMMAND_MODULES", ("url",))


def _json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_explain_json_prints_one_object_per_url_with_the_documented_keys(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["url", "explain", "--json", "HTTPS://Media.S3.SimStore.test.:443/a/../img.png#x"])
    rows = _json_lines(capsys.readouterr().out)
    assert code == 0
    assert rows == [
        {
            "input": "HTTPS://Media.S3.SimStore.test.:443/a/../img.png#x",
            "url": "https://media.s3.simstore.test/img.png",
            "host": "media.s3.simstore.test",
            "site": "media.s3.simstore.test",
            "registrable_domain": "simstore.test",
            "store": {"provider": "simstore", "bucket": "media", "key": "img.png", "region": None},
            "error": None,
        }
    ]


def test_explain_continues_past_a_bad_url_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["url", "explain", "--json", "ftp://x/", "http://0x7f.1:8080/?utm_source=a&b=1"])
    first, second = _json_lines(capsys.readouterr().out)
    assert code == 1
    assert first["error"] == "unsupported scheme 'ftp' (only http and https are crawled)"
    assert first["url"] is None and first["store"] is None
    assert second["error"] is None
    assert second["url"] == "http://127.0.0.1:8080/?b=1"
    assert second["site"] == "127.0.0.1:8080"
    assert second["registrable_domain"] is None


def test_explain_reads_urls_from_stdin_when_given_none(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("http://tŷ.example/\n\n  http://a..b/  \n"))
    code = main(["url", "explain", "--json"])
    rows = _json_lines(capsys.readouterr().out)
    assert code == 1
    assert [row["input"] for row in rows] == ["http://tŷ.example/", "http://a..b/"]
    assert rows[0]["host"] == "xn--t-foa.example"
    assert rows[1]["error"] == "empty label in host 'a..b'"


def test_explain_text_output_shows_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["url", "explain", "https://bkt.s3.eu-west-1.amazonaws.com/a%20b?x=1#f"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines() == [
        "https://bkt.s3.eu-west-1.amazonaws.com/a%20b?x=1#f",
        "  url                 https://bkt.s3.eu-west-1.amazonaws.com/a%20b?x=1",
        "  fetch               https://bkt.s3.eu-west-1.amazonaws.com/a%20b?x=1",
        "  host                bkt.s3.eu-west-1.amazonaws.com",
        "  site                bkt.s3.eu-west-1.amazonaws.com",
        "  registrable_domain  bkt.s3.eu-west-1.amazonaws.com",
        "  store               aws-s3 bucket=bkt key='a b' region=eu-west-1",
    ]


def test_explain_text_output_shows_the_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["url", "explain", "http://[fe80::1%25eth0]/"])
    out = capsys.readouterr().out
    assert code == 1
    assert "error" in out and "zone identifiers are not allowed" in out


def test_explain_without_input_lines_succeeds_quietly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["url", "explain"]) == 0
    assert capsys.readouterr().out == ""


def test_explain_reports_undecodable_stdin_bytes_per_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = io.BytesIO(b"http://ok.example/\nhttp://bad\xff.example/\n")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(raw, encoding="utf-8"))
    code = main(["url", "explain", "--json"])
    rows = _json_lines(capsys.readouterr().out)
    assert code == 1
    assert rows[0]["error"] is None
    assert "not valid Unicode" in str(rows[1]["error"])
