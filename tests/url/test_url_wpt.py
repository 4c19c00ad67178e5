"""The web-platform-tests URL and IDNA cases, run against Courtier's canonicalisation.

Every case must either match WHATWG exactly or be a *deliberate* deviation: Courtier is
stricter than WHATWG in three documented ways (see courtier.url.host), and a deviation only
counts as explained when the expected WHATWG host itself breaks one of those rules, checked
here independently of the code under test:

- ``empty-label``: the host has an empty label (``a..b``, ``.``) — WHATWG keeps them, DNS
  cannot resolve them.
- ``dns-length``: a label over 63 or a name over 253 octets (UTS-46 VerifyDnsLength, which
  WHATWG turns off).
- ``xn-validity``: an ``xn--`` label that does not decode to a valid IDNA label (checked with
  the ``idna`` package). UTS-46 requires this check on ``xn--`` labels; ada 4.0 and the
  vendored test data pass such labels through unchecked.

One trailing dot is not a deviation: WHATWG keeps it, we remove it, and the comparison does too.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import idna
import pytest

from courtier.url import UrlError, canonical_host, parse_url

TESTDATA = Path("/work/shared/testdata")
_SCHEME = re.compile(r"^[\x00-\x20]*([A-Za-z][A-Za-z0-9+.\-]*):")


def _cases(name: str) -> list[dict[str, Any]]:
    data = json.loads((TESTDATA / name).read_text(encoding="utf-8"))
    return [case for case in data if isinstance(case, dict)]


def _is_http_case(case: dict[str, Any]) -> bool:
    """Cases whose URL is (or, for failures, would be) http or https."""
    if not case.get("failure"):
        return str(case["href"]).startswith(("http:", "https:"))
    scheme = _SCHEME.match(case["input"])
    if scheme is not None:
        return scheme.group(1).lower() in ("http", "https")
    base = case.get("base") or ""
    return base.startswith(("http:", "https:"))


def _without_one_dot(host: str) -> str:
    return host[:-1] if host.endswith(".") and not host.startswith("[") else host


def _deviation_rules(expected_host: str) -> set[str]:
    """Which of our stricter rules the WHATWG result breaks, judged without our code."""
    name = _without_one_dot(expected_host)
    labels = name.split(".")
    rules = set()
    if not name or "" in labels:
        rules.add("empty-label")
    if len(name) > 253 or any(len(label) > 63 for label in labels):
        rules.add("dns-length")
    for label in labels:
        if label.startswith("xn--"):
            try:
                idna.decode(label)
            except (idna.IDNAError, UnicodeError):
                rules.add("xn-validity")
    return rules


_MESSAGE_OF_RULE = {
    "empty-label": re.compile(r"empty label|has no name|empty host"),
    "dns-length": re.compile(r"octets long"),
    "xn-validity": re.compile(r"punycode|not a valid IDNA label|non-ASCII name"),
}


def _assert_explained_rejection(expected_host: str, error: UrlError) -> str:
    rules = _deviation_rules(expected_host)
    assert rules, f"rejected {expected_host!r} ({error}) but WHATWG accepts it"
    matching = sorted(rule for rule in rules if _MESSAGE_OF_RULE[rule].search(str(error)))
    assert matching, (rules, str(error))
    return matching[0]


URL_CASES = [case for case in _cases("urltestdata.json") if _is_http_case(case)]
TOASCII = _cases("toascii.json")
IDNA_V2 = _cases("IdnaTestV2.json")


def _expected_fetch_url(case: dict[str, Any]) -> str:
    href = str(case["href"]).partition("#")[0]
    path_start = href.index("/", len(case["protocol"]) + 2)
    hostname = case["hostname"]
    host = _without_one_dot(hostname) + case["host"][len(hostname) :]
    return f"{case['protocol']}//{host}{href[path_start:]}"


def _classify_url_case(case: dict[str, Any]) -> str:
    """The outcome of one urltestdata case; AssertionError when it is neither match nor rule."""
    if case.get("failure"):
        with pytest.raises(UrlError):
            parse_url(case["input"], case.get("base"))
        return "rejected as WHATWG rejects"
    try:
        url = parse_url(case["input"], case.get("base"))
    except UrlError as error:
        return f"deliberately rejected ({_assert_explained_rejection(case['hostname'], error)})"
    assert url.host == _without_one_dot(case["hostname"]).strip("[]")
    assert url.port == (int(case["port"]) if case["port"] else None)
    assert url.fetch_url == _expected_fetch_url(case)
    assert parse_url(url.canonical).canonical == url.canonical
    return "matches WHATWG"


def _classify_host_case(case: dict[str, Any]) -> str:
    """The outcome of one toascii/IdnaTestV2 case (``output`` null means WHATWG rejects)."""
    expected = case["output"]
    try:
        got = canonical_host(case["input"])
    except UrlError as error:
        if expected is None:
            return "rejected as WHATWG rejects"
        return f"deliberately rejected ({_assert_explained_rejection(expected, error)})"
    assert expected is not None, f"accepted {case['input']!r} as {got!r}; WHATWG rejects it"
    assert got == _without_one_dot(expected)
    return "matches WHATWG"


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [repr(case["input"])[:60] for case in cases]


@pytest.mark.parametrize("case", URL_CASES, ids=_ids(URL_CASES))
def test_wpt_url_case_matches_whatwg_or_a_documented_stricter_rule(case: dict[str, Any]) -> None:
    _classify_url_case(case)


@pytest.mark.parametrize("case", TOASCII, ids=_ids(TOASCII))
def test_wpt_toascii_case_matches_whatwg_or_a_documented_stricter_rule(
    case: dict[str, Any],
) -> None:
    _classify_host_case(case)


def test_wpt_idna_v2_cases_match_whatwg_or_a_documented_stricter_rule() -> None:
    # 2,671 cases in one test: parametrizing them would only slow the suite down.
    failures = []
    for case in IDNA_V2:
        try:
            _classify_host_case(case)
        except AssertionError as error:
            failures.append(f"{case['input']!r}: {error}")
    assert not failures, "\n".join(failures[:20])


def wpt_tally() -> dict[str, Counter[str]]:
    """Outcome counts per data file (printed by the test below and by docs/url.md's command)."""
    return {
        "urltestdata (http/https)": Counter(map(_classify_url_case, URL_CASES)),
        "toascii": Counter(map(_classify_host_case, TOASCII)),
        "IdnaTestV2": Counter(map(_classify_host_case, IDNA_V2)),
    }


def test_wpt_outcome_counts() -> None:
    """Every case is accounted for; run with ``-s`` to see the counts."""
    tally = wpt_tally()
    for source, counts in tally.items():
        print(f"{source}: {sum(counts.values())} cases")
        for outcome, count in sorted(counts.items()):
            print(f"  {outcome}: {count}")
    assert sum(tally["urltestdata (http/https)"].values()) == len(URL_CASES)
    assert tally["urltestdata (http/https)"]["matches WHATWG"] > 0
