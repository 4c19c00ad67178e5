"""End to end on the simulated web with documents besides HTML (``WorldParams.documents``):
a PDF's text and links, an RSS and an Atom feed's entry links, ``/sitemap.xml`` tried where
robots.txt names none, a parse hook's field in the documents, and ``courtier export
--format parquet`` read back by DuckDB."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import sqlite3
import textwrap
from pathlib import Path

import duckdb
import pytest

from courtier.cli import main
from courtier.simweb.documents import FEED_ONLY, feed_targets, pdf_links, pdf_text, pdf_title
from courtier.simweb.log import RequestRecord, read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import SiteKind, World, WorldParams
from courtier.sinks.documents import read_documents

# In the long run (CI runs it after the default one): a 20 s crawl of PDFs, feeds and
# sitemaps; each reader has fast tests in tests/content.
pytestmark = pytest.mark.long

HOOK = textwrap.dedent(
    """
    def extract(page):
        heading = page.tree.css_first("h1") if page.tree is not None else None
        return {
            "h1": heading.text(strip=True) if heading is not None else None,
            "words": len((page.text or "").split()),
            "server_header": any(name.lower() == "content-type" for name, _ in page.headers),
        }
    """
)


@dataclasses.dataclass
class Run:
    world: World
    out: Path
    stats: dict
    documents: list[dict]
    records: list[RequestRecord]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("documents")
    (tmp / "hooks").mkdir()
    (tmp / "hooks" / "docs_hook_e2e.py").write_text(HOOK)
    params = WorldParams(seed=5, n_standalone=3, n_cname_tenants=0, n_header_tenants=0, documents=1)
    with (
        pytest.MonkeyPatch.context() as patch,
        SimWebProcess(tmp / "web", params) as web,
    ):
        patch.syspath_prepend(str(tmp / "hooks"))  # spawned parse workers inherit sys.path
        args = ["crawl", "--seeds", str(web.seeds_path), "--dns", web.dns]
        args += ["--allow-net", web.allow_net, "--out", str(tmp / "out")]
        args += ["--duration", "25", "--json", "--no-warc"]
        args += ["-s", "limits.site.rate=3", "-s", "limits.origin.rate=20"]
        args += ["-s", "parse.hook=docs_hook_e2e:extract"]
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(args) == 0
        records = list(read_log(web.log_path))
        world = web.world
    stats = json.loads(buffer.getvalue().strip().splitlines()[-1])
    documents = list(read_documents(tmp / "out"))
    return Run(world, tmp / "out", stats, documents, records)


def _seed_sites(run: Run) -> list:
    return [site for site in run.world.sites.values() if site.kind is SiteKind.STANDALONE]


def _doc(run: Run, url: str) -> dict:
    found = [d for d in run.documents if d["url"] == url]
    assert found, f"no document of {url}"
    return found[0]


def test_a_pdfs_text_title_and_links_are_in_its_document(run: Run) -> None:
    pdfs = [d for d in run.documents if d.get("format") == "pdf"]
    assert pdfs, "no PDF was read"
    for document in pdfs:
        site = next(
            s for s in run.world.sites.values() if document["url"].startswith(f"http://{s.host}/")
        )
        n = int(document["url"].rsplit("/", 1)[1].removesuffix(".pdf"))
        assert document["title"] == pdf_title(site, n)
        for line in pdf_text(site, n):
            assert line in document["text"]
        assert document["links"] == [f"http://{site.host}{path}" for path in pdf_links(n)]
        assert "pdf_error" not in document
    assert run.stats["formats"]["pdf"] == len(pdfs)


def test_feed_entry_links_are_found_and_go_to_the_intake(run: Run) -> None:
    feeds = [d for d in run.documents if d.get("format") == "feed"]
    versions = {d["feed_version"] for d in feeds}
    assert versions == {"rss20", "atom10"}, versions  # the RSS <link>, the Atom <link>
    for document in feeds:
        host = document["url"].split("/")[2]
        expected = [f"http://{host}{path}" for path in feed_targets(run.world.params)]
        assert document["links"] == expected
    assert run.stats["formats"]["feed"] == len(feeds)
    # What a feed lists joins the frontier like a page's links (to be booked and checked
    # against robots.txt as any URL): the URL only feeds link is there, at a feed's depth + 1.
    with sqlite3.connect(run.out / "frontier.sqlite3") as store:
        rows = store.execute(
            "SELECT site, depth FROM urls WHERE fetch_url LIKE ?", (f"%{FEED_ONLY}",)
        ).fetchall()
    assert {site for site, _depth in rows} == {d["url"].split("/")[2] for d in feeds}
    assert {depth for _site, depth in rows} == {2}


def test_sitemap_xml_is_tried_after_the_home_page_where_robots_txt_names_none(run: Run) -> None:
    seeds = {site.host for site in _seed_sites(run)}
    asked = {r.host for r in run.records if r.target == "/sitemap.xml"}
    assert asked and asked <= seeds
    for host in asked:
        paths = [r.target for r in sorted(run.records, key=lambda r: r.start) if r.host == host]
        assert paths[0] == "/robots.txt"  # booked like any request, robots.txt first
        assert paths.index("/") < paths.index("/sitemap.xml")  # after the home page was read
        assert paths.count("/sitemap.xml") == 1


def test_the_hooks_fields_are_in_every_parsed_documents(run: Run) -> None:
    pages = [d for d in run.documents if d.get("content_type", "").startswith("text/html")]
    parsed = [d for d in pages if d.get("status") == 200]
    assert parsed
    for document in parsed:
        assert "hook_error" not in document, document["hook_error"]
        assert document["hook"]["h1"] == document["title"]
        assert document["hook"]["server_header"] is True
        assert document["hook"]["words"] > 0
    for document in (d for d in run.documents if d.get("format") == "pdf"):
        assert document["hook"]["h1"] is None  # no tree: the hook saw the PDF's text
        assert document["hook"]["words"] == len(document["text"].split())
    assert run.stats["hook_fields"] >= len(parsed)
    assert run.stats["hook_errors"] == {}


def test_export_parquet_is_read_back_by_duckdb(run: Run, tmp_path: Path) -> None:
    target = tmp_path / "documents.parquet"
    assert main(["export", "--out", str(run.out), "--format", "parquet", "-o", str(target)]) == 0
    rows = duckdb.sql(f"SELECT url, hook.h1 AS h1, text FROM read_parquet('{target}')").fetchall()
    assert sorted(r[0] for r in rows) == sorted(d["url"] for d in run.documents)
    by_url = {r[0]: r for r in rows}
    pdf = next(d for d in run.documents if d.get("format") == "pdf")
    assert by_url[pdf["url"]][2] == pdf["text"]
    html = next(d for d in run.documents if "hook" in d and d["hook"]["h1"])
    assert by_url[html["url"]][1] == html["hook"]["h1"]


def test_query_views_documents_and_texts(run: Run) -> None:
    buffer = io.StringIO()
    sql = "SELECT count(*) AS n FROM texts WHERE format = 'pdf'"
    with contextlib.redirect_stdout(buffer):
        assert main(["query", "--out", str(run.out), sql, "--json"]) == 0
    pdfs = sum(d.get("format") == "pdf" for d in run.documents)
    assert json.loads(buffer.getvalue()) == {"n": pdfs}


def test_every_document_matches_the_published_schema(run: Run) -> None:
    """PDFs, feeds, sitemaps, pages with a hook's fields and media: each record as
    docs/documents.schema.json says, written in gzip segments with RFC 3339 times."""
    from document_schema import schema_errors

    formats = {d.get("format") for d in run.documents}
    assert {"pdf", "feed"} <= formats and any("hook" in d for d in run.documents)
    assert schema_errors(run.documents) == []
    assert list((run.out / "documents").glob("documents-*.jsonl.gz"))
    assert not (run.out / "documents.jsonl").exists()
