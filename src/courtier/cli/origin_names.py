"""Which origin an operator's word names, as a crawl's store knows its origins.

Rules (``courtier origins limit NAME|SITE`` and ``courtier status --origin NAME|SITE``):
- A site books on the origin its operator placed it on (``origins pin|split``), else on the
  one inference stored for it (``origins explain`` shows both).
- ``NAME`` is an origin's id as ``origins list|explain`` prints it (``addr:…``, ``hdr:…``,
  ``site:…``, ``pin:…``, ``own:…``; an ``origin:`` prefix, as in ``[limits] overrides``, is
  allowed), or a pin's bare name (``pair`` for ``pin:pair``), or a site of the store (its
  origin), tried in that order. Naming none of these is a usage error.
"""

from __future__ import annotations

from courtier.cli.store_input import UsageError, parse_host
from courtier.frontier.base import FrontierStore


def origins_of_sites(store: FrontierStore) -> dict[str, str]:
    """Each site's origin: the operator's, else the inferred one."""
    placed = dict(store.origins())
    for site, control in store.site_controls().items():
        if control.origin is not None:
            placed[site] = control.origin
    return placed


def members(placed: dict[str, str], origin: str) -> list[str]:
    return sorted(site for site, on in placed.items() if on == origin)


def resolve_origin(store: FrontierStore, text: str) -> str:
    """The origin ``text`` names (see the module's rules); UsageError when none."""
    name = text.strip().lower()
    name = name.removeprefix("origin:")
    if not name:
        raise UsageError("empty origin name")
    placed = origins_of_sites(store)
    known = set(placed.values()) | set(store.origin_controls())
    if name in known:
        return name
    if f"pin:{name}" in known:
        return f"pin:{name}"
    try:
        site = parse_host(name).site
    except UsageError:
        site = None
    if site is not None and site in placed:
        return placed[site]
    raise UsageError(
        f"{text!r}: no origin of this store is named so, and no site of it is on one "
        "(courtier origins list names them)"
    )
