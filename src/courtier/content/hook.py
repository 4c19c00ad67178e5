"""The parse hook: user code run in the parse worker on each parsed page (``[parse] hook``).

``[parse] hook = "module:function"`` names a function taking one ``HookPage`` (the URL, the
response headers, the parsed tree (selectolax's ``LexborHTMLParser``, None for a PDF or a
feed), the page's text, its title and content type) and returning a dict of extra fields:
they go into the page's document under ``hook``.

Rules:
- The spec is checked with every other setting (``check_spec``) and the function imported
  once in the crawl's own process before the crawl starts (``load_hook``): a bad name or an
  import error is a one-line error at start, never a failure mid-crawl. Each parse worker
  imports it once, in its warm-up. The current directory is searched for the module too
  (as ``python -m`` would), so a ``hooks.py`` beside the crawl is found.
- The hook runs under its own time budget (``[parse] hook_timeout``: an interval timer in the
  worker, whose jobs run in its main thread), inside the pool's budget for the page.
- Whatever the hook does, the page is kept: an exception, a timeout, a result that is not a
  dict with string keys, values JSON cannot hold (documents are JSON Lines; NaN included),
  or a result larger than ``MAX_RESULT_CHARS`` as JSON, each gives the document a
  ``hook_error`` (its kind first: ``hook-error``, ``hook-timeout``, ``hook-not-dict``,
  ``hook-not-json``, ``hook-too-large``) and no ``hook`` field; the crawl counts them by kind.
- What reaches the document is the result after a round trip through JSON: plain values
  only, so it always pickles back to the crawl's process.
- A debugging command (``courtier parse``, ``courtier fetch --hook``) runs the hook in its own
  process and wants more than the one-line ``hook_error``: inside ``tracing_hooks()`` the
  traceback of each exception a hook raised is kept too (a crawl's workers never ask).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from types import FrameType
from typing import Any, Final

from selectolax.lexbor import LexborHTMLParser

from courtier.content.nesting import nesting_cut

SPEC: Final = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
MAX_RESULT_CHARS: Final = 1_000_000
HOOK_ERRORS: Final = (
    "hook-error",
    "hook-timeout",
    "hook-not-dict",
    "hook-not-json",
    "hook-too-large",
)


_TRACES: ContextVar[list[str] | None] = ContextVar("courtier_hook_traces", default=None)
"""Where ``run_hook`` keeps the tracebacks of hook errors (None: nobody asked)."""


class HookError(Exception):
    """The hook cannot be used: a bad spec, its module does not import, no such function."""


@dataclass(frozen=True, slots=True)
class HookPage:
    """What a hook is given about one page."""

    url: str
    headers: tuple[tuple[str, str], ...]
    """The response's headers, as received (names in their own case)."""
    tree: LexborHTMLParser | None
    """The page parsed by selectolax (lexbor), from its redacted text; None for a PDF or a
    feed."""
    text: str | None
    """The page's text (a PDF's extracted text; an HTML page's main text when the crawl
    extracts it, else the text of its body)."""
    title: str | None
    content_type: str


def check_spec(spec: str) -> str | None:
    """Why ``spec`` is no "module:function" name (None: it is one, or "": no hook)."""
    if not spec or SPEC.fullmatch(spec):
        return None
    return 'not "module:function" (e.g. "myhooks:extract")'


@lru_cache(maxsize=8)
def load_hook(spec: str) -> Callable[[HookPage], Any]:
    """The function ``spec`` names, imported (once per process)."""
    why = check_spec(spec)
    if why or not spec:
        raise HookError(f"[parse] hook {spec!r}: {why or 'empty'}")
    module_name, _, attribute = spec.partition(":")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.append(here)
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: any error on import is theirs to fix
        raise HookError(
            f"[parse] hook {spec!r}: cannot import {module_name}: {type(exc).__name__}: {exc}"
        ) from None
    for name in attribute.split("."):
        target = getattr(target, name, None)
        if target is None:
            raise HookError(f"[parse] hook {spec!r}: {module_name} has no {attribute}")
    if not callable(target):
        raise HookError(f"[parse] hook {spec!r}: {attribute} is not callable")
    hook: Callable[[HookPage], Any] = target
    return hook


class _HookTimeout(BaseException):
    """Raised into the hook by the timer (a BaseException: a hook's ``except Exception``
    does not swallow it)."""


@contextlib.contextmanager
def _budget(seconds: float) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (main thread only; elsewhere: no budget of its
    own, the pool's applies)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(_signum: int, _frame: FrameType | None) -> None:
        raise _HookTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def tracing_hooks() -> Iterator[list[str]]:
    """Within the block, the traceback of every exception a hook raises (``hook-error``) is
    appended to the list given, in this thread (a debugging command's, not a crawl's)."""
    traces: list[str] = []
    token = _TRACES.set(traces)
    try:
        yield traces
    finally:
        _TRACES.reset(token)


def run_hook(spec: str, page: HookPage, timeout: float) -> tuple[dict[str, Any] | None, str | None]:
    """(the hook's fields, None) or (None, why it gave none: its kind first)."""
    try:
        hook = load_hook(spec)
    except HookError as exc:
        return None, f"hook-error: {exc}"[:300]
    try:
        with _budget(timeout):
            result = hook(page)
    except _HookTimeout:
        return None, f"hook-timeout: over {timeout:g} s"
    except Exception as exc:
        traces = _TRACES.get()
        if traces is not None:  # from the hook's own frame on
            frames = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
            traces.append("".join(traceback.format_exception(type(exc), exc, frames)))
        return None, f"hook-error: {type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
    if not isinstance(result, dict) or not all(isinstance(key, str) for key in result):
        return None, f"hook-not-dict: returned {type(result).__name__}"
    try:
        encoded = json.dumps(result, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        return None, f"hook-not-json: {' '.join(str(exc).split())}"[:300]
    if len(encoded) > MAX_RESULT_CHARS:
        return None, f"hook-too-large: {len(encoded)} characters of JSON"
    fields: dict[str, Any] = json.loads(encoded)
    return fields, None


def hook_page(
    url: str,
    headers: tuple[tuple[str, str], ...],
    html: bytes | None,
    text: str | None,
    title: str | None,
    content_type: str,
) -> HookPage:
    """The ``HookPage`` of a page (``html``: its redacted UTF-8 text, parsed again here: the
    crawl's own tree was stripped of boilerplate for the fingerprint)."""
    tree = None
    if html is not None:
        cut = nesting_cut(html)  # as ``parse_page``: a page nested too deep, up to the cut
        if cut is not None:
            html = html[:cut]
        with contextlib.suppress(ValueError, TypeError):
            tree = LexborHTMLParser(html)
    if text is None and tree is not None and tree.body is not None:
        text = tree.body.text(separator=" ", strip=True)
    return HookPage(url, headers, tree, text, title, content_type)
