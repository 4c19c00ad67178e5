"""Fixtures for the controlled-crawl command tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import Run, build_store

from courtier.cli import main


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return build_store(tmp_path / "frontier.sqlite3")


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """Call ``courtier ARGS...``; the exit code, stdout and stderr."""

    def call(*args: str | Path) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return call
