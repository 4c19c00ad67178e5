"""The direct ada binding (courtier.url._ada) agrees with ada_url's public ``URL`` class.

``_ada`` reads ada's C API through a private module of the ada_url package for speed; this
guards against that API drifting under us when the package is upgraded.
"""

from __future__ import annotations

import pickle

import pytest
from ada_url import URL

from courtier.url import StoreRef, object_store, parse_url
from courtier.url._ada import parse

SAMPLES = [
    "https://user:pw@www.example.com:8443/a/b?q=1#frag",
    "http://[2001:db8::1]:8080/x?",
    "http://[::1]/",
    "https://tŷ.example/é?ä=1#x",
    "http://0x7f.1/a/../b",
    "http://example.com",
    "http://example.com/?#",
    "https://example.com./a%2Fb?c=%zz",
]


@pytest.mark.parametrize("raw", SAMPLES)
def test_direct_binding_matches_the_public_url_class(raw: str) -> None:
    parts = parse(raw)
    public = URL(raw)
    assert parts is not None
    assert parts.href == public.href
    assert parts.hostname == public.hostname
    assert parts.port == (int(public.port) if public.port else None)
    assert parts.href[parts.target_start : parts.target_end] == public.pathname + (
        "?" + public.search.removeprefix("?") if "?" in public.href.partition("#")[0] else ""
    )
    assert parts.has_credentials == bool(public.username or public.password)


def test_direct_binding_resolves_against_a_base_and_reports_failures() -> None:
    resolved = parse("../c?d", "http://example.com/a/b/")
    assert resolved is not None and resolved.href == "http://example.com/a/c?d"
    assert parse("http://exa mple.com/") is None
    assert parse("relative") is None


def test_parsed_values_pickle_for_parse_worker_processes() -> None:
    url = parse_url("https://bkt.s3.amazonaws.com/k?x=1")
    store = object_store(url)
    assert isinstance(store, StoreRef)
    assert pickle.loads(pickle.dumps(url)) == url
    assert pickle.loads(pickle.dumps(store)) == store
