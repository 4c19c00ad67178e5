"""When a page is rendered: ``never``, ``auto`` or ``always``, per crawl, per site and per
URL rule, and the reason a person reads in the document and the request log.

Rules:
- The first URL rule whose pattern is found in the URL wins; else the mode of the site
  (exactly as named: ``www.example.org`` and ``example.org`` are two entries); else the
  crawl's mode.
- ``always`` renders every HTML page; ``auto`` renders a page that looks like an
  application shell (``content.shell``); ``never`` renders nothing.
- A page that would be rendered where no browser is available is not, and says so.
- Pure: no browser, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class RenderMode(StrEnum):
    NEVER = "never"
    AUTO = "auto"
    ALWAYS = "always"


@dataclass(frozen=True, slots=True)
class RenderDecision:
    render: bool
    reason: str


def split_rule(rule: str) -> tuple[str, RenderMode]:
    """``"LEFT => MODE"`` as (LEFT, mode); ValueError when it is not of that form."""
    left, arrow, mode = rule.rpartition("=>")
    if not arrow or not left.strip():
        raise ValueError(f"{rule!r} is not of the form 'PATTERN => MODE'")
    try:
        return left.strip(), RenderMode(mode.strip())
    except ValueError:
        modes = ", ".join(m.value for m in RenderMode)
        raise ValueError(f"{rule!r}: the mode must be one of {modes}") from None


@dataclass(frozen=True, slots=True)
class RenderRules:
    mode: RenderMode = RenderMode.AUTO
    sites: Mapping[str, RenderMode] = field(default_factory=dict)
    rules: tuple[tuple[re.Pattern[str], RenderMode], ...] = ()

    @classmethod
    def of(cls, mode: str, sites: Iterable[str] = (), rules: Iterable[str] = ()) -> RenderRules:
        """From the configuration's strings (``"HOST => MODE"``, ``"REGEX => MODE"``)."""
        by_site = dict(split_rule(rule) for rule in sites)
        compiled = tuple((re.compile(p), m) for p, m in map(split_rule, rules))
        return cls(
            RenderMode(mode), {h.lower().rstrip("."): m for h, m in by_site.items()}, compiled
        )

    def mode_for(self, site: str, url: str) -> tuple[RenderMode, str]:
        """The mode for ``url`` of ``site`` and where it comes from."""
        for pattern, mode in self.rules:
            if pattern.search(url):
                return mode, f"rule {pattern.pattern}"
        own = self.sites.get(site)
        if own is not None:
            return own, f"site {site}"
        return self.mode, "crawl"

    def decide(
        self, site: str, url: str, shell: str | None, *, available: bool
    ) -> RenderDecision | None:
        """Render ``url``? None when there is nothing to say (``never``, or ``auto`` and
        not a shell): the page is what it is."""
        mode, source = self.mode_for(site, url)
        if mode is RenderMode.NEVER or (mode is RenderMode.AUTO and shell is None):
            return None
        why = f"always ({source})" if mode is RenderMode.ALWAYS else f"auto: shell ({shell})"
        if not available:
            return RenderDecision(False, f"{why}; no browser")
        return RenderDecision(True, why)

    @property
    def may_render(self) -> bool:
        """Whether any page of the crawl could be rendered."""
        return self.mode is not RenderMode.NEVER or any(
            m is not RenderMode.NEVER for m in (*self.sites.values(), *(m for _, m in self.rules))
        )
