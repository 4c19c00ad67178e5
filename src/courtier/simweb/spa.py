"""Single-page apps of the simulated web: script shells, their API and static files, their twin.

Rules:
- An SPA site answers every route but `/api/…`, `/static/…` and `/robots.txt` with the same
  shell: a `Loading…` title, a stylesheet, `/static/app.js` (defer), the third-party script
  `THIRD_PARTY_SCRIPT_HOST/t.js` (async), an empty `<div id="app">`, a `<noscript>` notice and
  no link at all: a crawler that does not run the script finds nothing. Unknown numbers get a
  shell too; the API answers 404 for them.
- `/static/app.js` renders the page the path names from `/api/list/N` (home: list 1) or
  `/api/item/N` into `#app` as links and sets the title. Before rendering, without waiting for
  them, it fetches what a hostile script would: every spelling of the canary, the cloud
  metadata address and a private address, errors swallowed. A `RENDER_HANG` site's script
  loops forever (`for(;;){}`) before rendering anything.
- The API is the plain pages' catalogue (`courtier.simweb.catalogue`), numbered from
  `Site.catalogue`, so an SPA and its twin list the same items. The twin (`SPA_TWIN`) serves as
  plain HTML exactly the links the SPA's script renders, at the same routes, and nothing
  hostile.
- A `SPA_CDN_STYLES` site's shell takes its stylesheet from the shared CDN
  (`CDN_HOST/<host>/static/app.css`), which serves it (`cdn_static`) as the site would.
- The static files carry `ETag`, `Last-Modified` and `Cache-Control: max-age=3600`; a request
  whose `If-None-Match` matches (or, without one, whose `If-Modified-Since` is not older) gets
  304 (`revalidated`). Nothing else in the simulated web answers conditionally.
- The third-party host serves `/t.js`; anything else there is a 404.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import formatdate, parsedate_to_datetime

from courtier.simweb.catalogue import (
    CSS,
    HTML,
    JAVASCRIPT,
    JSON,
    TEXT,
    Page,
    listing_items,
    listing_of,
    related_items,
)
from courtier.simweb.network import Network
from courtier.simweb.world import (
    CDN_HOST,
    THIRD_PARTY_SCRIPT_HOST,
    Behaviour,
    Site,
    SiteKind,
    World,
    WorldParams,
)

SPA_PAGE_KINDS = frozenset({SiteKind.SPA, SiteKind.SPA_TWIN, SiteKind.THIRD_PARTY})
METADATA_URL = "http://169.254.169.254/latest/meta-data/"
PRIVATE_URL = "http://10.0.0.1/admin"
STATIC_MAX_AGE = 3600
STATIC_MODIFIED = 1_767_225_600  # 2026-01-01T00:00:00Z, the build every static file is from
LOADING_TITLE = "Loading…"
NOSCRIPT = "You need to enable JavaScript to run this app."

Link = tuple[str, str]
HtmlPage = Callable[[Site, str, list[Link], str], Page]
"""Builds a padded plain HTML page: (site, title, links, salt) -> Page (`PageRenderer._html`)."""

_SHELL = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    f"<title>{LOADING_TITLE}</title>"
    '<link rel="stylesheet" href="/static/app.css">'
    '<script src="/static/app.js" defer></script>'
    '<script async src="{tracker}/t.js"></script>'
    '</head><body><div id="app"></div>'
    f"<noscript>{NOSCRIPT}</noscript></body></html>\n"
)
_APP_JS = """\
/* app.js: renders the catalogue page the path names from the JSON API. */
(function () {
  "use strict";
  var app = document.getElementById("app");
  // What a hostile build does too: probe addresses a browser should never reach.
  PROBES.forEach(function (url) {
    try {
      fetch(url).catch(function () {});
    } catch (e) {}
  });
  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
  }
  function link(href, text) {
    return '<li><a href="' + esc(href) + '">' + esc(text) + "</a></li>";
  }
  function show(title, links) {
    document.title = title;
    app.innerHTML = "<h1>" + esc(title) + "</h1><ul>" + links.join("") + "</ul>";
  }
  function item(entry) {
    return link("/item/" + entry.id, entry.title);
  }
  var path = location.pathname;
  var match;
  var api = null;
  if (path === "/") {
    api = "/api/list/1";
  } else if ((match = /^\\/list\\/(\\d+)$/.exec(path))) {
    api = "/api/list/" + match[1];
  } else if ((match = /^\\/item\\/(\\d+)$/.exec(path))) {
    api = "/api/item/" + match[1];
  }
  if (api === null) {
    show("Not found", []);
    return;
  }
  fetch(api)
    .then(function (response) {
      if (!response.ok) {
        throw new Error("HTTP " + response.status);
      }
      return response.json();
    })
    .then(function (data) {
      var links;
      if (data.items) {
        links = data.items.map(item);
        if (data.next) links.push(link("/list/" + data.next, "Next page"));
        if (data.prev) links.push(link("/list/" + data.prev, "Previous page"));
      } else {
        links = data.related.map(item);
        links.push(link("/list/" + data.list, "Back to catalogue"));
      }
      links.push(link("/", "Home"));
      show(data.title, links);
    })
    .catch(function () {
      show("Not found", []);
    });
})();
"""
_HANG_JS = """\
/* app.js: this build never renders; it spins before touching the page. */
(function () {
  "use strict";
  for(;;){}
})();
"""
_APP_CSS = """\
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 48rem; }
#app h1 { font-size: 1.5rem; }
#app ul { list-style: none; padding: 0; }
#app a { color: #0b57d0; }
"""
_TRACKER_JS = """\
/* trackerly analytics */
(function () {
  var queue = (window.trackerly = window.trackerly || []);
  queue.push(["pageview", location.href, Date.now()]);
})();
"""
_NOT_FOUND = Page(404, b"Not found\n", TEXT)
_API_NOT_FOUND = Page(404, b'{"error": "not found"}\n', JSON)


def catalogue_page(params: WorldParams, site: Site, kind: str, n: int) -> dict[str, object] | None:
    """What the API answers for listing or item `n` of the site's catalogue; None: no such page.

    A listing: `{"list", "title", "items": [{"id", "title"}], "next", "prev"}` (null at the
    ends); an item: `{"item", "title", "related": [{"id", "title"}], "list"}`."""
    if kind == "list" and 1 <= n <= params.n_lists:
        return {
            "list": n,
            "title": f"Catalogue page {n}",
            "items": [_entry(i) for i in listing_items(params, n)],
            "next": n + 1 if n < params.n_lists else None,
            "prev": n - 1 if n > 1 else None,
        }
    if kind == "item" and 1 <= n <= params.n_items:
        rng = random.Random(f"{params.seed}:{site.catalogue}:/item/{n}")
        return {
            "item": n,
            "title": f"Item {n}",
            "related": [_entry(m) for m in related_items(params, n, rng)],
            "list": listing_of(params, n),
        }
    return None


def rendered_links(data: dict[str, object]) -> list[Link]:
    """The links `app.js` renders from an API answer, in order: what the twin serves."""
    links: list[Link] = []
    if "items" in data:
        links += [(f"/item/{e['id']}", str(e["title"])) for e in _entries(data["items"])]
        if data["next"] is not None:
            links.append((f"/list/{data['next']}", "Next page"))
        if data["prev"] is not None:
            links.append((f"/list/{data['prev']}", "Previous page"))
    else:
        links += [(f"/item/{e['id']}", str(e["title"])) for e in _entries(data["related"])]
        links.append((f"/list/{data['list']}", "Back to catalogue"))
    links.append(("/", "Home"))
    return links


def revalidated(page: Page, if_none_match: str | None, if_modified_since: str | None) -> Page:
    """304 when a page carrying an ETag is what the client already holds, else the page.

    `If-None-Match` (weak comparison, `*` included) decides when present; otherwise an
    `If-Modified-Since` at or after `Last-Modified` (a date that does not parse is ignored)."""
    validators = dict(page.headers)
    etag = validators.get("ETag")
    if page.status != 200 or etag is None:
        return page
    if if_none_match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        fresh = "*" in tags or etag.removeprefix("W/") in tags
    elif if_modified_since is not None:
        fresh = _not_modified_since(if_modified_since, validators.get("Last-Modified"))
    else:
        fresh = False
    return Page(304, b"", page.content_type, page.headers) if fresh else page


class SpaPages:
    """The pages of the SPA sites, their twin and the third-party script host of one world."""

    def __init__(self, world: World, network: Network, html: HtmlPage) -> None:
        self.params = world.params
        self._html = html
        tracker = network.origin_url(THIRD_PARTY_SCRIPT_HOST)
        self._shell = Page(
            200,
            _SHELL.replace("{tracker}", tracker).encode(),
            HTML,
            (("Cache-Control", "no-cache"),),
        )
        probes = [f"http://{spelled}/" for spelled in network.canary_spellings()]
        probes += [METADATA_URL, PRIVATE_URL]
        self._app_js = _static(_APP_JS.replace("PROBES", json.dumps(probes)), JAVASCRIPT)
        self._hang_js = _static(_HANG_JS, JAVASCRIPT)
        self._app_css = _static(_APP_CSS, CSS)
        self._cdn = network.origin_url(CDN_HOST)
        self._cdn_shells: dict[str, Page] = {}
        self._tracker_js = Page(
            200, _TRACKER_JS.encode(), JAVASCRIPT, (("Cache-Control", f"max-age={STATIC_MAX_AGE}"),)
        )

    def render(self, site: Site, path: str) -> Page:
        if site.kind is SiteKind.THIRD_PARTY:
            return self._tracker_js if path == "/t.js" else _NOT_FOUND
        if site.kind is SiteKind.SPA_TWIN:
            return self._twin(site, path)
        if path == "/api" or path.startswith("/api/"):
            return self._api(site, path)
        if path == "/static" or path.startswith("/static/"):
            return self._static(site, path)
        return self._shell_of(site)

    def _shell_of(self, site: Site) -> Page:
        if Behaviour.SPA_CDN_STYLES not in site.behaviours:
            return self._shell
        shell = self._cdn_shells.get(site.host)
        if shell is None:
            styles = f'href="{self._cdn}/{site.host}/static/app.css"'.encode()
            body = self._shell.body.replace(b'href="/static/app.css"', styles)
            shell = self._cdn_shells[site.host] = Page(200, body, HTML, self._shell.headers)
        return shell

    def cdn_static(self, customer: Site, rest: str) -> Page | None:
        """What the shared CDN serves at `/<customer>/<rest>` for an SPA that keeps its
        stylesheet there (None: not such a request)."""
        if Behaviour.SPA_CDN_STYLES in customer.behaviours and rest == "static/app.css":
            return self._app_css
        return None

    def _api(self, site: Site, path: str) -> Page:
        data = self._numbered(site, path.removeprefix("/api"))
        if data is None:
            return _API_NOT_FOUND
        return Page(200, json.dumps(data).encode(), JSON, (("Cache-Control", "no-cache"),))

    def _static(self, site: Site, path: str) -> Page:
        if path == "/static/app.js":
            return self._hang_js if Behaviour.RENDER_HANG in site.behaviours else self._app_js
        if path == "/static/app.css":
            return self._app_css
        return _NOT_FOUND

    def _twin(self, site: Site, path: str) -> Page:
        data = self._numbered(site, "/list/1" if path == "/" else path)
        if data is None:
            return Page(404, f"<h1>Not found</h1><p>{path} is not here</p>".encode(), HTML)
        return self._html(site, str(data["title"]), rendered_links(data), path)

    def _numbered(self, site: Site, path: str) -> dict[str, object] | None:
        """The catalogue page `/list/N` or `/item/N` names, or None."""
        parts = path.split("/")
        if len(parts) != 3 or parts[0] or not parts[2].isascii() or not parts[2].isdigit():
            return None
        if len(parts[2]) > 9:
            return None
        return catalogue_page(self.params, site, parts[1], int(parts[2]))


def _static(text: str, content_type: str) -> Page:
    body = text.encode()
    return Page(
        200,
        body,
        content_type,
        (
            ("ETag", f'"{hashlib.sha256(body).hexdigest()[:20]}"'),
            ("Last-Modified", formatdate(STATIC_MODIFIED, usegmt=True)),
            ("Cache-Control", f"max-age={STATIC_MAX_AGE}"),
        ),
    )


def _not_modified_since(value: str, last_modified: str | None) -> bool:
    if last_modified is None:
        return False
    try:
        since, modified = _date(value), _date(last_modified)
    except (TypeError, ValueError, IndexError, OverflowError):
        return False
    return modified <= since


def _date(value: str) -> datetime:
    """An HTTP date; one without a zone (`-0000`) is UTC, as HTTP dates are."""
    when = parsedate_to_datetime(value)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _entry(n: int) -> dict[str, object]:
    return {"id": n, "title": f"Item {n}"}


def _entries(value: object) -> list[dict[str, object]]:
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []
