"""End to end on the simulated web's article world (``simweb.articles``): every page's main
text, Markdown and language in its document, checked against what the generator wrote;
declared canonicals crawled and their copies named; near-duplicates across sites found."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from courtier.cli import main
from courtier.simweb import articles
from courtier.simweb.network import Network
from courtier.simweb.pages import PageRenderer
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import SIZE_PRESETS, World
from courtier.sinks.documents import read_documents

# In the long run (CI runs it after the default one): a crawl of the articles world; the
# text, Markdown, language and fingerprint have fast tests in tests/content.
pytestmark = pytest.mark.long


@dataclasses.dataclass
class TextRun:
    world: World
    renderer: PageRenderer
    documents: list[dict]
    stats: dict

    def truth(self, document: dict) -> articles.Article | None:
        parts = urlsplit(document["url"])
        return self.renderer.article_of(parts.hostname or "", parts.path, parts.query)

    def html(self) -> list[dict]:
        return [
            d
            for d in self.documents
            if d.get("status") == 200 and d.get("content_type", "").startswith("text/html")
        ]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> TextRun:
    tmp = tmp_path_factory.mktemp("text")
    # Generous budgets on both sides: the test is about what is read, not about pacing.
    params = dataclasses.replace(SIZE_PRESETS["articles"], seed=5, origin_budget=40.0)
    with SimWebProcess(tmp / "web", params) as web:
        args = ["crawl", "--seeds", str(web.seeds_path), "--dns", web.dns]
        args += ["--allow-net", web.allow_net, "--out", str(tmp / "out")]
        args += ["--duration", "14", "--json", "--no-warc"]
        args += ["-s", "limits.site.rate=8", "-s", "limits.origin.rate=40"]
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(args) == 0
        block = int(web.allow_net.split(".")[1])
        renderer = PageRenderer(web.world, Network(block, web.port))
    stats = json.loads(buffer.getvalue().strip().splitlines()[-1])
    documents = list(read_documents(Path(tmp) / "out"))
    return TextRun(web.world, renderer, documents, stats)


def test_main_text_is_clean_on_at_least_95_percent_of_pages(run: TextRun) -> None:
    pages = [(d, run.truth(d)) for d in run.html()]
    pages = [(d, truth) for d, truth in pages if truth is not None]
    assert len(pages) >= 200, len(pages)
    clean = 0
    for document, truth in pages:
        text = document.get("text") or ""
        present = truth.title in text and all(p in text for p in truth.paragraphs)
        absent = not any(phrase in text for phrase in truth.boilerplate)
        markdown = document.get("markdown") or ""
        clean += present and absent and markdown.startswith(f"# {truth.title}")
    assert clean >= 0.95 * len(pages), (clean, len(pages))


def test_languages_are_right_and_at_least_five(run: TextRun) -> None:
    seen: Counter[str] = Counter()
    wrong = []
    for document in run.html():
        truth = run.truth(document)
        if truth is None:
            continue
        seen[truth.language] += 1
        if document.get("language") != truth.language:
            wrong.append((document["url"], document.get("language"), truth.language))
    assert len(seen) >= 5, seen
    assert not wrong, wrong[:5]


def _by_url(run: TextRun) -> dict[str, dict]:
    return {d["url"]: d for d in run.html()}


def test_a_canonical_named_only_by_its_copies_is_crawled(run: TextRun) -> None:
    documents = _by_url(run)
    copies = [d for d in documents.values() if "/story/" in (d.get("canonical") or "")]
    copies = [d for d in copies if "/item/" in d["url"]]
    assert copies
    for copy in copies:
        assert copy["duplicate_of"] == copy["canonical"] and copy["duplicate"] == "canonical"
    fetched = [documents[c["canonical"]] for c in copies if c["canonical"] in documents]
    assert fetched, "no /story/N page, linked only as a canonical, was crawled"
    for story in fetched:
        assert story["canonical"] == story["url"] and "duplicate_of" not in story


def test_a_printable_copy_names_its_item_by_markup_and_by_header(run: TextRun) -> None:
    prints = [d for url, d in _by_url(run).items() if url.endswith("/print")]
    assert prints
    for page in prints:
        assert page["duplicate_of"] == page["url"].removesuffix("/print")
        assert page["duplicate"] == "canonical"
    numbers = {int(p["url"].split("/")[-2]) for p in prints}
    assert any(n % (2 * articles.PRINTABLE) == 0 for n in numbers), "no Link header canonical"
    assert any(n % (2 * articles.PRINTABLE) != 0 for n in numbers), "no markup canonical"


def test_canonicals_off_the_seed_or_broken_break_nothing(run: TextRun) -> None:
    seeds = set(run.world.seed_hosts)
    fetched = {d["url"] for d in run.documents}
    off = [d for d in run.html() if d["url"].endswith("/item/3")]
    broken = [d for d in run.html() if d["url"].endswith("/item/7")]
    assert off and broken
    for document in off:
        assert urlsplit(document["canonical"]).hostname not in seeds
        assert document["canonical"] not in fetched  # named, never crawled
        assert document["text"]
    for document in broken:
        assert "canonical" not in document and document["text"]
    assert run.stats["internal_errors"] == 0


def test_duplicates_across_urls_are_flagged(run: TextRun) -> None:
    documents = run.html()
    exact = [d for d in documents if d.get("duplicate") == "exact"]
    assert any("?" in d["url"] for d in exact), "a page served again under a query"
    for document in exact:
        assert document["duplicate_of"] != document["url"]
    near = [d for d in documents if "near_duplicate_of" in d]
    syndicated = [
        d for d in near if urlsplit(d["url"]).hostname != urlsplit(d["near_duplicate_of"]).hostname
    ]
    assert syndicated, "no syndicated article was found on a second site"
    pages = _by_url(run)
    for document in near:
        assert document["near_distance"] <= 3
        earlier = pages.get(document["near_duplicate_of"])
        assert earlier is None or earlier["text"] != document["text"]  # not exact
