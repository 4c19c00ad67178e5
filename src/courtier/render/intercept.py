"""What the browser asks and what the crawler answers: the one seam between a render and
the crawl.

Rules:
- The browser sends nothing itself. Every request a page makes (its document, scripts,
  styles, XHR/fetch, images, fonts) becomes a ``BrowserRequest`` handed to an ``Intercept``,
  which answers with a ``Fulfil`` (the bytes the crawler fetched, or had cached) or an
  ``Abort`` (why the crawler would not send it). Requests no interception can see
  (WebSocket, WebRTC, service workers) are disabled in the browser.
- An ``Intercept`` that raises aborts that request (reason ``intercept-error``); the render
  goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BrowserRequest:
    url: str
    method: str
    resource_type: str
    """CDP's ``Network.ResourceType`` in lower case: ``document``, ``script``,
    ``stylesheet``, ``xhr``, ``fetch``, ``image``, ``font``, ``media``, ``other``..."""
    headers: Mapping[str, str]
    body: bytes | None = None
    navigation: bool = False
    """The page's own top-level document request."""


@dataclass(frozen=True, slots=True)
class Fulfil:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(frozen=True, slots=True)
class Abort:
    reason: str
    """Why the crawler did not send it: ``third-party``, ``robots``, ``guard:<reason>``,
    ``budget``, ``type``, ``intercept-error``..."""


Intercept = Callable[[BrowserRequest], Awaitable[Fulfil | Abort]]


@dataclass(frozen=True, slots=True)
class RenderResult:
    url: str
    html: str | None
    """The rendered DOM (``document.documentElement.outerHTML``) once the page settled;
    None when the render failed before a DOM could be read."""
    error: str | None = None
    """None, or why the render failed: ``timeout``, ``crash``, ``browser-lost``,
    ``no-browser``, ``navigation:<text>``."""
    elapsed: float = 0.0
    """Wall seconds from the render's start to its end (waiting for a page slot excluded)."""
    requests: int = 0
    """Requests the page made (each handed to the intercept once)."""
    title: str | None = None
    """``document.title`` when the DOM was read."""
    final_url: str | None = None
    """``location.href`` when the DOM was read: where redirects (fulfilled 3xx, scripts)
    took the page, the base its relative links resolve against."""
