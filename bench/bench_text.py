"""Parse-worker CPU per page for the main text, its language and its SimHash (``content.text``),
and the two extractors the issue named, measured on the simulated web's own pages.

Pages: the HTML pages of the first ``--sites`` seed sites of a world (home, two listings, six
items), rendered before the clock starts: ``web`` is the 2,000-site benchmark's world (pages
padded to ``--page-bytes`` with filler paragraphs in ``<main>``), ``articles`` the article world
(real sentences in six languages, boilerplate around them). What is timed is
``time.process_time()`` in this process (one core), the median of ``--repeat`` passes over all
pages, divided by the number of pages:

- ``read_page`` with ``[parse] text`` off and on (the whole parse-worker job without WARC
  encoding), and their difference: what the text costs a page;
- its parts: resiliparse's extraction (``extract_plain_text(main_content=True)`` as minimal
  HTML), the Markdown and text written from it, the language (CLD2) and the SimHash;
- trafilatura's ``extract`` to Markdown, the thorough alternative (when it is installed:
  ``pip install .[bench]``), and lingua's language (when ``lingua-language-detector`` is).

    PYTHONPATH=src python bench/bench_text.py
    PYTHONPATH=src python bench/bench_text.py --world articles --json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from collections.abc import Callable

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from courtier.content.language import identify
from courtier.content.reading import ReadContext, read_page
from courtier.content.simhash import simhash
from courtier.content.text import convert
from courtier.simweb.network import Network
from courtier.simweb.pages import PageRenderer
from courtier.simweb.world import SIZE_PRESETS, build_world


def pages(world_name: str, sites: int, page_bytes: int) -> list[bytes]:
    params = dataclasses.replace(SIZE_PRESETS[world_name], page_bytes=page_bytes)
    world = build_world(params)
    renderer = PageRenderer(world, Network(40, 8080))
    bodies = []
    for host in world.seed_hosts[:sites]:
        for path in ("/", "/list/1", "/list/2", *(f"/item/{n}" for n in range(1, 7))):
            page = renderer.render(world.sites[host], path, "")
            if page.status == 200 and page.content_type.startswith("text/html"):
                bodies.append(page.body)
    return bodies


def per_page_us(fn: Callable[[bytes], object], bodies: list[bytes], repeat: int) -> float:
    for body in bodies[:5]:
        fn(body)  # warm: models loaded, caches filled as in a running worker
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        for body in bodies:
            fn(body)
        runs.append((time.process_time() - start) / len(bodies) * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", choices=("web", "articles"), default="web")
    parser.add_argument("--sites", type=int, default=60)
    parser.add_argument("--page-bytes", type=int, default=6000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    bodies = pages(args.world, args.sites, args.page_bytes)
    url = "http://site.test/item/1"
    off, on = ReadContext("text/html", text=False), ReadContext("text/html")

    def extract(body: bytes) -> str:
        tree = HTMLTree.parse_from_bytes(body, "utf-8")
        return extract_plain_text(tree, preserve_formatting="minimal_html", main_content=True)

    extracts = [extract(body) for body in bodies]
    texts = [convert(e)[1] for e in extracts]
    by_extract = dict(zip(bodies, extracts, strict=True))
    by_text = dict(zip(bodies, texts, strict=True))
    figures = {
        "read_page, text off": per_page_us(lambda b: read_page(b, url, off), bodies, args.repeat),
        "read_page, text on": per_page_us(lambda b: read_page(b, url, on), bodies, args.repeat),
        "resiliparse extract": per_page_us(extract, bodies, args.repeat),
        "markdown + text": per_page_us(lambda b: convert(by_extract[b]), bodies, args.repeat),
        "language (CLD2)": per_page_us(lambda b: identify(by_text[b]), bodies, args.repeat),
        "simhash": per_page_us(lambda b: simhash(by_text[b]), bodies, args.repeat),
    }
    figures["text, all of it"] = figures["read_page, text on"] - figures["read_page, text off"]
    try:
        import trafilatura  # type: ignore[import-untyped]
    except ImportError:
        pass
    else:
        figures["trafilatura extract (markdown)"] = per_page_us(
            lambda b: trafilatura.extract(b.decode(), output_format="markdown"),
            bodies,
            max(1, args.repeat // 2),
        )
    try:
        from lingua import LanguageDetectorBuilder  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        detector = LanguageDetectorBuilder.from_all_languages().build()
        figures["language (lingua)"] = per_page_us(
            lambda b: detector.detect_language_of(by_text[b][:320]), bodies, args.repeat
        )
    size = sum(map(len, bodies)) / len(bodies)
    chars = sum(map(len, texts)) / len(texts)
    if args.json:
        print(json.dumps({"pages": len(bodies), "bytes": size, "text_chars": chars, **figures}))
        return
    print(f"{len(bodies)} pages of the {args.world} world, {size:.0f} bytes, {chars:.0f} chars")
    for name, value in figures.items():
        print(f"  {name:32} {value:8.0f} us/page")


if __name__ == "__main__":
    main()
