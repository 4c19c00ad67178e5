"""End to end on a simulated web of single-page apps, rendered in headless Chromium: an app
whose listings arrive from its API by ``fetch`` yields what its plain-HTML twin yields, with
every request of every render counted against its site and origin by the servers' audit,
nothing sent to the third-party script host, the hostile script's internal and metadata
addresses refused, and an app that hangs its browser failing alone."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from urllib.parse import urlsplit

import pytest

from courtier.cli import main
from courtier.render.browser import find_chromium
from courtier.simweb.audit import AuditReport, SpaFigures, audit
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import CDN_HOST, SIZE_PRESETS, Behaviour, SiteKind, World
from courtier.sinks.documents import read_documents

# In the long run (CI runs it after the default one): 20 s crawls with a browser; the render
# lane's pieces have fast tests in tests/render and tests/pipeline/test_rendering.py.
pytestmark = [
    pytest.mark.skipif(
        find_chromium(None) is None,
        reason="Headless Chromium (Debian's chromium package) is not installed: rendering needs it",
    ),
    pytest.mark.long,
]

SPEED = 4.0
"""Sites and origins allowed four times the default rates (the audit judges the same)."""


@dataclasses.dataclass
class Run:
    world: World
    report: AuditReport
    stats: dict
    documents: list[dict]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("render")
    params = dataclasses.replace(SIZE_PRESETS["spa"], seed=3, origin_budget=2.0 * SPEED)
    with SimWebProcess(tmp / "web", params) as web:
        args = ["crawl", "--seeds", str(web.seeds_path), "--dns", web.dns]
        args += ["--allow-net", web.allow_net, "--out", str(tmp / "out")]
        args += ["--duration", "20", "--json"]
        args += ["-s", f"limits.site.rate={SPEED}", "-s", f"limits.origin.rate={2.0 * SPEED}"]
        args += ["-s", "render.page_timeout=5", "-s", "render.settle=0.3"]
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(args) == 0
    stats = json.loads(buffer.getvalue().strip().splitlines()[-1])
    report = audit(web.log_path, web.world, site_interval=1.0 / SPEED, allow_media=True)
    documents = list(read_documents(tmp / "out"))
    return Run(web.world, report, stats, documents)


def _figures(run: Run, host: str) -> SpaFigures:
    return next(f for f in run.report.spa if f.host == host)


def test_every_request_of_every_render_keeps_every_budget(run: Run) -> None:
    assert run.report.ok, [c for c in run.report.criteria if not c.ok]
    assert run.report.canary_hits == 0
    assert run.report.outside_seed.get(str(SiteKind.THIRD_PARTY), 0) == 0, run.report.outside_seed
    assert run.stats["internal_errors"] == 0


def test_an_app_reaches_what_its_plain_twin_yields(run: Run) -> None:
    app, twin = run.world.spa_twin()
    reached, plain = _figures(run, app.host), _figures(run, twin.host)
    assert plain.items_reached >= 4, plain
    assert reached.items_reached >= 0.9 * plain.items_reached, (reached, plain)
    # Its bundle was fetched once and revalidated at most, not once a render.
    assert reached.requests.get("static", 0) <= 2 * 2, reached.requests


def test_the_hostile_scripts_requests_are_refused_and_counted(run: Run) -> None:
    app, _twin = run.world.spa_twin()
    renders = [d["render"] for d in run.documents if d["site"] == app.host and "render" in d]
    assert renders and all(r["rendered"] for r in renders), renders
    aborted: dict[str, int] = {}
    for render in renders:
        for reason, n in render["aborted"].items():
            aborted[reason] = aborted.get(reason, 0) + n
    assert aborted.get("third-party", 0) >= len(renders), aborted
    guard = sum(n for reason, n in aborted.items() if reason.startswith("guard:"))
    assert guard >= 2 * len(renders), aborted  # the canary's addresses, metadata, private


def test_an_app_that_hangs_its_browser_fails_alone(run: Run) -> None:
    (hang,) = run.world.sites_with(Behaviour.RENDER_HANG)
    failed = [d["render"] for d in run.documents if d["site"] == hang.host and "render" in d]
    assert failed and all(r.get("error") == "timeout" for r in failed), failed
    others = [
        s.host
        for s in run.world.sites_of_kind(SiteKind.SPA)
        if Behaviour.RENDER_HANG not in s.behaviours
    ]
    for host in others:
        assert _figures(run, host).items_reached >= 4, _figures(run, host)
    assert run.stats["renders"].get("rendered", 0) >= 10, run.stats["renders"]


def test_courtier_render_shows_what_one_render_took(tmp_path, capsys) -> None:
    params = dataclasses.replace(SIZE_PRESETS["spa"], seed=3)
    with SimWebProcess(tmp_path / "web", params) as web:
        app, _twin = web.world.spa_twin()
        url = f"http://{app.host}:{web.port}/list/2"
        network = ["--dns", web.dns, "--allow-net", web.allow_net]
        assert main(["render", url, *network]) == 0
        out = capsys.readouterr().out
        private = f"http://{app.host}:{web.port}/private/x"  # robots.txt: Disallow: /private/
        assert main(["render", private, *network]) == 1
    assert "not fetched: robots.txt does not allow it" in capsys.readouterr().out
    assert "decision: always (rule" in out
    assert "/api/list/2" in out and "site:" in out  # fetched, and what it was booked on
    assert "aborted:third-party" in out and "aborted:guard:" in out
    assert "/item/" in out.split("links")[-1]  # the rendered page's links


def test_an_apps_stylesheet_on_the_shared_cdn_is_fetched_on_its_media_keys(run: Run) -> None:
    """A render's request to a media host goes through the media lanes: booked on the CDN,
    its customer's misses and the app's origin, and judged by the audit with the rest."""
    (styled,) = run.world.sites_with(Behaviour.SPA_CDN_STYLES)
    renders = [d["render"] for d in run.documents if d["site"] == styled.host and "render" in d]
    fetched = [
        entry
        for render in renders
        for entry in render["log"]
        if urlsplit(entry["url"]).hostname == CDN_HOST and entry["type"] == "stylesheet"
    ]
    assert fetched and {entry["outcome"] for entry in fetched} == {"200"}, renders
    assert _figures(run, styled.host).items_reached >= 4
    assert run.report.ok and run.report.media.requests.get("cdn", 0) >= 1
