"""Documents of the simulated web besides HTML: small valid PDFs and RSS/Atom feeds.

Rules:
- Only on seed sites of a world built with ``WorldParams.documents = 1``: the home page then
  links ``/docs/N.pdf`` (``n_documents`` of them), and names its feeds with
  ``<link rel="alternate">`` and an anchor (``/feed.rss`` RSS 2.0, ``/feed.atom`` Atom 1.0).
  A world without it serves neither and its pages are unchanged, byte for byte.
- A PDF is built here, by hand (``pdf_bytes``): one page per line group, Helvetica text, an
  ``/Info`` title and ``/Link`` annotations with ``/URI`` actions; its text is known
  (``pdf_text``), so a crawl's extraction is checked against it.
- A feed's entries link the site's listings (``/list/N``) and its first items: what a crawl
  that reads feeds finds, and what it cannot find from the home page alone in a short run.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from courtier.simweb.catalogue import Page
from courtier.simweb.world import Site, WorldParams

PDF = "application/pdf"
RSS = "application/rss+xml; charset=utf-8"
ATOM = "application/atom+xml; charset=utf-8"


def pdf_title(site: Site, n: int) -> str:
    return f"Manual {n} of {site.host}"


def pdf_text(site: Site, n: int) -> list[str]:
    """The lines of text of document ``n`` of ``site``, in order (one page per three)."""
    return [
        f"Courtier manual number {n} for {site.host}",
        "Unpack the lamp and read every page of this manual.",
        f"Serial code PDF{n:04d} printed on page one.",
        f"Care and repair notes, chapter {n}.",
    ]


def pdf_links(n: int) -> list[str]:
    """The URIs document ``n`` links (relative ones resolve against its own URL)."""
    return [f"/item/{n}", "/list/1"]


def _literal(text: str) -> bytes:
    """A PDF string literal (Latin-1, with its three special characters escaped)."""
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("latin-1") + b")"


def pdf_bytes(title: str, lines: list[str], links: list[str], per_page: int = 3) -> bytes:
    """A minimal valid PDF 1.4: ``lines`` of text (``per_page`` a page), ``title`` in its
    document information, each of ``links`` a link annotation on the first page."""
    pages = [lines[i : i + per_page] for i in range(0, len(lines), per_page)] or [[]]
    objects: list[bytes] = []  # object n is objects[n - 1]

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below, once the page tree's number is known
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info = add(b"<< /Title " + _literal(title) + b" /Producer (courtier simweb) >>")
    kids: list[int] = []
    for index, text in enumerate(pages):
        ops = [b"BT /F1 12 Tf 72 720 Td 16 TL"]
        for line in text:
            ops.append(_literal(line) + b" Tj T*")
        ops.append(b"ET")
        stream = b"\n".join(ops)
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        annots = []
        if index == 0:
            for k, uri in enumerate(links):
                y = 100 + 20 * k
                annots.append(
                    add(
                        b"<< /Type /Annot /Subtype /Link /Rect [72 %d 300 %d] /Border [0 0 0] "
                        b"/A << /S /URI /URI " % (y, y + 14) + _literal(uri) + b" >> >>"
                    )
                )
        annot_list = b" /Annots [" + b" ".join(b"%d 0 R" % a for a in annots) + b"]"
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                b"/Resources << /Font << /F1 %d 0 R >> >>"
                % (tree, content, font)
                + (annot_list if annots else b"")
                + b" >>"
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % tree
    objects[tree - 1] = (
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % k for k in kids)
        + b"] /Count %d >>" % len(kids)
    )
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\n" % (
        len(objects) + 1,
        catalog,
        info,
    )
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def site_pdf(site: Site, n: int) -> bytes:
    return pdf_bytes(pdf_title(site, n), pdf_text(site, n), pdf_links(n))


FEED_ONLY = "/list/1?via=feed"
"""A URL only the feeds link (the listing, with a query it ignores): fetched only by a
crawl that reads feeds."""


def feed_targets(params: WorldParams) -> list[str]:
    """The paths a site's feeds link: every listing, the first items and ``FEED_ONLY``."""
    return [
        FEED_ONLY,
        *(f"/list/{n}" for n in range(1, params.n_lists + 1)),
        *(f"/item/{n}" for n in range(1, min(3, params.n_items) + 1)),
    ]


def rss_feed(site: Site, params: WorldParams) -> bytes:
    items = "".join(
        f"<item><title>{escape(path)}</title><link>http://{site.host}{escape(path)}</link>"
        f"<guid>http://{site.host}{escape(path)}</guid></item>"
        for path in feed_targets(params)
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
        f"<title>News of {escape(site.host)}</title><link>http://{site.host}/</link>"
        f"<description>What is new</description>{items}</channel></rss>"
    ).encode()


def atom_feed(site: Site, params: WorldParams) -> bytes:
    # Relative links, resolved against the feed's own URL: real feeds use both forms.
    entries = "".join(
        f"<entry><title>{escape(path)}</title><id>tag:{site.host},2026:{escape(path)}</id>"
        f'<updated>2026-01-01T00:00:00Z</updated><link rel="alternate" href="{escape(path)}"/>'
        "</entry>"
        for path in feed_targets(params)
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>Atom of {escape(site.host)}</title><id>tag:{site.host},2026:feed</id>"
        f"<updated>2026-01-01T00:00:00Z</updated>{entries}</feed>"
    ).encode()


FEED_HEAD = (
    '<link rel="alternate" type="application/rss+xml" title="News" href="/feed.rss">'
    '<link rel="alternate" type="application/atom+xml" title="Atom" href="/feed.atom">'
)
"""What a home page's ``<head>`` says of its feeds (``<link rel="alternate">``)."""


def home_links(params: WorldParams) -> list[tuple[str, str]]:
    """The anchors a home page adds: its PDFs (the feeds are named in its ``<head>``)."""
    return [(f"/docs/{n}.pdf", f"Manual {n} (PDF)") for n in range(1, params.n_documents + 1)]


def document_page(site: Site, params: WorldParams, path: str) -> Page | None:
    """The PDF or feed at ``path`` of a seed site, or None (no such document)."""
    if path == "/feed.rss":
        return Page(200, rss_feed(site, params), RSS)
    if path == "/feed.atom":
        return Page(200, atom_feed(site, params), ATOM)
    stem = path.removeprefix("/docs/").removesuffix(".pdf")
    if path.startswith("/docs/") and path.endswith(".pdf") and stem.isascii() and stem.isdigit():
        n = int(stem)
        if 1 <= n <= params.n_documents:
            return Page(200, site_pdf(site, n), PDF)
    return None
