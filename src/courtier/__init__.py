"""Courtier: a polite, controlled web crawler.

``from courtier import Crawler, CrawlConfig`` crawls from Python (``courtier.api``; a parse
hook returns a dict of fields or a ``HookResult``, and is given a ``HookPage``). Those
names are imported on first use, so ``import courtier`` (and ``courtier --version``) stays
cheap. The version is written here and nowhere else (pyproject.toml reads it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "CrawlConfig",
    "CrawlStats",
    "Crawler",
    "HookPage",
    "HookResult",
    "InputError",
    "__version__",
]

_LAZY = {
    "Crawler": "courtier.api",
    "CrawlConfig": "courtier.api",
    "CrawlStats": "courtier.api",
    "HookPage": "courtier.content.hook",
    "HookResult": "courtier.content.hook",
    "ConfigError": "courtier.config",
    "InputError": "courtier.inputs",
}

if TYPE_CHECKING:
    from courtier.api import CrawlConfig, Crawler, CrawlStats
    from courtier.config import ConfigError
    from courtier.content.hook import HookPage, HookResult
    from courtier.inputs import InputError


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'courtier' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
