"""Pages of the single-page apps: shells without links, the API, the twin, static revalidation."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from email.utils import formatdate

import pytest
from simweb_helpers import SPA, Client, logged

from courtier.simweb import Behaviour, Network, SimWeb, Site, SiteKind, World, build_world
from courtier.simweb.catalogue import Page
from courtier.simweb.pages import PageRenderer
from courtier.simweb.spa import METADATA_URL, PRIVATE_URL, STATIC_MODIFIED, revalidated
from courtier.simweb.world import CDN_HOST, THIRD_PARTY_SCRIPT_HOST

NET = Network(100, 8080)
_LINK = re.compile(r'<a href="([^"]*)">([^<]*)</a>')
_ROUTES = ("/", "/list/1", "/list/4", "/item/1", "/item/40", "/item/999", "/list/0", "/about")


@pytest.fixture(scope="module")
def world() -> World:
    """Overrides the session's small world: the simulated web of this module has SPA sites."""
    return build_world(SPA)


@pytest.fixture(scope="module")
def renderer(world: World) -> PageRenderer:
    return PageRenderer(world, NET)


def _render(renderer: PageRenderer, site: Site, path: str) -> Page:
    return renderer.render(site, path, "")


def test_every_route_of_an_spa_is_the_same_shell_without_a_link(
    world: World, renderer: PageRenderer
) -> None:
    for site in world.sites_of_kind(SiteKind.SPA):
        shells = {_render(renderer, site, path) for path in (*_ROUTES, "/private/x")}
        assert len(shells) == 1
        shell = shells.pop()
        body = shell.body.decode()
        assert shell.status == 200 and shell.content_type.startswith("text/html")
        assert "<a" not in body and not _LINK.search(body)
        assert "<title>Loading…</title>" in body
        styles = "/static/app.css"
        if Behaviour.SPA_CDN_STYLES in site.behaviours:
            styles = f"http://{CDN_HOST}:8080/{site.host}/static/app.css"
        assert f'<link rel="stylesheet" href="{styles}">' in body
        assert '<script src="/static/app.js" defer></script>' in body
        tracker = f"http://{THIRD_PARTY_SCRIPT_HOST}:8080/t.js"
        assert f'<script async src="{tracker}"></script>' in body
        assert '<div id="app"></div>' in body
        assert "<noscript>You need to enable JavaScript to run this app.</noscript>" in body


def _expected_links(data: dict[str, object]) -> list[tuple[str, str]]:
    """What app.js renders from an API answer (its rules, written out again)."""
    if "items" in data:
        entries = data["items"]
        assert isinstance(entries, list)
        links = [(f"/item/{e['id']}", f"Item {e['id']}") for e in entries]
        if data["next"]:
            links.append((f"/list/{data['next']}", "Next page"))
        if data["prev"]:
            links.append((f"/list/{data['prev']}", "Previous page"))
    else:
        entries = data["related"]
        assert isinstance(entries, list)
        links = [(f"/item/{e['id']}", f"Item {e['id']}") for e in entries]
        links.append((f"/list/{data['list']}", "Back to catalogue"))
    return [*links, ("/", "Home")]


def test_the_api_serves_the_catalogue_the_twin_links(world: World, renderer: PageRenderer) -> None:
    spa, twin = world.spa_twin()
    p = world.params
    pages = [("list", n) for n in range(1, p.n_lists + 1)]
    pages += [("item", n) for n in range(1, p.n_items + 1)]
    listed: set[int] = set()
    for kind, n in pages:
        api = _render(renderer, spa, f"/api/{kind}/{n}")
        assert (api.status, api.content_type) == (200, "application/json")
        data = json.loads(api.body)
        page = _render(renderer, twin, f"/{kind}/{n}").body.decode()
        assert _LINK.findall(page) == _expected_links(data), (kind, n)
        assert f"<title>{data['title']}</title>" in page
        assert "canary" not in page and "trackerly" not in page and "<script" not in page
        if kind == "list":
            listed |= {e["id"] for e in data["items"]}
        else:  # its way back leads to the listing that holds it
            listing = json.loads(_render(renderer, spa, f"/api/list/{data['list']}").body)
            assert n in {e["id"] for e in listing["items"]}, n
    assert listed == set(range(1, p.n_items + 1))
    home = _render(renderer, twin, "/").body.decode()
    assert _LINK.findall(home) == _LINK.findall(_render(renderer, twin, "/list/1").body.decode())
    for path in ("/list/0", f"/list/{p.n_lists + 1}", f"/item/{p.n_items + 1}", "/item/x"):
        missing = _render(renderer, spa, f"/api{path}")
        assert (missing.status, missing.content_type) == (404, "application/json"), path
        assert json.loads(missing.body) == {"error": "not found"}
        assert _render(renderer, twin, path).status == 404
    assert _render(renderer, spa, "/api/search").status == 404


def test_the_app_script_probes_what_a_hostile_script_would(
    world: World, renderer: PageRenderer
) -> None:
    spa, _ = world.spa_twin()
    script = _render(renderer, spa, "/static/app.js")
    assert script.content_type == "application/javascript"
    text = script.body.decode()
    for spelled in NET.canary_spellings():
        assert f'"http://{spelled}/"' in text
    assert f'"{METADATA_URL}"' in text and f'"{PRIVATE_URL}"' in text
    assert "for(;;){}" not in text
    hang = world.site_with(Behaviour.RENDER_HANG)
    looping = _render(renderer, hang, "/static/app.js").body.decode()
    assert "for(;;){}" in looping and "fetch" not in looping and "innerHTML" not in looping
    assert _render(renderer, hang, "/api/list/1").status == 200  # the API itself works
    css = _render(renderer, spa, "/static/app.css")
    assert css.content_type == "text/css" and b"#app" in css.body
    assert _render(renderer, spa, "/static/other.js").status == 404
    tracker = world.sites[THIRD_PARTY_SCRIPT_HOST]
    assert _render(renderer, tracker, "/t.js").content_type == "application/javascript"
    assert _render(renderer, tracker, "/").status == 404


def test_static_files_revalidate_and_nothing_else_does(
    world: World, renderer: PageRenderer
) -> None:
    spa, _ = world.spa_twin()
    script = _render(renderer, spa, "/static/app.js")
    headers = dict(script.headers)
    etag, modified = headers["ETag"], headers["Last-Modified"]
    assert headers["Cache-Control"] == "max-age=3600"
    assert modified == formatdate(STATIC_MODIFIED, usegmt=True)
    later = formatdate(STATIC_MODIFIED + 60, usegmt=True)
    earlier = formatdate(STATIC_MODIFIED - 60, usegmt=True)
    for inm, ims in (
        (etag, None),
        (f"W/{etag}", None),
        (f'"other", {etag}', None),
        ("*", None),
        (None, modified),
        (None, later),
        (None, "Thu, 01 Jan 2026 00:00:00 -0000"),
    ):
        answer = revalidated(script, inm, ims)
        assert (answer.status, answer.body) == (304, b""), (inm, ims)
        assert dict(answer.headers)["ETag"] == etag
    for inm, ims in (('"other"', None), (None, earlier), (None, "yesterday"), ('"x"', later)):
        assert revalidated(script, inm, ims) is script, (inm, ims)
    shell = _render(renderer, spa, "/")
    assert revalidated(shell, "*", later) is shell  # no validator: never 304


async def test_the_server_answers_304_to_a_client_that_holds_the_script(
    client: Client, web: SimWeb, world: World
) -> None:
    spa, _ = world.spa_twin()
    first = await client.get(spa.host, "/static/app.js")
    assert first.status == 200 and first.headers["Content-Type"] == "application/javascript"
    etag = _header(first.headers, "ETag")
    again = await client.get(spa.host, "/static/app.js", headers={"If-None-Match": etag})
    assert (again.status, again.body, _header(again.headers, "ETag")) == (304, b"", etag)
    since = {"If-Modified-Since": _header(first.headers, "Last-Modified")}
    assert (await client.get(spa.host, "/static/app.css", headers=since)).status == 304
    shell = await client.get(spa.host, "/item/3", headers={"If-None-Match": "*"})
    tracker_url = f"{web.network.origin_url(THIRD_PARTY_SCRIPT_HOST)}/t.js"
    assert shell.status == 200 and f'src="{tracker_url}"' in shell.text
    tracker = await client.get(THIRD_PARTY_SCRIPT_HOST, "/t.js")
    assert tracker.status == 200 and "trackerly" in tracker.text
    records = await logged(web)
    assert [r.status for r in records] == [200, 304, 304, 200, 200]
    assert records[1].bytes == 0


def _header(headers: dict[str, str], name: str) -> str:
    """A response header, whatever case the server spelled it in."""
    return next(v for k, v in headers.items() if k.lower() == name.lower())


def _node_render(script: str, api: dict[str, tuple[int, str]], routes: list[str]) -> list[dict]:
    """Runs app.js in node for each route, with a stub page and a fetch that answers `api`."""
    harness = r"""
const vm = require("vm");
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
(async () => {
  const out = [];
  for (const route of input.routes) {
    const requested = [];
    const app = { innerHTML: "" };
    const document = { title: "Loading…", getElementById: (id) => (id === "app" ? app : null) };
    const fetch = (url) => {
      requested.push(url);
      const answer = input.api[url];
      if (!answer) return Promise.reject(new TypeError("refused"));
      const [status, body] = answer;
      return Promise.resolve({ ok: status < 300, status, json: async () => JSON.parse(body) });
    };
    vm.runInNewContext(input.script, { document, fetch, location: { pathname: route } });
    await new Promise((resolve) => setTimeout(resolve, 10));
    out.push({ route, title: document.title, html: app.innerHTML, requested });
  }
  console.log(JSON.stringify(out));
})();
"""
    node = shutil.which("node")
    assert node is not None
    payload = json.dumps({"script": script, "api": api, "routes": routes})
    done = subprocess.run(
        [node, "-e", harness], input=payload, capture_output=True, text=True, timeout=60, check=True
    )
    result: list[dict] = json.loads(done.stdout)
    return result


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the app's script")
def test_the_app_script_renders_what_the_twin_serves(world: World, renderer: PageRenderer) -> None:
    spa, twin = world.spa_twin()
    p = world.params
    routes = ["/", *(f"/list/{n}" for n in range(1, p.n_lists + 1))]
    routes += [f"/item/{n}" for n in range(1, p.n_items + 1)]
    api = {}
    for path in (*routes, "/list/0", "/item/999"):
        answer = _render(renderer, spa, "/api" + ("/list/1" if path == "/" else path))
        api["/api" + ("/list/1" if path == "/" else path)] = (answer.status, answer.body.decode())
    script = _render(renderer, spa, "/static/app.js").body.decode()
    probes = [f"http://{s}/" for s in NET.canary_spellings()] + [METADATA_URL, PRIVATE_URL]
    for shown in _node_render(script, api, [*routes, "/item/999", "/about"]):
        route = shown["route"]
        assert shown["requested"][: len(probes)] == probes, route
        twin_page = _render(renderer, twin, route)
        if twin_page.status == 404:
            assert (shown["title"], _LINK.findall(shown["html"])) == ("Not found", []), route
            continue
        assert _LINK.findall(shown["html"]) == _LINK.findall(twin_page.body.decode()), route
        assert f"<title>{shown['title']}</title>" in twin_page.body.decode(), route


def test_the_shared_cdn_serves_the_stylesheet_of_the_app_that_keeps_it_there(
    world: World, renderer: PageRenderer
) -> None:
    apps = world.sites_of_kind(SiteKind.SPA)
    (styled,) = world.sites_with(Behaviour.SPA_CDN_STYLES)
    assert styled is apps[1] and Behaviour.RENDER_HANG not in styled.behaviours
    cdn = world.sites[CDN_HOST]
    own = _render(renderer, styled, "/static/app.css")
    served = _render(renderer, cdn, f"/{styled.host}/static/app.css")
    assert served == own and served.status == 200 and served.content_type.startswith("text/css")
    # Another app's stylesheet is not there; the CDN's images are what they were.
    assert _render(renderer, cdn, f"/{apps[0].host}/static/app.css").status == 404
    assert _render(renderer, cdn, f"/{styled.host}/static/app.js").status == 404
