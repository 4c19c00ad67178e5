"""The log of an operator's actions, as the commands that change a store write it.

Every command that changes what a running crawl does (``site``, ``seed add|remove``,
``recrawl``, ``rank --promote``) logs what it did through ``log_action``: the action, its
target and detail, the command line (without the store's address, which may carry a
password) and who ran it (user, machine, process). Running workers read the log to take
the change (``courtier.pipeline.lanes.controls``); ``courtier status`` shows it.
"""

from __future__ import annotations

import getpass
import os
import socket
import sys
from collections.abc import Sequence

from courtier.frontier.base import FrontierStore
from courtier.frontier.controls import ControlAction, OriginControl, SiteControl


def actor() -> str:
    """Who acts: user, machine and process."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "?"
    return f"{user}@{socket.gethostname()}:{os.getpid()}"


def command_line(argv: Sequence[str]) -> str:
    """The command as typed, without the store's address (it may carry a password)."""
    words, hide = ["courtier"], False
    for word in argv:
        if hide:
            words.append("...")
            hide = False
        elif word == "--store":
            words.append(word)
            hide = True
        elif word.startswith("--store="):
            words.append("--store=...")
        else:
            words.append(word)
    return " ".join(words)


def log_action(
    store: FrontierStore,
    action: str,
    target: str,
    detail: dict[str, object],
    now: float,
    *,
    control: SiteControl | OriginControl | None = None,
    states: dict[str, str] | None = None,
) -> int:
    """Log an action (and write what it changes) in one transaction."""
    entry = ControlAction(action, target, detail, command_line(sys.argv[1:]), actor(), now)
    return store.record_control(entry, control, states)
