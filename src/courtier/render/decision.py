"""When a page is rendered: ``never``, ``auto`` or ``always``, per crawl, per site and per
URL rule, and the reason a person reads in the document and the request log.

Rules:
- An operator's controls of the site (``courtier site render``, ``SiteRender``) come first,
  over the configuration: the first of its URL rules found in the URL, else its mode.
- Then the configuration: the first URL rule whose pattern is found in the URL wins; else
  the mode of the site (exactly as named: ``www.example.org`` and ``example.org`` are two
  entries); else the crawl's mode.
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


Compiled = tuple[tuple[re.Pattern[str], RenderMode], ...]


def compile_rules(rules: Iterable[str]) -> Compiled:
    """``"REGEX => MODE"`` strings, compiled (ValueError or re.error when one is bad)."""
    return tuple((re.compile(p), m) for p, m in map(split_rule, rules))


@dataclass(frozen=True, slots=True)
class SiteRender:
    """An operator's render controls of one site, over the configuration."""

    mode: RenderMode | None = None
    rules: Compiled = ()

    @classmethod
    def of(cls, mode: str | None, rules: Iterable[str] = ()) -> SiteRender:
        return cls(None if mode is None else RenderMode(mode), compile_rules(rules))


@dataclass(frozen=True, slots=True)
class RenderRules:
    mode: RenderMode = RenderMode.AUTO
    sites: Mapping[str, RenderMode] = field(default_factory=dict)
    rules: Compiled = ()

    @classmethod
    def of(cls, mode: str, sites: Iterable[str] = (), rules: Iterable[str] = ()) -> RenderRules:
        """From the configuration's strings (``"HOST => MODE"``, ``"REGEX => MODE"``)."""
        by_site = dict(split_rule(rule) for rule in sites)
        compiled = compile_rules(rules)
        return cls(
            RenderMode(mode), {h.lower().rstrip("."): m for h, m in by_site.items()}, compiled
        )

    def mode_for(
        self, site: str, url: str, operator: SiteRender | None = None
    ) -> tuple[RenderMode, str]:
        """The mode for ``url`` of ``site`` and where it comes from (``operator``: the
        site's controls, if any)."""
        if operator is not None:
            for pattern, mode in operator.rules:
                if pattern.search(url):
                    return mode, f"operator's rule {pattern.pattern}"
            if operator.mode is not None:
                return operator.mode, f"operator's site {site}"
        for pattern, mode in self.rules:
            if pattern.search(url):
                return mode, f"rule {pattern.pattern}"
        own = self.sites.get(site)
        if own is not None:
            return own, f"site {site}"
        return self.mode, "crawl"

    def decide(
        self,
        site: str,
        url: str,
        shell: str | None,
        *,
        available: bool,
        operator: SiteRender | None = None,
    ) -> RenderDecision | None:
        """Render ``url``? None when there is nothing to say (``never``, or ``auto`` and
        not a shell): the page is what it is."""
        mode, source = self.mode_for(site, url, operator)
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
