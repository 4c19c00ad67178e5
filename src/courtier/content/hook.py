"""The parse hook: user code run in the parse worker on each parsed page (``[parse] hook``).

``[parse] hook = "module:function"`` names a function taking one ``HookPage`` (the URL, the
response headers, the parsed tree (selectolax's ``LexborHTMLParser``, None for a PDF or a
feed), the page's text, its title and content type) and returning a dict of extra fields:
they go into the page's document under ``hook``. Or it returns a ``HookResult``: its fields,
and what to do with the page's links (URLs to add, links to drop, a priority for the URLs
the page brings to the frontier), applied by ``hook_links`` in the same worker.

Rules:
- The spec is checked with every other setting (``check_spec``) and the function imported
  once in the crawl's own process before the crawl starts (``load_hook``): a bad name or an
  import error is a one-line error at start, never a failure mid-crawl. Each parse worker
  imports it once, in its warm-up. The current directory is searched for the module too
  (as ``python -m`` would), so a ``hooks.py`` beside the crawl is found.
- The hook runs under its own time budget (``[parse] hook_timeout``: an interval timer in the
  worker, whose jobs run in its main thread), inside the pool's budget for the page.
- Whatever the hook does, the page is kept: an exception, a timeout, a result that is
  neither a dict with string keys nor a ``HookResult``, values JSON cannot hold (documents
  are JSON Lines; NaN included), a result larger than ``MAX_RESULT_CHARS`` as JSON (or more
  than ``MAX_LINKS`` URLs to add or to drop), a ``HookResult`` whose ``add``, ``drop`` or
  ``priority`` is not what it says, each gives the document a ``hook_error`` (its kind first:
  ``hook-error``, ``hook-timeout``, ``hook-not-dict``, ``hook-not-json``, ``hook-too-large``,
  ``hook-bad-result``), no ``hook`` field and the page's links untouched; the crawl counts
  them by kind.
- From Python (``Crawler(hook=function)``), a function is named by reference
  (``spec_of``): the parse workers are spawned processes that import it by its module and
  name, as ``pickle`` does; a function that cannot be found again that way (a lambda, a
  closure, a bound method, one typed into an interactive session or ``python -c``) is
  refused at once.
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
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from types import FrameType
from typing import Any, Final

from selectolax.lexbor import LexborHTMLParser

from courtier.content.nesting import nesting_cut
from courtier.frontier.base import MAX_PRIORITY

SPEC: Final = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
MAX_RESULT_CHARS: Final = 1_000_000
MAX_LINKS: Final = 10_000
"""URLs a ``HookResult`` may add, and links it may name to drop, on one page."""
HOOK_ERRORS: Final = (
    "hook-error",
    "hook-timeout",
    "hook-not-dict",
    "hook-not-json",
    "hook-too-large",
    "hook-bad-result",
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


@dataclass(frozen=True, slots=True)
class HookResult:
    """What a hook may return instead of a plain dict of fields (``from courtier import
    HookResult``)."""

    fields: dict[str, Any] = field(default_factory=dict)
    """The document's ``hook`` fields, as a plain dict returned would give them."""
    add: Sequence[str] = ()
    """URLs to add to the page's links (absolute, or relative to the page's URL): they go to
    the crawl's intake as the page's own links do (scope, robots.txt, depth, traps)."""
    drop: Sequence[str | re.Pattern[str]] = ()
    """Links to take out of the page before the crawl sees them: a URL (absolute or relative;
    compared once canonicalised) or a compiled pattern (``re.compile``) searched in each
    link's URL. It applies to links, images and the declared canonical, added URLs too."""
    priority: int = 0
    """0 to ``MAX_PRIORITY``: the URLs the page brings to the frontier fall due that many days
    early (``frontier.base.lead_of``), ahead of those found with a lower priority since."""


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


def spec_of(hook: Callable[..., Any]) -> str:
    """The "module:function" name by which a parse worker imports ``hook`` (a spawned process
    finds a function by its module and name, as ``pickle`` does); ``HookError`` saying why
    when it cannot be found again that way."""
    module = getattr(hook, "__module__", None)
    name = getattr(hook, "__qualname__", None)
    if not callable(hook) or not isinstance(module, str) or not isinstance(name, str):
        raise HookError(
            f"{hook!r} is not a function: give a function defined with def at the top level "
            "of a module"
        )
    if "<lambda>" in name:
        raise HookError(
            f"{module}.{name} is a lambda: the parse workers are other processes, which "
            "import the hook by its name; define it with def at the top level of a module"
        )
    if "<locals>" in name:
        raise HookError(
            f"{module}.{name} is defined inside a function: the parse workers are other "
            "processes, which import the hook by its name; define it at the top level of a "
            "module"
        )
    if module == "__main__" and not _main_importable():
        raise HookError(
            f"{name} is defined in a __main__ no other process can import (an interactive "
            "session, python -c, stdin): the parse workers are other processes, which import "
            "the hook by its name; put it in a module or a script file"
        )
    spec = f"{module}:{name}"
    if check_spec(spec) is not None:
        raise HookError(f"{module}.{name} has no name the parse workers can import it by")
    try:
        found = load_hook(spec)
    except HookError as exc:
        raise HookError(f"{module}.{name} cannot be imported by its name: {exc}") from None
    if found is not hook:
        raise HookError(
            f"{module}.{name} is not what that name finds (a bound method, a callable "
            "object, a function replaced or renamed): give a function defined with def at "
            "the top level of a module"
        )
    return spec


def _main_importable() -> bool:
    """Can a spawned process import this one's ``__main__`` (run as ``python -m NAME`` or
    from a script file; not ``python -c``, stdin, a notebook, a shell)?"""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if getattr(spec, "name", None):
        return True
    path = getattr(main, "__file__", None)
    return isinstance(path, str) and os.path.isfile(path)


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


def run_hook(spec: str, page: HookPage, timeout: float) -> tuple[HookResult | None, str | None]:
    """(what the hook gave, checked: its fields a plain JSON dict, ``add`` and ``drop``
    tuples, None) or (None, why it gave nothing: its kind first)."""
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
    given = result if isinstance(result, HookResult) else HookResult(result)
    fields = given.fields
    if not isinstance(fields, dict) or not all(isinstance(key, str) for key in fields):
        return None, f"hook-not-dict: {'fields are' if given is result else 'returned'} " + (
            f"{type(fields).__name__} (a dict of fields or a HookResult)"
        )
    why = _links_problem(given)
    if why is not None:
        return None, why[:300]
    try:
        encoded = json.dumps(fields, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        return None, f"hook-not-json: {' '.join(str(exc).split())}"[:300]
    if len(encoded) > MAX_RESULT_CHARS:
        return None, f"hook-too-large: {len(encoded)} characters of JSON"
    plain: dict[str, Any] = json.loads(encoded)
    return HookResult(plain, tuple(given.add), tuple(given.drop), given.priority), None


def _is(item: object, kinds: tuple[type, ...]) -> bool:
    """Is ``item`` of ``kinds`` (a pattern: of text, not bytes)?"""
    if isinstance(item, re.Pattern):
        return re.Pattern in kinds and isinstance(item.pattern, str)
    return isinstance(item, kinds)


def _links_problem(result: HookResult) -> str | None:
    """Why a ``HookResult``'s ``add``, ``drop`` or ``priority`` cannot be used (None: fine)."""
    for name, items, kinds in (
        ("add", result.add, (str,)),
        ("drop", result.drop, (str, re.Pattern)),
    ):
        if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple, set, frozenset)):
            return f"hook-bad-result: {name} is {type(items).__name__}, not a list"
        if len(items) > MAX_LINKS:
            return f"hook-too-large: {len(items)} URLs to {name} (at most {MAX_LINKS})"
        wrong = next((item for item in items if not _is(item, kinds)), None)
        if wrong is not None:
            what = "URL strings" if name == "add" else "URL strings or re.compile patterns"
            kind = "a bytes pattern" if isinstance(wrong, re.Pattern) else type(wrong).__name__
            return f"hook-bad-result: {name} holds {kind}, not only {what}"
    priority = result.priority
    if isinstance(priority, bool) or not isinstance(priority, int):
        return f"hook-bad-result: priority is {type(priority).__name__}, not an int"
    if not 0 <= priority <= MAX_PRIORITY:
        return f"hook-bad-result: priority {priority} is not from 0 to {MAX_PRIORITY}"
    return None


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
