"""Every bad input in the table of docs/cli.md: exit status 2, the documented one-line message
naming the input, no traceback, nothing started.

The table is the list of cases: a row is a command line (run in a directory holding the
files of ``FILES``) and the message it prints, ``…`` standing for any text. After changing a
message, rewrite the table with ``python tests/cli/test_bad_inputs.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from courtier.cli import main

DOCS = Path(__file__).parent.parent.parent / "docs" / "cli.md"
BEGIN, END = "<!-- bad-inputs -->", "<!-- /bad-inputs -->"

FILES = {
    "seeds.txt": "a.test\n",
    "comments.txt": "# no seed here\n",
    "notadb.sqlite3": "this is not a database\n",
    "robots.txt": "User-agent: *\nDisallow: /private\n",
    "hosts.txt": "a.test\n",
    "quoted.toml": '[crawl]\nparse_workers = "3"\n',
    "range.toml": "[crawl]\nmax_in_flight = -1\n",
    "typo.toml": "[crawl]\nmax_in_fligth = 3\n",
    "section.toml": "[crawler]\nmax_depth = 3\n",
    "broken.toml": "[crawl\nmax_depth = 3\n",
    "inline.toml": "[limits]\norigin = { rate = -1 }\n",
    "table.toml": "[limits]\norigin = 3\n",
    "split.toml": "[frontier]\nsplit_floor = 0.95\nsplit_ceiling = 0.5\n",
    "bad.json": '{"crawl": {"max_depth": "3"}}\n',
    "a-dir/keep": "",
}


def make_files(directory: Path) -> None:
    for name, text in FILES.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def table_rows() -> list[tuple[str, str]]:
    text = DOCS.read_text(encoding="utf-8")
    table = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    rows = []
    for line in table.strip().splitlines()[2:]:
        cells = re.findall(r"`((?:[^`\\]|\\.)*)`", line)
        assert len(cells) == 2, line
        rows.append((cells[0].replace("\\|", "|"), cells[1].replace("\\|", "|")))
    return rows


def split(command: str) -> tuple[dict[str, str], list[str]]:
    """``NAME=VALUE ... courtier ARGS``: the environment and the arguments."""
    words = shlex.split(command)
    env = {}
    while "=" in words[0] and words[0] != "courtier":
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words.pop(0) == "courtier", command
    return env, words


def run(command: str) -> tuple[int, str, str]:
    """Run one command line in-process: exit status, stdout, stderr."""
    env, args = split(command)
    out, err = io.StringIO(), io.StringIO()
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return code, out.getvalue(), err.getvalue()


def matches(documented: str, actual: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in documented.split("…"))
    return re.fullmatch(pattern, actual) is not None


ROWS = table_rows()


@pytest.fixture(autouse=True)
def nothing_starts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """A case that got past the checks would start a crawl or a simulated web: fail instead."""

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("bad input was accepted: something started")

    monkeypatch.setattr("courtier.pipeline.engine.Engine.run", refuse)
    monkeypatch.setattr("courtier.simweb.process.SimWebProcess.__enter__", refuse)
    for name in [n for n in os.environ if n.startswith("COURTIER_")]:
        monkeypatch.delenv(name)
    make_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    yield


def test_the_table_tries_at_least_forty_bad_inputs() -> None:
    assert len(ROWS) >= 40
    assert len({command for command, _ in ROWS}) == len(ROWS)


@pytest.mark.parametrize(("command", "message"), ROWS, ids=[c for c, _ in ROWS])
def test_bad_input_is_one_line_naming_it_with_exit_status_2(command: str, message: str) -> None:
    code, out, err = run(command)
    assert code == 2, (out, err)
    assert out == ""
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert matches(message, err.rstrip("\n")), f"documented: {message}\nactual:     {err}"


def _write_table() -> None:
    """Rewrite the messages of the table in docs/cli.md from what the commands print."""
    import courtier.pipeline.engine
    import courtier.simweb.process

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("bad input was accepted: something started")

    courtier.pipeline.engine.Engine.run = refuse  # type: ignore[method-assign,assignment]
    courtier.simweb.process.SimWebProcess.__enter__ = refuse  # type: ignore[method-assign,assignment]
    lines = ["| input | message |", "|---|---|"]
    with tempfile.TemporaryDirectory() as directory:
        make_files(Path(directory))
        os.chdir(directory)
        for command, _old in ROWS:
            _code, _out, err = run(command)
            message = re.sub(r"\(known: [^)]*\)", "(known: …)", err.strip())
            message = re.sub(r"\(choose from '[^)]{40,}\)", "(choose from …)", message)
            cells = [text.replace("|", "\\|") for text in (command, message)]
            lines.append(f"| `{cells[0]}` | `{cells[1]}` |")
    text = DOCS.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    _table, tail = rest.split(END, 1)
    DOCS.write_text(f"{head}{BEGIN}\n" + "\n".join(lines) + f"\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(_write_table())
