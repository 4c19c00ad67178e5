"""A parse hook that returns a ``HookResult``: links added (through the crawl's intake: scope,
horizon, secrets), links dropped before discovery, a priority carried to the new URLs, every
malformed result a hook error with the page kept as read; and a hook given to ``Crawler`` as
a function, named by reference for the parse workers (a lambda or a closure refused at once).

The hooks are this module's own functions, named ``test_hook_results:NAME`` (pytest puts the
module's directory on ``sys.path``)."""

from __future__ import annotations

import pickle
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from courtier import Crawler, HookPage, HookResult, InputError
from courtier.content.hook import HOOK_ERRORS, MAX_LINKS, HookError, spec_of
from courtier.content.reading import ReadContext, read_page
from courtier.frontier.base import LeasedUrl, UrlLane
from courtier.frontier.surface import SurfacePolicy
from courtier.net.policy import AddressPolicy
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.stats import CrawlStats
from key_samples import B62, rep

URL = "http://shop.test/list/1"
PAGE = (
    b"<title>List</title><link rel='canonical' href='/list/first'>"
    b"<a href='/item/1'>1</a><a href='/item/2'>2</a><a href='/search?q=x'>s</a>"
    b"<a href='/item/3?ref=list'>3</a><a href='http://elsewhere.test/'>e</a>"
    b"<img src='/img/1.jpg'><img src='/img/ad.jpg'>"
)
SECRET = "AIza" + rep(B62, 35)


# -- hooks (module level: the parse workers import them by name) -----------------------------


def fields_only(page: HookPage) -> dict[str, Any]:
    return {"title": page.title}


def steer(page: HookPage) -> HookResult:
    return HookResult(
        fields={"n": 1},
        add=[
            "/item/9",  # relative to the page
            "http://shop.test/item/1",  # linked already: not added twice
            "http://elsewhere.test/from-hook",  # outside the seed: horizon
            f"/item/10?key={SECRET}",  # a secret: redacted, then refused by the intake
            "mailto:someone@shop.test",  # no http(s) URL: a bad link
            "/search?q=added",  # added, but dropped all the same
        ],
        drop=["/item/2", re.compile(r"/search\?"), re.compile(r"[?&]ref="), "/img/ad.jpg"],
        priority=7,
    )


def drop_canonical(page: HookPage) -> HookResult:
    return HookResult(drop=["http://shop.test/list/first"])


def add_as_string(page: HookPage) -> HookResult:
    return HookResult(add="http://shop.test/x")  # type: ignore[arg-type]


def add_numbers(page: HookPage) -> HookResult:
    return HookResult(add=[1, 2])  # type: ignore[list-item]


def drop_bytes(page: HookPage) -> HookResult:
    return HookResult(drop=[re.compile(rb"/item")])  # type: ignore[list-item]


def drop_dicts(page: HookPage) -> HookResult:
    return HookResult(drop=[{"url": "/item/1"}])  # type: ignore[list-item]


def negative_priority(page: HookPage) -> HookResult:
    return HookResult(priority=-1)


def priority_too_high(page: HookPage) -> HookResult:
    return HookResult(priority=101)


def priority_a_float(page: HookPage) -> HookResult:
    return HookResult(priority=1.5)  # type: ignore[arg-type]


def priority_a_bool(page: HookPage) -> HookResult:
    return HookResult(priority=True)


def fields_a_list(page: HookPage) -> HookResult:
    return HookResult(fields=["a"])  # type: ignore[arg-type]


def too_many_links(page: HookPage) -> HookResult:
    return HookResult(add=[f"/p/{n}" for n in range(MAX_LINKS + 1)])


class Hooks:
    def method(self, page: HookPage) -> dict[str, Any]:
        return {}


def _read(name: str) -> Any:
    context = ReadContext("text/html", hook=f"{__name__}:{name}", hook_timeout=2.0)
    return read_page(PAGE, URL, context)


def _urls(links: list[Any]) -> list[str]:
    return [link.fetch_url for link in links]


# -- what a result does to the page ----------------------------------------------------------


def test_a_plain_dict_is_fields_and_leaves_the_links_alone() -> None:
    page = _read("fields_only")
    assert page.fields["hook"] == {"title": "List"}
    assert "hook_links" not in page.fields and page.priority == 0
    assert len(page.links) == 5 and len(page.images) == 2


def test_links_are_dropped_and_added_before_the_crawl_sees_them() -> None:
    page = _read("steer")
    assert page.fields["hook"] == {"n": 1}
    assert _urls(page.links) == [
        "http://shop.test/item/1",
        "http://elsewhere.test/",
        "http://shop.test/item/9",
        "http://elsewhere.test/from-hook",
        "http://shop.test/item/10?key=[REDACTED:google-api-key]",
    ]
    assert _urls(page.images) == ["http://shop.test/img/1.jpg"]
    done = page.fields["hook_links"]
    assert done["dropped"] == [
        "http://shop.test/item/2",
        "http://shop.test/search?q=x",
        "http://shop.test/item/3?ref=list",
        "http://shop.test/img/ad.jpg",
    ]
    assert done["added"] == [
        "http://shop.test/item/9",
        "http://elsewhere.test/from-hook",
        "http://shop.test/item/10?key=[REDACTED:google-api-key]",
    ]
    assert done["not_urls"] == ["mailto:someone@shop.test"] and page.bad_links == 1
    assert done["priority"] == page.priority == 7
    assert SECRET not in repr(page.fields) and SECRET not in repr(page.links)


def test_a_dropped_canonical_is_no_link_of_the_page() -> None:
    assert _read("fields_only").canonical is not None
    page = _read("drop_canonical")
    assert page.canonical is None
    assert page.fields["hook_links"]["dropped"] == ["http://shop.test/list/first"]


def test_the_priority_crosses_the_process_boundary_with_the_page() -> None:
    page = _read("steer")
    again = pickle.loads(pickle.dumps(page))
    assert again.priority == 7 and again.links == page.links
    assert again.fields["hook_links"] == page.fields["hook_links"]


def test_the_crawls_discovery_takes_the_hooks_links_as_the_pages_own() -> None:
    """Inside the seed: new URLs with the page's priority; outside: horizon, never fetched;
    a secret: refused at the intake; a dropped link: never seen."""
    lane = SiteLane("shop.test", "shop.test", "http")
    stats = CrawlStats()
    discovery = Discovery(
        {"shop.test": lane}, {"shop.test"}, stats, AddressPolicy(), SurfacePolicy()
    )
    discovery.page(lane, LeasedUrl(1, URL, "shop.test", 1, 0), _read("steer"))
    new_urls, horizon, _edges, _evictions = discovery.drain()
    assert {(u.fetch_url, u.depth, u.priority, u.lane) for u in new_urls} == {
        ("http://shop.test/item/1", 2, 7, UrlLane.DISCOVERY),
        ("http://shop.test/item/9", 2, 7, UrlLane.DISCOVERY),
        ("http://shop.test/list/first", 2, 7, UrlLane.DISCOVERY),  # the declared canonical
        ("http://shop.test/img/1.jpg", 2, 7, UrlLane.DISCOVERY),
    }
    assert {h.canonical for h in horizon} == {
        "http://elsewhere.test/",
        "http://elsewhere.test/from-hook",
    }
    assert stats.refused["secret-in-url"] == 1
    assert stats.hook_fields == 1 and not stats.hook_errors


def test_a_page_without_a_hook_brings_urls_of_priority_zero() -> None:
    lane = SiteLane("shop.test", "shop.test", "http")
    discovery = Discovery(
        {"shop.test": lane}, {"shop.test"}, CrawlStats(), AddressPolicy(), SurfacePolicy()
    )
    page = read_page(PAGE, URL, ReadContext("text/html"))
    discovery.page(lane, LeasedUrl(1, URL, "shop.test", 1, 0), page)
    assert {u.priority for u in discovery.drain()[0]} == {0}


# -- a result that cannot be used ------------------------------------------------------------


@pytest.mark.parametrize(
    ("hook", "error"),
    [
        ("add_as_string", "hook-bad-result: add is str, not a list"),
        ("add_numbers", "hook-bad-result: add holds int, not only URL strings"),
        ("drop_bytes", "hook-bad-result: drop holds a bytes pattern"),
        ("drop_dicts", "hook-bad-result: drop holds dict"),
        ("negative_priority", "hook-bad-result: priority -1 is not from 0 to 100"),
        ("priority_too_high", "hook-bad-result: priority 101 is not from 0 to 100"),
        ("priority_a_float", "hook-bad-result: priority is float, not an int"),
        ("priority_a_bool", "hook-bad-result: priority is bool, not an int"),
        ("fields_a_list", "hook-not-dict: fields are list"),
        ("too_many_links", f"hook-too-large: {MAX_LINKS + 1} URLs to add"),
    ],
)
def test_a_malformed_result_is_a_hook_error_and_the_page_is_kept_as_read(
    hook: str, error: str
) -> None:
    page = _read(hook)
    assert str(page.fields["hook_error"]).startswith(error), page.fields["hook_error"]
    assert page.fields["hook_error"].partition(":")[0] in HOOK_ERRORS
    assert "hook" not in page.fields and "hook_links" not in page.fields
    assert page.title == "List" and len(page.links) == 5 and len(page.images) == 2
    assert page.priority == 0 and page.canonical is not None


# -- a function for Crawler(hook=...) ----------------------------------------------------------


def test_a_module_level_function_is_named_by_reference() -> None:
    assert spec_of(steer) == f"{__name__}:steer"
    assert spec_of(Hooks.method) == f"{__name__}:Hooks.method"  # found by that name too


def _closure() -> Any:
    def inner(page: HookPage) -> dict[str, Any]:
        return {}

    return inner


@pytest.mark.parametrize(
    ("hook", "why"),
    [
        (lambda page: {}, "is a lambda"),
        (_closure(), "is defined inside a function"),
        (Hooks().method, "is not what that name finds"),  # a bound method
        (Hooks(), "is not a function"),
    ],
)
def test_a_function_the_workers_cannot_import_by_name_is_refused(hook: Any, why: str) -> None:
    with pytest.raises(HookError, match=why):
        spec_of(hook)


def test_a_function_of_a_main_no_other_process_can_import_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``python -c``, stdin, a notebook: a spawned worker could not import ``__main__``."""
    session = types.ModuleType("__main__")
    exec("def typed(page):\n    return {}\n", session.__dict__)
    monkeypatch.setitem(sys.modules, "__main__", session)
    with pytest.raises(HookError, match="a __main__ no other process can import"):
        spec_of(session.typed)
    session.__file__ = __file__  # a script file: spawned workers run it as their __main__
    assert spec_of(session.typed) == "__main__:typed"


@pytest.mark.parametrize(
    "hook",
    [lambda page: {"x": 1}, _closure()],
)
def test_a_crawler_refuses_a_lambda_or_a_closure_when_it_is_made(tmp_path: Path, hook: Any) -> None:
    with pytest.raises(ValueError, match=r"hook= .*(lambda|inside a function)") as raised:
        Crawler(seeds=["http://shop.test/"], store=tmp_path / "frontier.sqlite3", hook=hook)
    assert isinstance(raised.value, InputError)
    assert "top level of a module" in str(raised.value)
    assert not (tmp_path / "frontier.sqlite3").exists()  # refused before anything was made


def test_a_crawler_takes_a_module_level_function_as_its_hook(tmp_path: Path) -> None:
    crawler = Crawler(
        seeds=["http://shop.test/"],
        store=tmp_path / "frontier.sqlite3",
        hook=steer,
        config={"parse": {"hook": "courtier_no_such_module_here:fn"}},  # replaced
    )
    assert crawler.config.parse.hook == f"{__name__}:steer"
    named = Crawler(
        seeds=["http://shop.test/"], store=tmp_path / "b.sqlite3", hook=f"{__name__}:steer"
    )
    assert named.config.parse.hook == f"{__name__}:steer"
