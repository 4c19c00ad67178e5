"""The open-file limit a crawl runs under: raised to what the system allows, and shared out.

Rules:
- At start the soft limit on open files is raised to the hard limit (a default soft limit of
  1,024 against thousands of sites made fetches fail with "too many open files").
- Every request in flight, parse worker, browser, store and output file holds descriptors;
  ``reserved`` counts them from the settings. What the limit leaves beyond them bounds the
  idle connections kept alive (``net.pool``); a limit below ``reserved`` is said once, with
  what to change.
- Nothing here raises: a platform without ``resource`` (or a limit it will not change) is
  taken as it is.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

FIXED = 128
"""Descriptors any crawl holds besides its requests: the store and its journal, WARC,
request-log and document files, the event loop's own, DNS sockets, standard streams."""
PER_WORKER = 4
"""A parse worker's socket pair and pipes."""
PER_BROWSER = 16
"""A browser's debugging pipe, its reaper's and the files the crawler reads of it."""
UNLIMITED = 1 << 20
"""What an unlimited limit counts as."""


def raise_limit() -> int:
    """Raise the soft open-file limit to the hard one; the soft limit now in force."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return UNLIMITED
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = UNLIMITED
    if soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as error:
            log.info("open-file limit left at %d (raising it to %d failed: %s)", soft, hard, error)
    return UNLIMITED if soft == resource.RLIM_INFINITY else soft


def reserved(*, in_flight: int, workers: int, browsers: int) -> int:
    """Descriptors the crawl may hold at once besides idle connections."""
    return FIXED + in_flight + PER_WORKER * workers + PER_BROWSER * browsers


def idle_budget(limit: int, need: int, wanted: int) -> int:
    """Idle connections to keep: ``wanted``, or what ``limit`` leaves beyond ``need``; warns
    once when even ``need`` does not fit."""
    if limit < need:
        log.warning(
            "the open-file limit (%d, its hard limit too) is below what these settings can "
            "hold at once (%d): fetches may fail with 'too many open files'; raise the limit "
            "(ulimit -Hn, LimitNOFILE=) or lower [crawl] max_in_flight and [media] "
            "max_in_flight",
            limit,
            need,
        )
    return max(0, min(wanted, limit - need))
