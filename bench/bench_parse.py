"""Parse-worker CPU per page: links, images, title and content fingerprint (``parse_page``).

Target (the hostile-web issue): at most 1.5 ms of parse-worker CPU per ordinary 100 KB page, and
hostile pages bounded: 100,000 nested ``<div>`` (500 KB) and 20 MB pages.

Pages are generated before the clock starts from a fixed seed: an ordinary news/listing page
(head with meta, styles and scripts; header, nav, inline SVG icons; an article with inline
markup, a table and figures; a grid of cards; ad and consent slots; aside; form; footer) padded
with more cards to the wanted size. What is timed is ``time.process_time()`` around
``parse_page(body, url)`` in this process (one core), best and median of ``--repeat`` runs;
``peak MB`` is the growth of the process's peak RSS during the first run of a page kind (so it
is only meaningful for pages larger than every earlier one).

A worker caches the links it canonicalised (``parse.canonical_link``, the path tails) and the
parts it judged on the way (queries, trap-pattern segments), so two figures per page:
``cold ms`` empties every one of those caches before every run (``parse.clear_link_caches``:
a new worker's first page); ``site ms`` is the median over a run of distinct pages of one
site (other items in the grid, the same navigation, header and footer), in a worker that
parsed two pages of it before. (Emptying ``canonical_link`` alone would leave path-absolute
links warm: 3.4 ms where a new worker takes 6.0-6.3.)

``--loop`` measures the event loop's side instead: ``Discovery.page`` on parsed 100 KB pages of
one site, in microseconds per link, with trap patterns as the worker now sends them and with
the loop computing them itself (as it did before).

    PYTHONPATH=src python bench/bench_parse.py
    PYTHONPATH=src python bench/bench_parse.py --repeat 50 --json
    PYTHONPATH=src python bench/bench_parse.py --phases     # where the time of a 100 KB page goes
    PYTHONPATH=src python bench/bench_parse.py --loop       # loop-side cost per link
    PYTHONPATH=src python bench/bench_parse.py --stages     # a worker's job on simulated pages
    PYTHONPATH=src python bench/bench_parse.py --stages --page-bytes 100000
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from courtier.content.parse import clear_link_caches, parse_page

_WORDS = ("garden", "spade", "review", "steel", "handle", "ash", "wood", "bed", "soil", "dig",
          "season", "price", "shop", "delivery", "week", "compost", "tool", "blade", "test",
          "bent", "kept", "three", "twelve", "weather", "spring", "autumn", "market", "local",
          "farm", "water", "hose", "rake", "hoe", "fork", "trowel", "glove", "boot", "shed",
          "fence", "path", "border", "lawn", "hedge", "tree", "plant")  # fmt: skip


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _icon(rng: random.Random) -> str:
    d = " ".join(
        f"M{rng.randint(0, 24)} {rng.randint(0, 24)}L{rng.randint(0, 24)} 4" for _ in range(3)
    )
    return f'<svg class="icon" viewBox="0 0 24 24" aria-hidden="true"><path d="{d}"/></svg>'


_BASE = "https://shop.example/garden/spades"


def _card(rng: random.Random, index: int) -> str:
    return (
        f'<div class="card card--product" data-id="p{index}">'
        f'<a class="card__link" href="/item/{index}?ref=grid&amp;pos={index % 40}">'
        f'<img src="/img/{index}.jpg" alt="{_sentence(rng, 3)}" loading="lazy" width="320" '
        f'height="240"></a><h3 class="card__title"><a href="/item/{index}">'
        f"{_sentence(rng, 5)}</a></h3>"
        f'<p class="card__text">{_sentence(rng, 14)} <em>{_sentence(rng, 3)}</em></p>'
        f'<span class="price">£{rng.randint(1, 99)}.{rng.randint(0, 99):02d}</span> '
        f'<time datetime="2026-11-{rng.randint(1, 30):02d}">{rng.randint(1, 59)} minutes ago</time>'
        f'<button class="btn add-to-cart" type="button">{_icon(rng)}Add</button></div>\n'
    )


def ordinary_page(size: int, seed: int = 1, first_item: int = 0) -> bytes:
    """A typical HTML page of about ``size`` bytes (never less); its grid starts at item
    ``first_item`` (pages of one listing differ there)."""
    rng = random.Random(seed)
    menu = "".join(
        f'<li class="menu__item"><a href="/section/{i}">{rng.choice(_WORDS).title()}</a></li>'
        for i in range(30)
    )
    script = "\n".join(
        f'  window.dataLayer.push({{"event": "view", "id": {i}, "html": "<div class=\\"x\\">'
        f'{rng.choice(_WORDS)}</div>"}});'
        for i in range(60)
    )
    style = "\n".join(
        f".c{i} {{ margin: {i}px; color: #{rng.randint(0, 0xFFFFFF):06x}; }}" for i in range(120)
    )
    article = "".join(
        f"<p>{_sentence(rng, 25)} <a href='/topic/{i}'>{_sentence(rng, 2)}</a> "
        f"<strong>{_sentence(rng, 4)}</strong> {_sentence(rng, 18)}</p>\n"
        for i in range(25)
    )
    table = "".join(
        f"<tr><td>{rng.choice(_WORDS)}</td><td>{rng.randint(1, 500)}</td>"
        f"<td><a href='/spec/{i}'>spec</a></td></tr>"
        for i in range(20)
    )
    head = (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<title>Garden tools: the best spades of 2026 | Example Shop</title>"
        + "".join(f'<meta name="m{i}" content="{_sentence(rng, 6)}">' for i in range(15))
        + "".join(f'<link rel="preload" href="/static/f{i}.woff2" as="font">' for i in range(5))
        + f"<style>{style}</style><script>window.dataLayer = [];\n{script}</script></head>\n"
        "<body class='page page--article'>\n"
        f"<div class='cookie-banner' role='dialog'>We use cookies. <button>OK</button></div>"
        f"<header class='site-header'>{_icon(rng)}<a href='/'>Example Shop</a>"
        f"<form action='/search'><input name='q'><button>{_icon(rng)}</button></form></header>\n"
        f"<nav class='menu'><ul>{menu}</ul></nav>\n<main><article><h1>{_sentence(rng, 7)}</h1>"
        f"<p class='byline'>Posted 30 November 2026 · Updated 5 minutes ago</p>{article}"
        f"<figure><img src='/img/hero.jpg' alt='hero'><figcaption>{_sentence(rng, 9)}"
        f"</figcaption></figure><table class='specs'><tbody>{table}</tbody></table>"
        f"<div class='ad-slot' data-ad-slot='x1'><a href='https://ads.example/c?1'>Ad</a></div>"
        "</article>\n<section class='grid'>\n"
    )
    tail = (
        f"</section></main>\n<aside class='sidebar'><h2>Related</h2>{menu}</aside>\n"
        + "<footer class='site-footer'><ul>"
        + "".join(f"<li><a href='/help/{i}'>{rng.choice(_WORDS)}</a></li>" for i in range(40))
        + "</ul><p>© 2026 Example Shop</p></footer>\n"
        "<script async src='/static/app.js?v=123'></script></body></html>\n"
    )
    parts = [head]
    used = len(head.encode()) + len(tail.encode())
    index = first_item
    while used < size:
        card = _card(rng, index)
        parts.append(card)
        used += len(card.encode())
        index += 1
    parts.append(tail)
    return "".join(parts).encode()


def small_page(size: int, seed: int = 1, first_item: int = 0) -> bytes:
    """A small page of about ``size`` bytes, shaped like the simulated web's (``simweb.pages``):
    a navigation list of 30 links (listings, items, a search, other hosts), two images, text."""
    rng = random.Random(seed)
    links = [f"/list/{i}" for i in range(5)] + [
        f"/item/{first_item + i}" for i in range(20)
    ]  # fmt: skip
    links += ["/search?q=spade&page=2", "/", "https://other.example/", "http://Shop.Example:80/x"]
    links.append(f"https://horizon{seed}.example/item/{first_item}")
    items = "".join(f'<li><a href="{href}">{rng.choice(_WORDS)}</a></li>' for href in links)
    head = (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{_sentence(rng, 4)}"
        f"</title></head><body><header><h1>{_sentence(rng, 4)}</h1></header>"
        f"<nav><ul>{items}</ul></nav><main><img src='/img/{first_item}.jpg' alt=''>"
        f"<img src='/img/{first_item + 1}.jpg' alt=''>"
        f"<p>Posted 30 November 2026, updated 5 minutes ago.</p>"
    )
    tail = "</main></body></html>\n"
    parts = [head]
    used = len(head) + len(tail)
    while used < size:
        paragraph = f"<p>{_sentence(rng, 70)}</p>\n"
        parts.append(paragraph)
        used += len(paragraph)
    parts.append(tail)
    return "".join(parts).encode()


def deep_page(depth: int = 100_000) -> bytes:
    return b"<div>" * depth


def _measure(body: bytes, repeat: int, size: int) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    page = None
    for _ in range(repeat):
        clear_link_caches()
        started = time.process_time()
        page = parse_page(body, _BASE)
        times.append(time.process_time() - started)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert page is not None
    return {
        "bytes": len(body),
        "best_ms": min(times) * 1000,
        "median_ms": statistics.median(times) * 1000,
        "site_ms": _site_median(size, repeat) * 1000,
        "links": len(page.links),
        "images": len(page.images),
        "truncated": page.truncated or "",  # type: ignore[dict-item]
        "peak_mb": peak / 1024,
    }


def _site_pages(size: int, count: int) -> list[tuple[bytes, str]]:
    """``count`` distinct pages of one listing (items 0-99 on the first, 100-199 next...)."""
    make = small_page if size < 20_000 else ordinary_page
    return [
        (make(size, seed=n, first_item=100 * n), f"https://shop.example/garden?p={n}")
        for n in range(count)
    ]


def _site_median(size: int, repeat: int) -> float:
    if size > 1_000_000:
        return float("nan")
    pages = _site_pages(size, repeat + 2)
    clear_link_caches()
    for body, url in pages[:2]:
        parse_page(body, url)
    times = []
    for body, url in pages[2:]:
        started = time.process_time()
        parse_page(body, url)
        times.append(time.process_time() - started)
    return statistics.median(times)


def _loop(repeat: int) -> None:
    """``Discovery.page`` per link on 100 KB pages of one site: patterns from the worker, and
    patterns computed on the loop (links stripped of theirs)."""
    from courtier.content.parse import Link
    from courtier.frontier.base import LeasedUrl
    from courtier.frontier.surface import SurfacePolicy
    from courtier.net.policy import AddressPolicy
    from courtier.pipeline.feed.discovery import Discovery
    from courtier.pipeline.lanes.site import SiteLane
    from courtier.pipeline.stats import CrawlStats

    parsed = [parse_page(body, url) for body, url in _site_pages(100_000, 20)]
    bare = []
    for page in parsed:
        stripped = copy.copy(page)
        stripped.links = [Link(*link[:3]) for link in page.links]
        stripped.images = [Link(*link[:3]) for link in page.images]
        bare.append(stripped)
    links = sum(len(page.links) + len(page.images) for page in parsed)
    item = LeasedUrl(1, _BASE, "shop.example", 1, 0)
    for name, pages in (("patterns from the worker", parsed), ("patterns on the loop", bare)):
        best = float("inf")
        for _ in range(repeat):
            lane = SiteLane("shop.example", "shop.example", "https")
            discovery = Discovery(
                {"shop.example": lane}, {"shop.example"}, CrawlStats(), AddressPolicy(),
                SurfacePolicy(),
            )  # fmt: skip
            started = time.process_time()
            for page in pages:
                discovery.page(lane, item, page)
            best = min(best, time.process_time() - started)
        print(f"Discovery.page, {name:25} {best / links * 1e6:6.2f} us per link ({links} links)")


def _phases(body: bytes, repeat: int) -> None:
    """CPU of each phase of one ``parse_page`` of an ordinary page."""
    from selectolax.lexbor import LexborHTMLParser

    from courtier.content.nesting import nesting_cut
    from courtier.frontier.fingerprint import tree_fingerprint

    def timed(fn: Callable[[], object]) -> float:
        best = float("inf")
        for _ in range(repeat):
            started = time.process_time()
            fn()
            best = min(best, time.process_time() - started)
        return best * 1000

    print(f"{'phase':28} {'best ms':>8}")
    print(f"{'nesting_cut (pre-scan)':28} {timed(lambda: nesting_cut(body)):8.3f}")
    print(f"{'lexbor parse':28} {timed(lambda: LexborHTMLParser(body)):8.3f}")
    print(
        f"{'parse + fingerprint':28} {timed(lambda: tree_fingerprint(LexborHTMLParser(body))):8.3f}"
    )

    def cold() -> None:
        clear_link_caches()
        parse_page(body, _BASE)

    print(f"{'parse_page, cold cache':28} {timed(cold):8.3f}")
    print(f"{'parse_page, same page again':28} {timed(lambda: parse_page(body, _BASE)):8.3f}")


def _simweb_pages(sites: int, page_bytes: int = 6000) -> list[tuple[str, bytes]]:
    """Home, item and listing pages of the first ``sites`` seed sites of the 2,000-site
    world ``bench_rebook.py --sites 2000 --page-bytes PAGE_BYTES`` crawls, as its server
    renders them (nothing is served: the renderer is called directly)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _crawlbench import world_params
    from courtier.simweb.network import Network
    from courtier.simweb.pages import PageRenderer
    from courtier.simweb.world import build_world

    world = build_world(world_params("demo", 2000, page_bytes, 1))
    renderer = PageRenderer(world, Network(182, 8080))
    pages = []
    for n, host in enumerate(list(world.seed_hosts)[:sites]):
        site = world.sites[host]
        for path in ("/", f"/item/{n % 40}", f"/list/{n % 5}"):
            page = renderer.render(site, path, "")
            if page.status == 200:
                pages.append((f"http://{host}{path}", page.body))
    return pages


def _stages(repeat: int, page_bytes: int = 6000) -> None:
    """A parse worker's job on the simulated web's pages (6 KB unless told), stage by
    stage: best of ``repeat`` passes over all pages, microseconds a page (the link cache
    warm, as in a worker that has seen the sites' navigation)."""
    import pickle

    from selectolax.lexbor import LexborHTMLParser

    from courtier.config import WarcSection
    from courtier.content.decode import decode
    from courtier.content.reading import ReadContext, read_and_capture
    from courtier.frontier.fingerprint import normalise_text, tree_fingerprint
    from courtier.sinks.redact import DEFAULT_POLICY, redact, region_of
    from courtier.sinks.warc import Capture, encode_capture

    pages = _simweb_pages(max(10, 900_000 // page_bytes), page_bytes)  # 150 sites at 6 KB
    level = WarcSection().compression_level  # the crawl's default
    context = ReadContext("text/html; charset=utf-8", "courtier", (), DEFAULT_POLICY, "a.test")
    headers = (("Content-Type", "text/html; charset=utf-8"), ("Server", "simweb"))
    sent = (("User-Agent", "courtier"), ("Accept-Encoding", "gzip, deflate, br"))

    def capture(url: str, body: bytes) -> Capture:
        return Capture(url, 1.8e9, 200, headers, body, sent)

    texts = [decode(body, context.content_type).text for _, body in pages]
    region = region_of("a.test", DEFAULT_POLICY.region)
    answers = [
        pickle.dumps(("ok", read_and_capture(b, u, context, capture(u, b), level), None))
        for u, b in pages
    ]

    results = [pickle.loads(answer) for answer in answers]

    def each(fn: Callable[[int, str, bytes], object]) -> float:
        best = float("inf")
        for _ in range(repeat):
            started = time.process_time()
            for i, (url, body) in enumerate(pages):
                fn(i, url, body)
            best = min(best, time.process_time() - started)
        return best / len(pages) * 1e6

    def each_tree(fn: Callable[[LexborHTMLParser], object]) -> float:
        best = float("inf")
        for _ in range(repeat):  # fresh trees each pass: the fingerprint removes nodes
            trees = [LexborHTMLParser(body) for _, body in pages]
            started = time.process_time()
            for tree in trees:
                fn(tree)
            best = min(best, time.process_time() - started)
        return best / len(pages) * 1e6

    def job(i: int, url: str, body: bytes) -> object:
        return read_and_capture(body, url, context, capture(url, body), level)

    def text_of(tree: LexborHTMLParser) -> object:
        body = tree.body
        return normalise_text(body.text(separator=" ") if body is not None else "")

    rows = [
        ("read_and_capture (the job)", each(job)),
        ("  redact", each(lambda i, u, b: redact(texts[i], DEFAULT_POLICY, region))),
        ("  parse_page", each(lambda i, u, b: parse_page(b, u))),
        ("    lexbor parse", each(lambda i, u, b: LexborHTMLParser(b))),
        ("    fingerprint (parsed tree)", each_tree(tree_fingerprint)),
        ("      normalise_text", each_tree(text_of)),
        ("  encode_capture", each(lambda i, u, b: encode_capture(capture(u, b), level=level))),
        ("  pickle the answer", each(lambda i, u, b: pickle.dumps(results[i]))),
        ("unpickle the answer (crawl)", each(lambda i, u, b: pickle.loads(answers[i]))),
    ]
    print(f"{len(pages)} pages, {sum(len(b) for _, b in pages) / len(pages):.0f} bytes on average")
    print(f"{'stage':32} {'us/page':>8}")
    for name, micros in rows:
        print(f"{name:32} {micros:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="runs per small page")
    parser.add_argument("--json", action="store_true", help="one JSON object per page kind")
    parser.add_argument("--phases", action="store_true", help="phase breakdown, 100 KB page")
    parser.add_argument("--no-large", action="store_true", help="skip the 20 MB pages")
    parser.add_argument("--loop", action="store_true", help="event-loop cost per link")
    parser.add_argument(
        "--stages", action="store_true", help="a worker's job stage by stage, simulated pages"
    )
    parser.add_argument(
        "--page-bytes", type=int, default=6000, help="with --stages: the simulated pages' size"
    )
    args = parser.parse_args()
    if args.stages:
        _stages(max(3, args.repeat // 6), args.page_bytes)
        return
    if args.phases:
        _phases(ordinary_page(100_000), args.repeat)
        return
    if args.loop:
        _loop(max(3, args.repeat // 5))
        return
    cases: list[tuple[str, bytes, int, int]] = [
        ("small 6 KB", small_page(6_000), args.repeat, 6_000),
        ("ordinary 100 KB", ordinary_page(100_000), args.repeat, 100_000),
        ("ordinary 100 KB (seed 2)", ordinary_page(100_000, seed=2), args.repeat, 100_000),
        ("ordinary 1 MB", ordinary_page(1_000_000), max(3, args.repeat // 5), 1_000_000),
        ("100,000 nested <div>", deep_page(), 3, 10**9),
    ]
    if not args.no_large:
        cases += [
            ("20 MB of nested <div>", deep_page(4_000_000), 2, 10**9),
            ("ordinary 20 MB", ordinary_page(20_000_000), 2, 10**9),
        ]
    if not args.json:
        print(f"{'page':26} {'KB':>8} {'cold best':>9} {'cold med':>9} {'site ms':>8} "
              f"{'links':>6} {'images':>6} {'truncated':>9} {'peak MB':>8}")  # fmt: skip
    for name, body, repeat, size in cases:
        row = _measure(body, repeat, size)
        if args.json:
            print(json.dumps({"page": name, **row}), flush=True)
        else:
            print(
                f"{name:26} {row['bytes'] / 1000:8.0f} {row['best_ms']:9.2f} "
                f"{row['median_ms']:9.2f} {row['site_ms']:8.2f} {row['links']:6.0f} "
                f"{row['images']:6.0f} {row['truncated']:>9} {row['peak_mb']:8.0f}",
                flush=True,
            )


if __name__ == "__main__":
    sys.exit(main())
