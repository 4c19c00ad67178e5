"""A progress bar for the commands that take a while (``index``, ``export``, ``report``).

Rules: the bar is drawn by rich on standard error, and only when standard error is a
terminal and ``--json`` was not given: a pipe, a file, a CI log or a program reading
``--json`` output gets nothing from it. It is transient (it leaves no line behind), so a
command's own output reads the same with or without it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)


class Advance(Protocol):
    """Tell the bar how far the work is: ``done`` of ``total`` (None: unknown), on ``what``."""

    def __call__(self, done: float, total: float | None = None, what: str = "") -> None: ...


def shows_progress(console: Console, *, json_output: bool = False) -> bool:
    """Whether a bar is drawn: a terminal, and no ``--json``."""
    return console.is_terminal and not json_output


@contextlib.contextmanager
def progress_bar(
    label: str, *, json_output: bool = False, console: Console | None = None
) -> Iterator[Advance | None]:
    """A bar labelled ``label`` while the block runs (see the module rules); yields the
    ``Advance`` to call as the work goes on, or None when nothing is drawn (the work need
    not measure itself then)."""
    console = console if console is not None else Console(stderr=True)
    if not shows_progress(console, json_output=json_output):
        yield None
        return
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(label, total=None)

        def advance(done: float, total: float | None = None, what: str = "") -> None:
            progress.update(
                task,
                completed=done,
                total=total,
                description=f"{label}: {what}" if what else label,
            )

        yield advance
