"""The article world: pages in six languages with boilerplate around their main content,
and ground truth for tests; worlds that do not ask for it are unchanged."""

from __future__ import annotations

import dataclasses

from courtier.simweb import articles
from courtier.simweb.network import Network
from courtier.simweb.pages import PageRenderer
from courtier.simweb.world import SIZE_PRESETS, WorldParams, build_world

NETWORK = Network(block=40, port=8080)


def renderer(params: WorldParams) -> PageRenderer:
    return PageRenderer(build_world(params), NETWORK)


def test_every_seed_page_is_an_article_in_its_sites_language_with_boilerplate():
    pages = renderer(SIZE_PRESETS["articles"])
    languages = set()
    for host in pages.world.seed_hosts:
        site = pages.world.sites[host]
        for path in ("/", "/list/1", "/item/2"):
            page = pages.render(site, path, "")
            truth = pages.article_of(host, path)
            assert page.status == 200 and truth is not None
            body = page.body.decode()
            assert f'<html lang="{truth.language}">' in body
            for paragraph in truth.paragraphs:
                assert paragraph.replace("&", "&amp;") in body
            for phrase in truth.boilerplate:
                assert phrase.replace("&", "&amp;") in body
            languages.add(truth.language)
    assert languages == {language.code for language in articles.LANGUAGES}


def test_copies_declare_their_canonicals():
    pages = renderer(SIZE_PRESETS["articles"])
    site = pages.world.sites[pages.world.seed_hosts[0]]
    origin = NETWORK.origin_url(site.host)
    header = pages.render(site, "/item/8/print", "")
    assert ("Link", f'<{origin}/item/8>; rel="canonical"') in header.headers
    markup = pages.render(site, "/item/4/print", "").body.decode()
    assert f'<link rel="canonical" href="{origin}/item/4">' in markup
    assert (
        '<link rel="canonical" href="/story/5">' in pages.render(site, "/item/5", "").body.decode()
    )
    story = pages.render(site, "/story/5", "")
    assert story.status == 200
    assert pages.article_of(site.host, "/story/5") == pages.article_of(site.host, "/item/5")
    assert pages.render(site, "/story/4", "").status == 404


def test_syndicated_items_share_their_text_within_a_language():
    pages = renderer(SIZE_PRESETS["articles"])
    by_language: dict[str, list[articles.Article]] = {}
    for host in pages.world.seed_hosts:
        truth = pages.article_of(host, f"/item/{articles.SYNDICATED + 1}")
        assert truth is not None
        by_language.setdefault(truth.language, []).append(truth)
    shared = [group for group in by_language.values() if len(group) > 1]
    assert shared
    for group in shared:
        assert len({truth.paragraphs[1:] for truth in group}) == 1
        assert len({truth.title for truth in group}) == 1


def test_worlds_without_articles_are_unchanged():
    params = dataclasses.replace(SIZE_PRESETS["small"])
    assert params.articles == 0
    pages = renderer(params)
    host = pages.world.seed_hosts[0]
    body = pages.render(pages.world.sites[host], "/item/4", "").body
    assert b"cookie" not in body and len(body) >= params.page_bytes
    assert pages.article_of(host, "/item/4") is None
    assert pages.render(pages.world.sites[host], "/item/4/print", "").status == 404
