"""Mutation testing of the policy rooms with mutmut: every small change the tool makes to a
room's code must fail one of that room's tests, or be written down here as equivalent.

``tools/mutations.py`` breaks a few central promises of the wiring by hand; this script lets
mutmut (pinned in the ``mutation`` extra) break the pure policy code everywhere it can:
operators, comparisons, constants, arguments, return values. Each room is mutated alone and
tested with its own tests only (``tests/origins`` for ``origins/``...), so a run stays short
and its score says which tests hold the room's promises.

A room runs in a scratch directory, ``.mutation/<room>/`` at the repository root (ignored by
git): a copy of ``src`` and ``tests``, the ``pyproject.toml`` with a ``[tool.mutmut]`` section
for the room, and mutmut's own ``mutants/`` copy inside it. The working tree is never
written. Each run starts from a fresh copy (mutmut does not refresh a stale one), so a score is
always of the code as it is.

The score is killed / (mutants - equivalents): a mutant counts as killed when a test failed,
timed out or crashed; as not killed when every test passed ("survived") or no test of the room
ran its code ("no tests"). Survivors judged equivalent (no test can tell them from the original,
because the behaviour is the same) are listed in ``EQUIVALENT`` with their reason and the line
the mutant writes: if mutmut's mutant of that name no longer writes that line (the code moved),
the run says so and counts the mutant like any other.

Run it with the interpreter that runs the tests::

    pip install -e '.[test,mutation]'
    python3 tools/mutation_rooms.py                     # every room (origins about 13 minutes,
                                                        # politeness 10, frontier 10, content 5,
                                                        # scheduling 1, url 4; 2 shared cores)
    python3 tools/mutation_rooms.py origins politeness  # some rooms
    python3 tools/mutation_rooms.py --changed origin/main   # modules changed since the merge
                                                        # base with that ref, in their rooms
    python3 tools/mutation_rooms.py --survivors origins # after new tests: only the last run's
                                                        # survivors, against today's tests
    python3 tools/mutation_rooms.py --report origins    # the last run's scores again
    python3 tools/mutation_rooms.py --list              # the rooms, their modules and tests

The survivors' diffs are written to ``.mutation/<room>/survivors.txt``; ``cd .mutation/<room>``
then ``mutmut show NAME`` or ``mutmut browse`` looks at them. Exit status: 0 when every room
run reached its threshold, 1 when one did not, 2 on an error.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / ".mutation"


@dataclass(frozen=True)
class Room:
    name: str
    mutate: tuple[str, ...]
    """Globs of the modules to mutate, relative to the repository root."""
    skip: tuple[str, ...]
    """Globs of modules under ``mutate`` left out: I/O edges, not policy (each says why below)."""
    tests: tuple[str, ...]
    """The room's tests: paths or node ids, relative to the repository root."""
    threshold: float
    """The least score (killed / (mutants - equivalents)) the room must reach."""
    narrow: tuple[str, ...] = ()
    """pytest arguments that leave out the room's slow end-to-end tests (a crawl of the
    simulated web, a PostgreSQL cluster): each mutant would pay for their setup, and the
    room's unit tests are the ones that must hold its promises."""


ROOMS: tuple[Room, ...] = (
    Room(
        "origins",
        ("src/courtier/origins/*.py",),
        # probe.py opens sockets (the HTTP/TLS probe), store.py is the SQLite table: I/O
        # edges, tested end to end, not the clustering policy.
        ("src/courtier/origins/probe.py", "src/courtier/origins/store.py"),
        ("tests/origins",),
        0.90,
        (
            "--ignore=tests/origins/test_origin_cli.py",
            "--ignore=tests/origins/test_origin_simweb.py",
        ),
    ),
    Room(
        "politeness",
        ("src/courtier/politeness/*.py", "src/courtier/politeness/limiter/*.py"),
        # The SQLite and PostgreSQL limiters are storage: the same GCRA rules as memory.py
        # (which is mutated) run in SQL there.
        (
            "src/courtier/politeness/limiter/sqlite.py",
            "src/courtier/politeness/limiter/postgres.py",
        ),
        ("tests/politeness",),
        0.90,
        ("-k", "not postgres and not sqlite", "--ignore=tests/politeness/test_robots_cli.py"),
    ),
    Room("url", ("src/courtier/url/*.py",), (), ("tests/url",), 0.80),
    Room(
        "frontier",
        ("src/courtier/frontier/*.py",),
        # The stores and what they keep (base.py's protocol and rows, sqlite_store.py,
        # postgres_store.py, controls.py, observations.py, spend.py: SQL and its rows) and
        # fastlane.py (writes to a store) are storage, tested against both stores. fresh.py
        # and sitemaps.py are pure, but not in the room yet (docs/testing.md).
        (
            "src/courtier/frontier/base.py",
            "src/courtier/frontier/*_store.py",
            "src/courtier/frontier/controls.py",
            "src/courtier/frontier/observations.py",
            "src/courtier/frontier/spend.py",
            "src/courtier/frontier/fastlane.py",
            "src/courtier/frontier/fresh.py",
            "src/courtier/frontier/sitemaps.py",
        ),
        (
            "tests/frontier/test_split.py",
            "tests/frontier/test_surface.py",
            "tests/frontier/test_refresh.py",
            "tests/frontier/test_fingerprint.py",
            "tests/frontier/test_traps.py",
            "tests/frontier/test_traps_fast.py",
            "tests/frontier/test_dedup.py",
        ),
        0.80,
        # Two checks of the whole of Unicode (17 and 8 s each, alone) hold the volatile-token
        # regex's character classes, not a mutant: every fingerprint mutant would pay for them.
        (
            "-k",
            "not test_a_stand_in_lower_cased_is_the_stand_in_of_the_lower_case"
            " and not test_every_character_alone_or_beside_an_underscore",
        ),
    ),
    Room(
        "content",
        tuple(
            f"src/courtier/content/{name}.py"
            for name in ("canonical", "decode", "duplicates", "simhash", "nesting")
        ),
        # Only these five modules: the rest of content/ parses with lexbor and resiliparse,
        # runs a user's hook (hook.py) or a language model (language.py), reads PDFs and feeds:
        # wiring around libraries, tested end to end.
        (),
        (
            "tests/content/test_canonical.py",
            "tests/content/test_decode.py",
            "tests/content/test_duplicates.py",
            "tests/content/test_nesting.py",
            "tests/content/test_simhash.py",
            "tests/content/test_text.py",
            "tests/pipeline/test_reading.py",
            "tests/pipeline/test_parse.py",
        ),
        0.80,
        # A 20 MB page parsed in full (17 s alone) holds the parse's bound, not these modules.
        ("-k", "not test_a_20_mb_ordinary_page_is_bounded"),
    ),
    Room(
        "scheduling",
        tuple(
            f"src/courtier/pipeline/scheduling/{name}.py"
            for name in (
                "budget",
                "concurrency",
                "key_waits",
                "ready_line",
                "send_spacing",
                "start_gate",
            )
        ),
        # The rest of scheduling/ runs the event loop or a limiter: scheduler.py, booker.py,
        # hops.py, launch.py and lane_moves.py (asyncio tasks and the scheduler's calls),
        # clocks.py (the limiter's front, writing through the store), timer.py (the clock),
        # lanes.py (types and the lane's task).
        (),
        (
            "tests/pipeline/test_budget_counts_fast.py",
            "tests/pipeline/test_budget_fast.py",
            "tests/pipeline/test_concurrency_fast.py",
            "tests/pipeline/test_key_waits_fast.py",
            "tests/pipeline/test_ready_line_fast.py",
            "tests/pipeline/test_send_spacing_fast.py",
            "tests/pipeline/test_send_spacing_keys_fast.py",
            "tests/pipeline/test_start_gate_fast.py",
        ),
        0.80,
    ),
)

_NEVER_READ = "CacheObservations.silent_seen is a counter nothing reads (no caller, no report)"
_TRUTHY = (
    "verdicts_seen is only read as 'any verdict yet' (behaviour): 0 before the first verdict "
    "and non-zero after it under the mutant too"
)
_ONE_PER_ITEM = "the zip's lists have one entry per item by construction: strict never fires"
_AFTER_LOWER = "rstrip of 'X' and '.' after lower(): no 'X' is left to strip, so only '.' is"

_FAST = (
    "a stricter hot-path test (a float in range) only sends more values to the full checks "
    "after it, which accept every float the hot path accepts: the same verdicts"
)
_FAST_PARAMS = _FAST + " (_check_seconds of each field)"
_FAST_RATE = _FAST + " (the checked path returns the same cls(1.0 / rate, ...))"
_FAST_COST = _FAST + " (the isinstance/range test of the cost)"
_FAST_LEAD = _FAST + " (_check_seconds with allow_inf)"
_INF_LEAD = (
    "allow_inf only matters for an infinite max_lead, which is a float and always passes the "
    "hot path before it: the flag is never read with an infinity"
)
_TWO_KEYS = (
    "in the branch for other than two keys, 'count == 2' is never true and 'count == 1' is "
    "what the set comparison gives for one key anyway: the same verdict"
)

_FIRST_FIELD = "the first field of a split is the same whatever the number of splits"
_VIA_UNREAD = (
    "HeaderFingerprint.via is kept but nothing reads it: no rule, describe() or comparison"
)
_DEAD = "_name_text has no caller: dead code (proposed for removal)"
_ZERO_WEIGHT = "a weight of 0 multiplies doubt or penalty by one either way: the same confidence"

_CACHE_CHOICE = (
    "the length only chooses whether a pure function's answer is remembered: the same answer"
)
_FIPS = (
    "md5's usedforsecurity flag matters only under a FIPS-mode OpenSSL, which no test machine "
    "runs: the same digest"
)
_CODEC = "codec names ignore case, and UTF-8 is the default: the same bytes"
_ENGINE = (
    "the condition only chooses the engine (the reference pattern, re on lower-cased text, or "
    "RE2 over stand-ins), which give the same spans: test_fingerprint checks each"
)

_NO_TYPE = 'a Content-Type of "xxxx" names no charset, as the empty default does'
_W3LIB_UTF16 = (
    "w3lib already reads a UTF-16 declaration in ASCII bytes as utf-8: the branch never sees a "
    "utf-16 codec"
)
_QUERY_IN_FRAGMENT = (
    'a "?" found past the fragment\'s "#" gives an empty query slice, which is ASCII: the '
    "reference is returned unchanged either way"
)
_HASH_FIRST = (
    'a "#" at 0 leaves no room for a query before it: whichever end is taken, the query is '
    "empty or not found"
)
_QUOTE_SAFE = (
    'the encoded bytes of one non-ASCII character hold no "/" (and "X" is never quoted): '
    "the same percent-encoding"
)
_MORE_BLOCKS = (
    "still d + 1 or more disjoint blocks (laid out otherwise, or leaving bits out): d "
    "differing bits still leave a block equal (the pigeonhole), and every candidate is checked "
    "by its full distance"
)
_SEQ_ORDER = "seqs only order entries: other numbers in the same order give the same answers"
_OWN_BUCKETS = "an entry is in every table before it is looked up, so each block value has a bucket"
_ZERO_BOUND = (
    "with remember 0 a page is added, finds nothing earlier (all forgotten) and is forgotten: "
    "None and an empty index either way"
)
_NEGATIVE_SHAPE = "numpy takes any negative size as the one to infer"
_SUM_DTYPE = "numpy sums uint8 and uint64 into uint64 by default: the same counts"

_WOKEN = (
    "the woken place has left its line, and the scheduler drops it as it wakes the lane: "
    "nothing reads its flag again"
)
_NO_LANE = "no lane is that empty string object: 'asking is lane' stays false, as for None"
_ASKING_LINE = (
    "while a lane asks its line exists (only _next removes a line, never while one asks): the "
    "'line is None' part is never reached with a key"
)
_RATE_ZERO = "a rate-0 gate never reads its limits: open, take and next_at return first"

_SORTED_MEMBERS = (
    "each cluster's members are sorted and no host is in two: ordering the lists is ordering "
    "them by their first member"
)
_GROUPED_HAS_KEYS = (
    "every site grouped on a shared address has a key from it, so 'not self.keys' already "
    "leaves out the sites the size test would"
)
_DEPTH_DEFAULT = (
    "every cname: key has a depth, and keys of one kind are compared only with keys of that "
    "kind: the default is only ever compared with itself"
)

_FLOAT_ENDS = (
    "the ends as floats instead of integers: the same comparisons, and int() of the furthest"
)
_EQUAL_STARTS = (
    "ranges are sorted by start only for the running furthest end, which is the same whatever "
    "the order among equal starts"
)
_CARRIED_START = 'a carried range starts before every "<" of a later block (-1, -2 or 1 alike)'
_NO_ZERO_END = 'no end is at 0: an end tag or a comment\'s end comes after its opening "<"'
_EARLY_EXIT = (
    'the shortcut only skips a scan that cannot find a cut: each level takes a "<" and at '
    "least three bytes"
)
_DIGIT_END = (
    'a name ending at a digit (or at ":") is never one that ends at whitespace, "/" or '
    '">": no special name is matched either way'
)
_NOT_AT_OPENER = 'no "</" starts at the opening "<" or the byte after it: the same first one found'

EQUIVALENT: dict[str, tuple[str, str]] = {
    # mutant name: (a line the mutant writes, stripped; why no test can tell it from the code)
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_2": (
        "self.silent_seen = 1",
        _NEVER_READ,
    ),
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_3": (
        "self.silent_seen -= 1",
        _NEVER_READ,
    ),
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_4": (
        "self.silent_seen += 2",
        _NEVER_READ,
    ),
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_8": (
        "self.verdicts_seen = 1",
        _TRUTHY,
    ),
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_9": (
        "self.verdicts_seen -= 1",
        _TRUTHY,
    ),
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_10": (
        "self.verdicts_seen += 2",
        _TRUTHY,
    ),
    "courtier.origins.infer.xǁOriginInferenceǁ_lookup__mutmut_43": (
        "self._left_out.discard(None)",
        "_left_out is read only by add(), which skips a host with facts before it looks "
        "there; a host this loop reaches has facts from then on",
    ),
    "courtier.origins.infer.xǁOriginInferenceǁ_finish__mutmut_4": (
        "if len(facts) <= CLUSTER_IN_THREAD:",
        "exactly CLUSTER_IN_THREAD sites clustered in line instead of on a thread: the same "
        "function on the same facts under the same lock, the same assignments",
    ),
    "courtier.origins.infer.xǁOriginInferenceǁ_probe_indeterminate__mutmut_20": (
        "for facts, headers in zip(todo, results, strict=None):",
        _ONE_PER_ITEM + " (map_bounded: one result per item)",
    ),
    "courtier.origins.infer.xǁOriginInferenceǁ_probe_indeterminate__mutmut_23": (
        "for facts, headers in zip(todo, results, ):",
        _ONE_PER_ITEM + " (map_bounded: one result per item)",
    ),
    "courtier.origins.infer.xǁOriginInferenceǁ_probe_indeterminate__mutmut_24": (
        "for facts, headers in zip(todo, results, strict=False):",
        _ONE_PER_ITEM + " (map_bounded: one result per item)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁlookup__mutmut_81": (
        "ptr = {a: names for a, (names, _) in zip(unique, ptr_results, strict=None) if names}",
        _ONE_PER_ITEM + " (_ptr_of: one entry per address asked)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁlookup__mutmut_84": (
        "ptr = {a: names for a, (names, _) in zip(unique, ptr_results, ) if names}",
        _ONE_PER_ITEM + " (_ptr_of: one entry per address asked)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁlookup__mutmut_85": (
        "ptr = {a: names for a, (names, _) in zip(unique, ptr_results, strict=False) if names}",
        _ONE_PER_ITEM + " (_ptr_of: one entry per address asked)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁ_ptr_of__mutmut_16": (
        "for address, (name, _), outcome in zip(asked, questions, outcomes, strict=None):",
        _ONE_PER_ITEM + " (DnsClient.ask: one outcome per question)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁ_ptr_of__mutmut_20": (
        "for address, (name, _), outcome in zip(asked, questions, outcomes, ):",
        _ONE_PER_ITEM + " (DnsClient.ask: one outcome per question)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁ_ptr_of__mutmut_21": (
        "for address, (name, _), outcome in zip(asked, questions, outcomes, strict=False):",
        _ONE_PER_ITEM + " (DnsClient.ask: one outcome per question)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁ_ptr_of__mutmut_11": (
        "outcomes = await self._ask(questions) if (questions) or True else []",
        "asking no questions: _ask finds all of none in the cache and returns [] itself",
    ),
    "courtier.origins.tls_evidence.xǁTlsFactsǁcovers__mutmut_5": (
        'host = host.lower().rstrip("XX.XX")',
        _AFTER_LOWER,
    ),
    "courtier.origins.tls_evidence.x_tls_facts__mutmut_24": (
        'san.append(str(entry[1]).lower().rstrip("XX.XX"))',
        _AFTER_LOWER,
    ),
    "courtier.origins.tls_evidence.x_tls_facts__mutmut_3": (
        'san_entries = peercert.get("subjectAltName", None)',
        "a missing subjectAltName as None instead of (): the isinstance check right after "
        "takes both to no names",
    ),
    "courtier.origins.tls_evidence.x_tls_facts__mutmut_5": (
        'san_entries = peercert.get("subjectAltName", )',
        "a missing subjectAltName as None instead of (): the isinstance check right after "
        "takes both to no names",
    ),
    "courtier.politeness.gcra.x__check_seconds__mutmut_3": (
        "if type(None) is float and 0.0 <= value < _INF:",
        _FAST,
    ),
    "courtier.politeness.gcra.x__check_seconds__mutmut_5": (
        "if type(value) is float and 1.0 <= value < _INF:",
        _FAST,
    ),
    "courtier.politeness.gcra.x__check_seconds__mutmut_6": (
        "if type(value) is float and 0.0 < value < _INF:",
        _FAST,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_7": (
        "type(None) is float",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_9": (
        "and type(None) is float",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_11": (
        "and type(None) is float",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_13": (
        "and 1.0 <= interval < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_14": (
        "and 0.0 < interval < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_16": (
        "and 1.0 <= burst < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_17": (
        "and 0.0 < burst < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_19": (
        "and 1.0 <= width < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_20": (
        "and 0.0 < width < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁfrom_rate__mutmut_4": (
        "if type(None) is float and rate > 0.0:",
        _FAST_RATE,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁfrom_rate__mutmut_7": (
        "if type(rate) is float and rate > 1.0:",
        _FAST_RATE,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_23": (
        "if not (type(None) is float and 0.0 < cost < _INF) and (",
        _FAST_COST,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_25": (
        "if not (type(cost) is float and 1.0 < cost < _INF) and (",
        _FAST_COST,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_38": (
        "if not (type(None) is float and 0.0 <= max_lead <= _INF):",
        _FAST_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_40": (
        "if not (type(max_lead) is float and 1.0 <= max_lead <= _INF):",
        _FAST_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_41": (
        "if not (type(max_lead) is float and 0.0 < max_lead <= _INF):",
        _FAST_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_42": (
        "if not (type(max_lead) is float and 0.0 <= max_lead < _INF):",
        _FAST_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_45": (
        '_check_seconds("max_lead", max_lead, allow_inf=None)',
        _INF_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_48": (
        '_check_seconds("max_lead", max_lead, )',
        _INF_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_51": (
        '_check_seconds("max_lead", max_lead, allow_inf=False)',
        _INF_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_15": (
        "distinct = count == 2 or len({limit.key for limit in limits}) == count",
        _TWO_KEYS,
    ),
    "courtier.origins.cluster.x__direct__mutmut_5": (
        "return True",
        "_direct is asked only about a link of the chain, so its loop returns before the end",
    ),
    "courtier.origins.cluster.xǁ_Unionǁunion__mutmut_6": (
        "first = next(iterator, )",
        "no caller unions an empty group (each has a site or more): next() always finds one",
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_shared_address__mutmut_6": (
        'detail += f"; kept together: {self.kept.get(None, NO_SPLIT_EVIDENCE)})"',
        "an address is only ever kept with NO_SPLIT_EVIDENCE, the default: the same text",
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_usable__mutmut_17": (
        'site.dns.error.split(":", 2)[0],',
        _FIRST_FIELD,
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_usable__mutmut_29": (
        "self.cdn[site.host] = None",
        "self.cdn is only asked which sites are behind an edge, never for the reason kept",
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_origin_id__mutmut_18": (
        'key=lambda k: (counts[k], _KEY_PRIORITY[k.split(":", )[0]], self.depth.get(k, 0), k),',
        _FIRST_FIELD,
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_origin_id__mutmut_27": (
        'key=lambda k: (counts[k], _KEY_PRIORITY[k.split(":", 1)[0]], self.depth.get(k, 1), k),',
        (
            "every cname: key has a depth; the default is read only for other kinds, where all "
            "keys tied on count and kind get the same default: the same order"
        ),
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_tls__mutmut_25": (
        "positive = [r for r in relations if r.weight >= 0]",
        "tls_relation never gives a weight of 0 (0.3, 0.15 or -0.1)",
    ),
    "courtier.origins.header_evidence.x__cookie_name__mutmut_5": (
        'return value.split(";", 1)[0].split("=", )[0].strip().lower()',
        _FIRST_FIELD,
    ),
    "courtier.origins.header_evidence.x__cookie_name__mutmut_10": (
        'return value.split(";", )[0].split("=", 1)[0].strip().lower()',
        _FIRST_FIELD,
    ),
    "courtier.origins.header_evidence.x__cookie_name__mutmut_13": (
        'return value.split(";", 2)[0].split("=", 1)[0].strip().lower()',
        _FIRST_FIELD,
    ),
    "courtier.origins.header_evidence.x__cookie_name__mutmut_16": (
        'return value.split(";", 1)[0].split("=", 2)[0].strip().lower()',
        _FIRST_FIELD,
    ),
    "courtier.origins.header_evidence.x__product__mutmut_5": (
        'return server.split("/", )[0].strip().lower()',
        _FIRST_FIELD,
    ),
    "courtier.origins.header_evidence.x__product__mutmut_8": (
        'return server.split("/", 2)[0].strip().lower()',
        _FIRST_FIELD,
    ),
    "courtier.origins.header_evidence.x_header_fingerprint__mutmut_45": (
        "via=None,",
        _VIA_UNREAD,
    ),
    "courtier.origins.header_evidence.x_header_fingerprint__mutmut_65": (
        "via=first.get(None),",
        _VIA_UNREAD,
    ),
    "courtier.origins.header_evidence.x_header_fingerprint__mutmut_66": (
        'via=first.get("XXviaXX"),',
        _VIA_UNREAD,
    ),
    "courtier.origins.header_evidence.x_header_fingerprint__mutmut_67": (
        'via=first.get("VIA"),',
        _VIA_UNREAD,
    ),
    "courtier.origins.dns_evidence.x__name_text__mutmut_1": (
        'return str(name).rstrip(".").upper()',
        _DEAD,
    ),
    "courtier.origins.dns_evidence.x__name_text__mutmut_2": (
        "return str(name).rstrip(None).lower()",
        _DEAD,
    ),
    "courtier.origins.dns_evidence.x__name_text__mutmut_3": (
        'return str(name).lstrip(".").lower()',
        _DEAD,
    ),
    "courtier.origins.dns_evidence.x__name_text__mutmut_4": (
        'return str(None).rstrip(".").lower()',
        _DEAD,
    ),
    "courtier.origins.dns_evidence.x__name_text__mutmut_5": (
        'return str(name).rstrip("XX.XX").lower()',
        _DEAD,
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁlookup__mutmut_72": (
        'return DnsFacts(host, chain, error="no-address: no A or AAAA records", )',
        (
            "with no address record, _facts_of finds no chain to one and gives DEFAULT_TTL, "
            "which is also the field's default: the same facts"
        ),
    ),
    "courtier.origins.evidence.x_combined_confidence__mutmut_5": (
        "if item.weight >= 0:",
        _ZERO_WEIGHT,
    ),
    "courtier.origins.evidence.x_combined_confidence__mutmut_11": (
        "elif item.weight <= 0:",
        _ZERO_WEIGHT,
    ),
    "courtier.origins.evidence.x_combined_confidence__mutmut_12": (
        "elif item.weight < 1:",
        (
            "the branch is reached only by weights <= 0 (positive ones take the first): 'w < 1' "
            "and 'w < 0' differ only at 0, which multiplies the penalty by one"
        ),
    ),
    "courtier.origins.evidence.x_combined_confidence__mutmut_26": (
        "return max(0.0, min(2.0, (1.0 - doubt) * penalty))",
        (
            "(1 - doubt) and penalty each lie in [0, 1] for weights in [-1, 1]: their product "
            "never exceeds 1, so the upper clamp never acts"
        ),
    ),
    "courtier.origins.cdn.xǁCdnRulesǁname_reason__mutmut_9": (
        'name = name.lower().rstrip("XX.XX")',
        _AFTER_LOWER,
    ),
    "courtier.frontier.refresh.x_after_fetch__mutmut_13": (
        "return RefreshState(fingerprint, bounds.initial, fetched_at + bounds.initial, )",
        "an explicit 0 unchanged fetches is the field's default",
    ),
    "courtier.frontier.traps.x__is_session_parameter__mutmut_6": (
        'parameter.split("=", )[0].strip().lower() in SESSION_KEYS',
        _FIRST_FIELD,
    ),
    "courtier.frontier.traps.x__is_session_parameter__mutmut_9": (
        'parameter.split("=", 2)[0].strip().lower() in SESSION_KEYS',
        _FIRST_FIELD,
    ),
    "courtier.frontier.traps.x__path_pattern__mutmut_7": (
        'segments = [segment.split(";", )[0] for segment in path.split("/")[1:]]',
        _FIRST_FIELD,
    ),
    "courtier.frontier.traps.x__path_pattern__mutmut_10": (
        'segments = [segment.split(";", 2)[0] for segment in path.split("/")[1:]]',
        _FIRST_FIELD,
    ),
    "courtier.frontier.traps.x_url_pattern__mutmut_11": (
        'raw = url.split("?", )[0]',
        _FIRST_FIELD,
    ),
    "courtier.frontier.traps.x_url_pattern__mutmut_14": (
        'raw = url.split("?", 2)[0]',
        _FIRST_FIELD,
    ),
    "courtier.frontier.traps.xǁPatternCounterǁ__init____mutmut_12": (
        'key.split("/", )[0] for key in self._counts',
        _FIRST_FIELD,
    ),
    "courtier.frontier.traps.xǁPatternCounterǁ__init____mutmut_15": (
        'key.split("/", 2)[0] for key in self._counts',
        _FIRST_FIELD,
    ),
    "courtier.frontier.fingerprint.x_content_fingerprint__mutmut_6": (
        'kind = (media_type or "").split(";", )[0].strip().lower()',
        _FIRST_FIELD,
    ),
    "courtier.frontier.fingerprint.x_content_fingerprint__mutmut_11": (
        'kind = (media_type or "").split(";", 2)[0].strip().lower()',
        _FIRST_FIELD,
    ),
    "courtier.frontier.traps.x__path_pattern__mutmut_29": (
        "if len(segment) < _CACHED_CHARS:",
        _CACHE_CHOICE,
    ),
    "courtier.frontier.traps.x__query_pattern__mutmut_22": (
        "if len(key) < _CACHED_CHARS:",
        _CACHE_CHOICE,
    ),
    "courtier.frontier.traps.x__query_pattern__mutmut_29": (
        "if (len(value) <= _CACHED_CHARS) and False",
        _CACHE_CHOICE,
    ),
    "courtier.frontier.traps.x__query_pattern__mutmut_30": (
        "if (len(value) <= _CACHED_CHARS) or True",
        _CACHE_CHOICE,
    ),
    "courtier.frontier.traps.x__query_pattern__mutmut_32": (
        "if len(value) < _CACHED_CHARS",
        _CACHE_CHOICE,
    ),
    "courtier.frontier.traps.x_pattern_of__mutmut_6": (
        "if len(query) < _CACHED_QUERY_CHARS:",
        _CACHE_CHOICE,
    ),
    "courtier.frontier.fingerprint.x__is_ad_slot__mutmut_2": (
        (
            "_has_ad_token(value) if (len(value) <= _CACHED_VALUE_CHARS) and False else "
            "_ad_token_in(value)"
        ),
        _CACHE_CHOICE,
    ),
    "courtier.frontier.fingerprint.x__is_ad_slot__mutmut_3": (
        (
            "_has_ad_token(value) if (len(value) <= _CACHED_VALUE_CHARS) or True else "
            "_ad_token_in(value)"
        ),
        _CACHE_CHOICE,
    ),
    "courtier.frontier.fingerprint.x__is_ad_slot__mutmut_5": (
        "_has_ad_token(value) if len(value) < _CACHED_VALUE_CHARS else _ad_token_in(value)",
        _CACHE_CHOICE,
    ),
    "courtier.frontier.fingerprint.xǁ_StandInsǁ__missing____mutmut_18": (
        "if len(self) <= _STAND_IN_CACHE:",
        _CACHE_CHOICE,
    ),
    "courtier.frontier.fingerprint.x_content_fingerprint__mutmut_29": (
        "return hashlib.md5(body, usedforsecurity=None).hexdigest()",
        _FIPS,
    ),
    "courtier.frontier.fingerprint.x_content_fingerprint__mutmut_31": (
        "return hashlib.md5(body, ).hexdigest()",
        _FIPS,
    ),
    "courtier.frontier.fingerprint.x_content_fingerprint__mutmut_32": (
        "return hashlib.md5(body, usedforsecurity=True).hexdigest()",
        _FIPS,
    ),
    "courtier.frontier.fingerprint.x_unparsed_fingerprint__mutmut_13": (
        "return hashlib.md5(raw, usedforsecurity=None).hexdigest()",
        _FIPS,
    ),
    "courtier.frontier.fingerprint.x_unparsed_fingerprint__mutmut_15": (
        "return hashlib.md5(raw, ).hexdigest()",
        _FIPS,
    ),
    "courtier.frontier.fingerprint.x_unparsed_fingerprint__mutmut_16": (
        "return hashlib.md5(raw, usedforsecurity=True).hexdigest()",
        _FIPS,
    ),
    "courtier.frontier.fingerprint.x__md5__mutmut_2": (
        'return hashlib.md5(text.encode("utf-8"), usedforsecurity=None).hexdigest()',
        _FIPS,
    ),
    "courtier.frontier.fingerprint.x__md5__mutmut_4": (
        'return hashlib.md5(text.encode("utf-8"), ).hexdigest()',
        _FIPS,
    ),
    "courtier.frontier.fingerprint.x__md5__mutmut_8": (
        'return hashlib.md5(text.encode("utf-8"), usedforsecurity=True).hexdigest()',
        _FIPS,
    ),
    "courtier.frontier.fingerprint.x_content_fingerprint__mutmut_22": (
        'return _md5(normalise_text(body.decode(errors="replace")))',
        _CODEC,
    ),
    "courtier.frontier.fingerprint.x_content_fingerprint__mutmut_25": (
        'return _md5(normalise_text(body.decode("UTF-8", errors="replace")))',
        _CODEC,
    ),
    "courtier.frontier.fingerprint.x_unparsed_fingerprint__mutmut_6": (
        'raw = html.encode(errors="replace") if isinstance(html, str) else html',
        _CODEC,
    ),
    "courtier.frontier.fingerprint.x_unparsed_fingerprint__mutmut_9": (
        'raw = html.encode("UTF-8", errors="replace") if isinstance(html, str) else html',
        _CODEC,
    ),
    "courtier.frontier.fingerprint.x__md5__mutmut_7": (
        'return hashlib.md5(text.encode("UTF-8"), usedforsecurity=False).hexdigest()',
        _CODEC,
    ),
    "courtier.frontier.fingerprint.x__erase_special_cases__mutmut_18": (
        'spans = _stand_in_spans(lowered.encode("ASCII"))',
        _CODEC,
    ),
    "courtier.frontier.fingerprint.x__erase_special_cases__mutmut_31": (
        'spans = _stand_in_spans(lowered.encode("ASCII", "courtier-stand-in"))',
        _CODEC,
    ),
    "courtier.frontier.fingerprint.x_erase_volatile__mutmut_8": (
        'stand_in = text.lower().encode("ASCII")',
        _CODEC,
    ),
    "courtier.frontier.fingerprint.x_erase_volatile__mutmut_25": (
        'stand_in = text.encode("ASCII", "courtier-stand-in").lower()',
        _CODEC,
    ),
    "courtier.frontier.fingerprint.x__erase_special_cases__mutmut_7": (
        "or any(c not in text for c in _FOLDS_TO_ASCII)",
        _ENGINE,
    ),
    "courtier.frontier.fingerprint.x__erase_special_cases__mutmut_20": (
        (
            'elif (len(lowered.encode("utf-8", "surrogatepass")) + len(lowered)) * '
            "_RE2_SHARE > len(text):"
        ),
        _ENGINE,
    ),
    "courtier.frontier.fingerprint.x__erase_special_cases__mutmut_21": (
        (
            'elif (len(lowered.encode("utf-8", "surrogatepass")) - len(lowered)) * '
            "_RE2_SHARE >= len(text):"
        ),
        _ENGINE,
    ),
    "courtier.frontier.fingerprint.x_erase_volatile__mutmut_2": (
        "if any(c not in text for c in _LOWER_CASED_UNLIKE_STAND_IN):",
        _ENGINE,
    ),
    "courtier.frontier.fingerprint.x_erase_volatile__mutmut_10": (
        'elif (len(text.encode("utf-8", "surrogatepass")) + len(text)) * _RE2_SHARE > len(text):',
        _ENGINE,
    ),
    "courtier.frontier.fingerprint.x_erase_volatile__mutmut_11": (
        'elif (len(text.encode("utf-8", "surrogatepass")) - len(text)) * _RE2_SHARE >= len(text):',
        _ENGINE,
    ),
    "courtier.frontier.fingerprint.x_content_fingerprint__mutmut_9": (
        'kind = (media_type or "XXXX").split(";", 1)[0].strip().lower()',
        'no media type, as "xxxx" or "", is neither HTML nor text: the MD5 of the bytes either way',
    ),
    "courtier.frontier.fingerprint.x__erased__mutmut_2": (
        "done = None",
        "text[None:start] is text[0:start], and done is set before any other read",
    ),
    "courtier.frontier.fingerprint.x_tree_content_text__mutmut_11": (
        'titles = tree.tags("TITLE")',
        "lexbor looks tag names up whatever their case",
    ),
    "courtier.frontier.fingerprint.xǁ_StandInsǁ__missing____mutmut_7": (
        'elif char.isalnum() or char == "XX_XX":',
        (
            'only characters outside ASCII reach the stand-in table, never "_": the '
            "comparison is never true either way"
        ),
    ),
    "courtier.content.canonical.x_declared_in_headers__mutmut_13": (
        'tokens = (rel.group(1) or rel.group(2) or "XXXX").lower().split()',
        'an empty rel, as "xxxx" or "", holds no "canonical" token',
    ),
    "courtier.content.canonical.x_declared_in_markup__mutmut_4": (
        'for node in tree.tags("LINK"):',
        "lexbor looks tag names up whatever their case",
    ),
    "courtier.content.decode.x__detect__mutmut_36": (
        'chosen = "CP1252"',
        _CODEC,
    ),
    "courtier.content.decode.x_decode__mutmut_1": (
        'def decode(body: bytes, content_type: str = "XXXX") -> Decoded:',
        _NO_TYPE,
    ),
    "courtier.content.decode.x_sniff__mutmut_1": (
        'def sniff(body: bytes, content_type: str = "XXXX") -> tuple[str, str, int]:',
        _NO_TYPE,
    ),
    "courtier.content.decode.x_parse_text__mutmut_6": (
        'return text.encode("UTF-8", "surrogateescape")',
        _CODEC,
    ),
    "courtier.content.decode.x_sniff__mutmut_36": (
        'body.decode("UTF-8")',
        _CODEC,
    ),
    "courtier.content.decode.x_sniff__mutmut_4": (
        "if bom is not None or mark is not None:",
        "read_bom gives both the encoding and the mark, or neither",
    ),
    "courtier.content.decode.x_sniff__mutmut_40": (
        'if exc.start >= len(body) - 4 and exc.reason == "unexpected end of data":',
        (
            'UTF-8 reports "unexpected end of data" only within the last three bytes (a '
            "character is at most four)"
        ),
    ),
    "courtier.content.decode.x_sniff__mutmut_24": (
        'return ("utf-8" if (codec.startswith("utf-16")) and False else codec), "meta", 0',
        _W3LIB_UTF16,
    ),
    "courtier.content.decode.x_sniff__mutmut_26": (
        'return ("XXutf-8XX" if codec.startswith("utf-16") else codec), "meta", 0',
        _W3LIB_UTF16,
    ),
    "courtier.content.decode.x_sniff__mutmut_27": (
        'return ("UTF-8" if codec.startswith("utf-16") else codec), "meta", 0',
        _W3LIB_UTF16,
    ),
    "courtier.content.decode.x_sniff__mutmut_29": (
        'return ("utf-8" if codec.startswith("XXutf-16XX") else codec), "meta", 0',
        _W3LIB_UTF16,
    ),
    "courtier.content.decode.x_sniff__mutmut_30": (
        'return ("utf-8" if codec.startswith("UTF-16") else codec), "meta", 0',
        _W3LIB_UTF16,
    ),
    "courtier.content.decode.x_encode_query__mutmut_9": (
        'query_at = reference.find("?", None, hash_at if hash_at >= 0 else len(reference))',
        "find from None is find from 0",
    ),
    "courtier.content.decode.x_encode_query__mutmut_10": (
        'query_at = reference.find("?", 0, None)',
        _QUERY_IN_FRAGMENT,
    ),
    "courtier.content.decode.x_encode_query__mutmut_13": (
        'query_at = reference.find("?", 0, )',
        _QUERY_IN_FRAGMENT,
    ),
    "courtier.content.decode.x_encode_query__mutmut_17": (
        (
            'query_at = reference.find("?", 0, hash_at if (hash_at >= 0) and False else '
            "len(reference))"
        ),
        _QUERY_IN_FRAGMENT,
    ),
    "courtier.content.decode.x_encode_query__mutmut_18": (
        'query_at = reference.find("?", 0, hash_at if (hash_at >= 0) or True else len(reference))',
        (
            'the search then leaves out the last character only, and a "?" there starts an '
            "empty query, which is ASCII"
        ),
    ),
    "courtier.content.decode.x_encode_query__mutmut_19": (
        'query_at = reference.find("?", 0, hash_at if hash_at > 0 else len(reference))',
        _HASH_FIRST,
    ),
    "courtier.content.decode.x_encode_query__mutmut_20": (
        'query_at = reference.find("?", 0, hash_at if hash_at >= 1 else len(reference))',
        _HASH_FIRST,
    ),
    "courtier.content.decode.x_encode_query__mutmut_26": (
        "end = hash_at if hash_at > 0 else len(reference)",
        _HASH_FIRST,
    ),
    "courtier.content.decode.x_encode_query__mutmut_27": (
        "end = hash_at if hash_at >= 1 else len(reference)",
        _HASH_FIRST,
    ),
    "courtier.content.decode.x_encode_query__mutmut_39": (
        'ch if ch.isascii() else quote(ch.encode(codec, "xmlcharrefreplace"), )',
        _QUOTE_SAFE,
    ),
    "courtier.content.decode.x_encode_query__mutmut_46": (
        'ch if ch.isascii() else quote(ch.encode(codec, "xmlcharrefreplace"), safe="XXXX")',
        _QUOTE_SAFE,
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ__init____mutmut_5": (
        "blocks = near_distance + 2",
        _MORE_BLOCKS,
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ__init____mutmut_13": (
        "shift = 1",
        _MORE_BLOCKS,
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ__init____mutmut_16": (
        "bits = width - (i < extra)",
        _MORE_BLOCKS,
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ__init____mutmut_17": (
        "bits = width + (i <= extra)",
        _MORE_BLOCKS,
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ__init____mutmut_22": (
        "self._blocks.append((shift, (1 << bits) - 2))",
        _MORE_BLOCKS,
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ__init____mutmut_30": (
        "self._seq = 1",
        _SEQ_ORDER,
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_add__mutmut_4": (
        "seq = self._seq = self._seq + 2",
        _SEQ_ORDER,
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_add__mutmut_23": (
        "if first is None or seq <= first.seq:",
        (
            "seqs are one per URL and a URL's entry is dropped before it is added again: no "
            "two entries share one"
        ),
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_add__mutmut_27": (
        "for table, (shift, mask) in zip(self._tables, self._blocks, strict=None):",
        _ONE_PER_ITEM + " (one table per block)",
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_add__mutmut_30": (
        "for table, (shift, mask) in zip(self._tables, self._blocks, ):",
        _ONE_PER_ITEM + " (one table per block)",
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_add__mutmut_31": (
        "for table, (shift, mask) in zip(self._tables, self._blocks, strict=False):",
        _ONE_PER_ITEM + " (one table per block)",
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_drop__mutmut_7": (
        "for table, (shift, mask) in zip(self._tables, self._blocks, strict=None):",
        _ONE_PER_ITEM + " (one table per block)",
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_drop__mutmut_10": (
        "for table, (shift, mask) in zip(self._tables, self._blocks, ):",
        _ONE_PER_ITEM + " (one table per block)",
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_drop__mutmut_11": (
        "for table, (shift, mask) in zip(self._tables, self._blocks, strict=False):",
        _ONE_PER_ITEM + " (one table per block)",
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_earlier__mutmut_23": (
        "for table, (shift, mask) in zip(self._tables, self._blocks, strict=None):",
        _ONE_PER_ITEM + " (one table per block)",
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_earlier__mutmut_26": (
        "for table, (shift, mask) in zip(self._tables, self._blocks, ):",
        _ONE_PER_ITEM + " (one table per block)",
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_earlier__mutmut_27": (
        "for table, (shift, mask) in zip(self._tables, self._blocks, strict=False):",
        _ONE_PER_ITEM + " (one table per block)",
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_earlier__mutmut_29": (
        "for other in table.get((entry.simhash >> shift) & mask, None):",
        _OWN_BUCKETS,
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_earlier__mutmut_31": (
        "for other in table.get((entry.simhash >> shift) & mask, ):",
        _OWN_BUCKETS,
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁ_earlier__mutmut_48": (
        "bits == best_distance and best and other.seq <= best.seq",
        (
            "only the same entry, met again in another block, has an equal seq: replacing it "
            "by itself changes nothing"
        ),
    ),
    "courtier.content.duplicates.xǁDuplicateIndexǁsee__mutmut_2": (
        "if self.remember < 0 or not text.text:",
        _ZERO_BOUND,
    ),
    "courtier.content.simhash.x_simhash__mutmut_40": (
        'bits = np.unpackbits(features.view(np.uint8).reshape(-2, 8), axis=1, bitorder="little")',
        _NEGATIVE_SHAPE,
    ),
    "courtier.content.simhash.x_simhash__mutmut_69": (
        (
            "blocks = padded.view(np.uint64).reshape(-2, _ROWS, BITS // 8).sum(axis=1, "
            "dtype=np.uint64)"
        ),
        _NEGATIVE_SHAPE,
    ),
    "courtier.content.simhash.x_simhash__mutmut_84": (
        "counts = blocks.view(np.uint8).reshape(-2, BITS).sum(axis=0, dtype=np.int64)",
        _NEGATIVE_SHAPE,
    ),
    "courtier.content.simhash.x_simhash__mutmut_58": (
        "blocks = padded.view(np.uint64).reshape(-1, _ROWS, BITS // 8).sum(axis=1, dtype=None)",
        _SUM_DTYPE,
    ),
    "courtier.content.simhash.x_simhash__mutmut_60": (
        "blocks = padded.view(np.uint64).reshape(-1, _ROWS, BITS // 8).sum(axis=1, )",
        _SUM_DTYPE,
    ),
    "courtier.content.simhash.x_simhash__mutmut_75": (
        "counts = blocks.view(np.uint8).reshape(-1, BITS).sum(axis=0, dtype=None)",
        _SUM_DTYPE,
    ),
    "courtier.content.simhash.x_simhash__mutmut_77": (
        "counts = blocks.view(np.uint8).reshape(-1, BITS).sum(axis=0, )",
        _SUM_DTYPE,
    ),
    "courtier.content.simhash.x_word_hashes__mutmut_12": (
        'data = np.frombuffer(text.lower().encode("UTF-8", "surrogatepass"), np.uint8)',
        _CODEC,
    ),
    "courtier.content.simhash.x_word_hashes__mutmut_32": (
        "starts = np.flatnonzero(np.diff(letters, prepend=-3) != 1)",
        (
            "a first letter at i >= 0 differs from -2 and from -3 by more than one: a word "
            "starts there either way"
        ),
    ),
    "courtier.pipeline.scheduling.key_waits.xǁKeyWaitsǁ_turn__mutmut_8": (
        "place.cancelled = None  # woken: this place is used up",
        _WOKEN,
    ),
    "courtier.pipeline.scheduling.key_waits.xǁKeyWaitsǁ_turn__mutmut_9": (
        "place.cancelled = False  # woken: this place is used up",
        _WOKEN,
    ),
    "courtier.pipeline.scheduling.key_waits.xǁKeyWaitsǁ_turn__mutmut_11": (
        "pending = None",
        "None and False are alike here: only pending's truth is read",
    ),
    "courtier.pipeline.scheduling.key_waits.xǁKeyWaitsǁ_turn__mutmut_16": (
        'line.asking = ""',
        _NO_LANE,
    ),
    "courtier.pipeline.scheduling.key_waits.xǁKeyWaitsǁanswered__mutmut_16": (
        'line.asking = ""',
        _NO_LANE,
    ),
    "courtier.pipeline.scheduling.key_waits.xǁ_Lineǁ__init____mutmut_4": (
        'self.asking: L | None = ""',
        _NO_LANE,
    ),
    "courtier.pipeline.scheduling.key_waits.xǁKeyWaitsǁanswered__mutmut_7": (
        "line = None if (key is None) and False else self._lines.get(key)",
        "_lines.get(None) is None, as the guarded branch gives",
    ),
    "courtier.pipeline.scheduling.key_waits.xǁKeyWaitsǁanswered__mutmut_11": (
        "if key is None or line is None and line.asking is not lane:",
        _ASKING_LINE,
    ),
    "courtier.pipeline.scheduling.key_waits.xǁKeyWaitsǁanswered__mutmut_12": (
        "if key is None and line is None or line.asking is not lane:",
        _ASKING_LINE,
    ),
    "courtier.pipeline.scheduling.key_waits.xǁKeyWaitǁ__init____mutmut_2": (
        "self.cancelled = None",
        "None and False are alike here: only the flag's truth is read",
    ),
    "courtier.pipeline.scheduling.send_spacing.xǁSendSpacingǁhold_until__mutmut_16": (
        "if ready is not None and ready >= until:",
        "a ready time equal to until sets until to the value it has",
    ),
    "courtier.pipeline.scheduling.send_spacing.xǁSendSpacingǁ__init____mutmut_2": (
        "self._policy = None",
        "the first watched() then finds the policy changed and clears a cache that is empty",
    ),
    "courtier.pipeline.scheduling.start_gate.xǁStartGateǁ__init____mutmut_19": (
        "interval = 1.0 / rate if rate else 1.0",
        _RATE_ZERO,
    ),
    "courtier.pipeline.scheduling.start_gate.xǁStartGateǁnext_at__mutmut_1": (
        (
            "return now if (self.rate == 0) and False else earliest_start(self._tats, now, "
            "self._limits)"
        ),
        "a rate-0 gate takes no places, so its earliest start is now, as the shortcut says",
    ),
    "courtier.pipeline.scheduling.ready_line.xǁReadyLineǁ__init____mutmut_11": (
        "self.start_gate = gates.start if gates else StartGate(0, 2)",
        _RATE_ZERO,
    ),
    "courtier.pipeline.scheduling.ready_line.xǁReadyLineǁ__init____mutmut_20": (
        "self.first_gate = gates.first if gates else StartGate(0, 2)",
        _RATE_ZERO,
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_assign__mutmut_10": (
        "for members in sorted(clusters.values(), key=None):",
        _SORTED_MEMBERS,
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_assign__mutmut_12": (
        "for members in sorted(clusters.values(), ):",
        _SORTED_MEMBERS,
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_by_address__mutmut_12": (
        "names = ptr.get(address, None)",
        "no PTR name as None or as (): both falsy, the same branch",
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_by_address__mutmut_14": (
        "names = ptr.get(address, )",
        "no PTR name as None or as (): both falsy, the same branch",
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_by_address__mutmut_27": (
        "if all(len(groups[a]) <= 2 for a in site.dns.addresses) and not self.keys[site.host]:",
        _GROUPED_HAS_KEYS,
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_by_address__mutmut_28": (
        "if all(len(groups[a]) < 3 for a in site.dns.addresses) and not self.keys[site.host]:",
        _GROUPED_HAS_KEYS,
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_origin_id__mutmut_21": (
        'key=lambda k: (counts[k], _KEY_PRIORITY[k.split(":", 2)[0]], self.depth.get(k, 0), k),',
        _FIRST_FIELD,
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_origin_id__mutmut_24": (
        'key=lambda k: (counts[k], _KEY_PRIORITY[k.split(":", 1)[0]], self.depth.get(k, None), k),',
        _DEPTH_DEFAULT,
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_origin_id__mutmut_26": (
        'key=lambda k: (counts[k], _KEY_PRIORITY[k.split(":", 1)[0]], self.depth.get(k, ), k),',
        _DEPTH_DEFAULT,
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_origin_id__mutmut_9": (
        "counts[key] += 2",
        "every count doubled: the same order of keys",
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_tls__mutmut_8": (
        "peers = [p for p in with_tls[: TLS_PEERS_COMPARED + 2] if p[0] != host]",
        (
            "the peers are cut to TLS_PEERS_COMPARED next: one more candidate before the cut "
            "leaves the same first eight"
        ),
    ),
    "courtier.origins.cluster.xǁ_Clusteringǁ_usable__mutmut_14": (
        'site.dns.error.split(":", )[0],',
        _FIRST_FIELD,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_15": (
        "end_at = np.full(openers.size, -1, dtype=None)",
        _FLOAT_ENDS,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_18": (
        "end_at = np.full(openers.size, -1, )",
        _FLOAT_ENDS,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_47": (
        "ends = [end_at, np.zeros(comments.size, dtype=None)]",
        _FLOAT_ENDS,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_49": (
        "ends = [end_at, np.zeros(comments.size, )]",
        _FLOAT_ENDS,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_20": (
        "end_at = np.full(openers.size, -2, dtype=np.intp)",
        "any negative end marks an end tag not found in the block: end_at < 0 either way",
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_96": (
        "order = np.argsort(first, kind=None)",
        _EQUAL_STARTS,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_98": (
        "order = np.argsort(first, )",
        _EQUAL_STARTS,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_100": (
        'order = np.argsort(first, kind="STABLE")',
        _EQUAL_STARTS,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_50": (
        "if self.skip_until >= int(lt[0]):",
        (
            'a carried range ending at the block\'s first "<" hides nothing: only a "<" '
            "before its end is hidden"
        ),
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_55": (
        "starts.append(np.array([+1]))",
        _CARRIED_START,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_56": (
        "starts.append(np.array([-2]))",
        _CARRIED_START,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_60": (
        "for index in np.flatnonzero(end_at <= 0).tolist():  # no end tag in this block",
        _NO_ZERO_END,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_61": (
        "for index in np.flatnonzero(end_at < 1).tolist():  # no end tag in this block",
        _NO_ZERO_END,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_92": (
        "last[last <= 0] = len(self.body)",
        _NO_ZERO_END,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_93": (
        "last[last < 1] = len(self.body)",
        _NO_ZERO_END,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_hidden__mutmut_81": (
        'ends[1][index] = self.body.find(b"-->", at - 2)  # "<!-->" is a whole comment',
        (
            'no "-->" can start at the two bytes before "<!--" (the "<" ends them): '
            "the same first one found"
        ),
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_48": (
        "name_bytes = words.view(np.uint8).reshape(-2, _KEY_BYTES)",
        _NEGATIVE_SHAPE,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_159": (
        "total = np.cumsum(step, dtype=None)",
        "numpy sums int8 steps in the platform integer by default, as int64",
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_161": (
        "total = np.cumsum(step, )",
        "numpy sums int8 steps in the platform integer by default, as int64",
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_26": (
        "adjacent[0] = None",
        "None stored in a bool array is False",
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_16": (
        "if self.depth + lt.size < max_depth and stop == len(self.body):",
        _EARLY_EXIT,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_131": (
        "if bang.size or openers.size or self.skip_until >= start:",
        (
            "with the carried range ending at the block's start, _hidden finds no range and "
            "hides nothing"
        ),
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_21": (
        "adjacent[1:] = is_lt[:-1]",
        (
            'only the marks that are "<" are kept from adjacent next, and for them is_lt '
            "is true: the same flags"
        ),
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_80": (
        "length = np.argmin(letter | ((name_bytes > 0x30) & (name_bytes <= 0x39)), axis=1)",
        _DIGIT_END,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_81": (
        "length = np.argmin(letter | ((name_bytes >= 49) & (name_bytes <= 0x39)), axis=1)",
        _DIGIT_END,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_82": (
        "length = np.argmin(letter | ((name_bytes >= 0x30) & (name_bytes < 0x39)), axis=1)",
        _DIGIT_END,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁblock__mutmut_83": (
        "length = np.argmin(letter | ((name_bytes >= 0x30) & (name_bytes <= 58)), axis=1)",
        _DIGIT_END,
    ),
    "courtier.content.nesting.x_nesting_cut__mutmut_1": (
        'if len(body) <= 2 * max_depth and body.count(b"<") <= max_depth:',
        _EARLY_EXIT,
    ),
    "courtier.content.nesting.x_nesting_cut__mutmut_2": (
        'if len(body) < 2 * max_depth or body.count(b"<") <= max_depth:',
        _EARLY_EXIT,
    ),
    "courtier.content.nesting.x_nesting_cut__mutmut_4": (
        'if len(body) <= 3 * max_depth or body.count(b"<") <= max_depth:',
        _EARLY_EXIT,
    ),
    "courtier.content.nesting.x_nesting_cut__mutmut_7": (
        'if len(body) <= 2 * max_depth or body.count(b"<") < max_depth:',
        _EARLY_EXIT,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ__init____mutmut_11": (
        'self.bytes = np.frombuffer(body + b"\\0" * (3 * _KEY_BYTES), dtype=np.uint8)',
        (
            'more zero padding after the body: the scan reads at most 8 bytes past a "<", '
            "zeros either way"
        ),
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_end_tag__mutmut_10": (
        'found = body.find(b"</" + name, at - 1)',
        _NOT_AT_OPENER,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_end_tag__mutmut_11": (
        'found = body.find(b"</" + name, at + 2)',
        _NOT_AT_OPENER,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_end_tag__mutmut_30": (
        "end = body.find(needle, at - 1, bound)",
        _NOT_AT_OPENER,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_end_tag__mutmut_31": (
        "end = body.find(needle, at + 2, bound)",
        _NOT_AT_OPENER,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_end_tag__mutmut_15": (
        "bound = len(body) if found <= 0 else found",
        _NO_ZERO_END,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_end_tag__mutmut_16": (
        "bound = len(body) if found < 1 else found",
        _NO_ZERO_END,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_end_tag__mutmut_32": (
        "while end > 0:",
        _NO_ZERO_END,
    ),
    "courtier.content.nesting.xǁ_NestingScanǁ_end_tag__mutmut_33": (
        "while end >= 1:",
        _NO_ZERO_END,
    ),
    "courtier.pipeline.scheduling.send_spacing.xǁSendSpacingǁ_release__mutmut_1": (
        "if self._unsent[key] >= 1:",
        "a count of 1 brought to 0 instead of removed: hold_until only asks whether it is > 0",
    ),
}


def room_named(name: str) -> Room:
    for room in ROOMS:
        if room.name == name:
            return room
    raise SystemExit(f"no room {name!r}; rooms: {', '.join(r.name for r in ROOMS)}")


def modules_of(room: Room) -> list[str]:
    """The room's modules to mutate, relative to the root, sorted."""
    found: set[str] = set()
    for pattern in room.mutate:
        for path in ROOT.glob(pattern):
            rel = path.relative_to(ROOT).as_posix()
            if path.name != "__init__.py" and not any(fnmatch.fnmatch(rel, s) for s in room.skip):
                found.add(rel)
    return sorted(found)


def changed_modules(ref: str) -> set[str] | None:
    """The Python files changed between the merge base with ``ref`` and the working tree;
    None when git cannot tell (no such ref: a shallow clone, a first commit)."""

    def git(*args: str) -> str | None:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else None

    base = git("merge-base", "HEAD", ref)
    out = None if base is None else git("diff", "--name-only", base.strip(), "--", "src")
    if out is None:
        return None
    return {line for line in out.splitlines() if line.endswith(".py")}


def mutmut_command() -> str:
    beside = Path(sys.executable).parent / "mutmut"
    found = str(beside) if beside.exists() else shutil.which("mutmut")
    if found is None:
        raise SystemExit("mutmut is not installed: pip install -e '.[mutation]'")
    return found


def prepare(room: Room, modules: Sequence[str]) -> Path:
    """A fresh scratch directory for the room: src, tests and a pyproject.toml for mutmut."""
    work = SCRATCH / room.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(ROOT / "src", work / "src", ignore=ignore)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=ignore)
    config = {
        "source_paths": ["src"],
        "only_mutate": list(modules),
        # One process per mutant run (mutmut forks its workers); the room's tests only. A
        # mutant that loops forever fails its test after 10 s (pytest-timeout) instead of
        # holding a worker for mutmut's own CPU limit (15 times its tests' time, doubled).
        "pytest_add_cli_args": ["-n", "0", "-p", "no:cacheprovider", "--timeout=10"],
        "pytest_add_cli_args_test_selection": [*room.tests, *room.narrow],
    }
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    text += "\n[tool.mutmut]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in config.items())
    tomllib.loads(text)  # a config mutmut cannot read is an error here, not a silent default
    (work / "pyproject.toml").write_text(text, "utf-8")
    return work


KILLED = {"killed", "timeout", "segfault", "caught by type check"}
NOT_KILLED = {"survived", "no tests", "suspicious"}


def status_of(exit_code: int | None) -> str:
    from mutmut.stats import status_by_exit_code

    return str(status_by_exit_code[exit_code])


@dataclass
class Outcome:
    room: Room
    seconds: float
    by_module: dict[str, Counter[str]]
    survivors: list[str]
    equivalent: list[str]
    stale: list[str]

    @property
    def counts(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for counts in self.by_module.values():
            total.update(counts)
        return total

    @staticmethod
    def score(counts: Counter[str]) -> float | None:
        killed = sum(counts[s] for s in KILLED)
        judged = killed + sum(counts[s] for s in NOT_KILLED)
        return killed / judged if judged else None


_DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant
diffs = {}
for name in json.load(sys.stdin):
    diffs[name] = get_diff_for_mutant(name, path=find_mutant(name).path)
print(json.dumps(diffs))
"""


def diffs_of(work: Path, names: Sequence[str]) -> dict[str, str]:
    """What each mutant changes, as mutmut shows it (one process for all of them)."""
    if not names:
        return {}
    shown = subprocess.run(
        [sys.executable, "-c", _DIFFS],
        cwd=work,
        input=json.dumps(list(names)),
        capture_output=True,
        text=True,
        check=True,
    )
    diffs: dict[str, str] = json.loads(shown.stdout.splitlines()[-1])
    return diffs


def written_lines(diff: str) -> list[str]:
    return [line[1:].strip() for line in diff.splitlines() if line.startswith("+")][1:]


def not_killed(work: Path, modules: Sequence[str]) -> list[str]:
    """The mutants of the last run in ``work`` that no test killed."""
    names = []
    for module in modules:
        meta = json.loads((work / "mutants" / f"{module}.meta").read_text("utf-8"))
        names += [n for n, c in meta["exit_code_by_key"].items() if status_of(c) in NOT_KILLED]
    return sorted(names)


def refresh_tests(room: Room, modules: Sequence[str]) -> tuple[Path, list[str]]:
    """The last run's scratch directory with today's tests, and its mutants to run again.
    The code must be the code that run mutated: new tests can kill a survivor, never bring a
    killed mutant back, so only survivors need running again."""
    work = SCRATCH / room.name
    if not (work / "mutants").is_dir():
        raise RuntimeError(f"no earlier run of {room.name} to go on from: run it in full")
    for module in modules:
        if (work / module).read_bytes() != (ROOT / module).read_bytes():
            raise RuntimeError(f"{module} changed since the last full run: run it in full")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for target in (work / "tests", work / "mutants" / "tests"):
        shutil.rmtree(target)
        shutil.copytree(ROOT / "tests", target, ignore=ignore)
    # The rest of src as it is now (the tests may need it); the room's mutated modules and
    # mutmut's records beside them stay as the full run left them.
    for path in (ROOT / "src").rglob("*"):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_file() and "__pycache__" not in rel and rel not in modules:
            for target in (work / rel, work / "mutants" / rel):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
    return work, not_killed(work, modules)


def run_room(room: Room, modules: Sequence[str], workers: int, again: bool) -> Outcome:
    names: list[str] = []
    if again:
        work, names = refresh_tests(room, modules)
    else:
        work = prepare(room, modules)
    what = f"{len(names)} surviving mutants of" if again else "mutating"
    print(f"== {room.name}: {what} {len(modules)} modules", flush=True)
    start = time.monotonic()
    log = work / "mutmut.log"
    with log.open("w") as out:
        done = subprocess.run(
            [mutmut_command(), "run", "--max-children", str(workers), *names],
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    seconds = time.monotonic() - start
    if done.returncode != 0:
        tail = log.read_text("utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"mutmut run failed in {work} (exit {done.returncode}):\n{tail}")
    return results(room, modules, seconds)


def results(room: Room, modules: Sequence[str], seconds: float) -> Outcome:
    """The outcome of the last run of ``room`` (in its scratch directory)."""
    work = SCRATCH / room.name
    if not (work / "mutants").is_dir():
        raise RuntimeError(f"no run of {room.name} to report")
    codes: dict[str, dict[str, int | None]] = {}
    for module in modules:
        meta = json.loads((work / "mutants" / f"{module}.meta").read_text("utf-8"))
        codes[module] = dict(sorted(meta["exit_code_by_key"].items()))
    diffs = diffs_of(
        work,
        [n for per in codes.values() for n, c in per.items() if status_of(c) in NOT_KILLED],
    )
    by_module: dict[str, Counter[str]] = {}
    survivors: list[str] = []
    equivalent: list[str] = []
    stale: list[str] = []
    report: list[str] = []
    for module, per_module in codes.items():
        counts: Counter[str] = Counter()
        for name, code in per_module.items():
            status = status_of(code)
            if status in NOT_KILLED:
                diff = diffs[name]
                judged = EQUIVALENT.get(name)
                if judged is not None and judged[0] in written_lines(diff):
                    equivalent.append(name)
                    status = "equivalent"
                else:
                    if judged is not None:
                        stale.append(name)
                    survivors.append(name)
                    report.append(f"# {name}: {status}\n{diff}\n")
            counts[status] += 1
        by_module[module] = counts
    (work / "survivors.txt").write_text("\n".join(report), "utf-8")
    return Outcome(room, seconds, by_module, survivors, equivalent, stale)


def show(outcome: Outcome) -> bool:
    def line(label: str, counts: Counter[str]) -> str:
        score = Outcome.score(counts)
        shown = "  n/a" if score is None else f"{score:6.1%}"
        rest = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        return f"  {shown}  {label}  ({rest})"

    for module, counts in outcome.by_module.items():
        print(line(module, counts))
    score = Outcome.score(outcome.counts)
    ok = score is None or score >= outcome.room.threshold
    print(line(f"ROOM {outcome.room.name}", outcome.counts))
    print(
        f"  {'PASS' if ok else 'FAIL'}: threshold {outcome.room.threshold:.0%}, "
        f"{outcome.seconds / 60:.1f} minutes run, {len(outcome.survivors)} survivors "
        f"({SCRATCH.name}/{outcome.room.name}/survivors.txt), "
        f"{len(outcome.equivalent)} judged equivalent"
    )
    for name in outcome.stale:
        print(f"  STALE equivalent entry (mutant now writes another line): {name}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rooms", nargs="*", help="rooms to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the rooms and exit")
    parser.add_argument("--workers", type=int, default=2, help="mutmut's --max-children")
    parser.add_argument(
        "--changed",
        metavar="REF",
        help="only modules changed since the merge base with REF (e.g. origin/main)",
    )
    parser.add_argument(
        "--survivors",
        action="store_true",
        help="after new tests: run again only the last run's survivors (the code unchanged)",
    )
    parser.add_argument(
        "--report", action="store_true", help="only report the last run's results, run nothing"
    )
    args = parser.parse_args(argv)
    rooms = [room_named(n) for n in args.rooms] if args.rooms else list(ROOMS)
    if args.list:
        for room in rooms:
            tests = " ".join((*room.tests, *room.narrow))
            print(f"{room.name} (>= {room.threshold:.0%}), tests: {tests}")
            for module in modules_of(room):
                print(f"    {module}")
        return 0
    changed = changed_modules(args.changed) if args.changed else None
    if args.changed and changed is None:
        print(f"git cannot tell what changed since {args.changed}: no room run")
        return 0
    ok = True
    try:
        for room in rooms:
            modules = modules_of(room)
            if changed is not None:
                modules = [m for m in modules if m in changed]
                if not modules:
                    print(f"== {room.name}: no module changed since {args.changed}")
                    continue
            if args.report:
                outcome = results(room, modules, 0.0)
            else:
                outcome = run_room(room, modules, args.workers, args.survivors)
            ok = show(outcome) and ok
    except RuntimeError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
