"""End to end: page images on an object store, a CDN and an image service are fetched under
their own keys, and the server side finds buckets, CDN misses and origins within limits.

The buckets are given a tight limit (0.5 requests/s, 2 s of burst) on both sides, so the
bucket criterion has something to judge; the same log judged against a tighter limit fails,
so the check is real.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
from pathlib import Path

import pytest

from courtier.cli import main
from courtier.simweb.audit import AuditReport, audit
from courtier.simweb.log import RequestRecord, read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import MEDIA_KINDS, STORE_HOST, World, WorldParams, build_world
from courtier.sinks.documents import read_documents

BUCKET_RATE, BUCKET_BURST = 0.5, 2.0


@dataclasses.dataclass
class MediaRun:
    world: World
    records: list[RequestRecord]
    report: AuditReport
    stats: dict
    documents: list[dict]
    log_path: Path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> MediaRun:
    tmp = tmp_path_factory.mktemp("media")
    params = WorldParams(seed=7, bucket_rate=BUCKET_RATE, bucket_burst=BUCKET_BURST)
    with SimWebProcess(tmp / "web", params) as web:
        args = ["crawl", "--seeds", str(web.seeds_path), "--dns", web.dns]
        args += ["--allow-net", web.allow_net, "--out", str(tmp / "out")]
        args += ["--duration", "20", "--json"]
        args += ["-s", f"limits.bucket.rate={BUCKET_RATE}"]
        args += ["-s", f"limits.bucket.burst={BUCKET_BURST}"]
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(args) == 0
    stats = json.loads(buffer.getvalue().strip().splitlines()[-1])
    report = audit(web.log_path, web.world, allow_media=True)
    documents = list(read_documents(tmp / "out"))
    return MediaRun(web.world, list(read_log(web.log_path)), report, stats, documents, web.log_path)


def _media_records(run: MediaRun) -> list[RequestRecord]:
    return [
        r
        for r in run.records
        if (site := run.world.site_of_host(r.host)) is not None and site.kind in MEDIA_KINDS
    ]


def test_every_media_source_is_fetched_and_the_audit_passes(run: MediaRun) -> None:
    assert run.report.ok, [c for c in run.report.criteria if not c.ok]
    for name in ("origin-budget", "cdn-misses", "bucket-rate", "duplicates"):
        assert run.report.criterion(name).ok, run.report.criterion(name)
    assert set(run.stats["media_requests"]) == {"store", "cdn", "imgsvc"}
    assert run.report.media.cache_misses > 0
    assert sum(o.miss_requests for o in run.report.origins) > 0
    assert run.stats["internal_errors"] == 0


def test_the_bucket_check_is_real(run: MediaRun) -> None:
    busiest = max(b.max_5s for b in run.report.buckets)
    assert busiest >= 2, "no bucket saw two requests within 5 s: nothing was judged"
    strict = dataclasses.replace(run.world.params, bucket_rate=0.05, bucket_burst=0.0)
    report = audit(run.log_path, build_world(strict), allow_media=True)
    assert not report.criterion("bucket-rate").ok


def test_a_path_style_endpoint_serves_many_buckets_at_once(run: MediaRun) -> None:
    """Buckets behind one hostname are separate lanes: the shared endpoint sees requests
    for different buckets closer together than one site's spacing would allow."""
    shared = sorted(
        (r for r in _media_records(run) if r.host.split(":")[0] == STORE_HOST and r.bucket),
        key=lambda r: r.start,
    )
    assert len({r.bucket for r in shared}) >= 2
    gaps = [b.start - a.start for a, b in itertools.pairwise(shared)]
    assert min(gaps) < 0.5


def test_robots_txt_of_every_media_host_comes_first(run: MediaRun) -> None:
    first: dict[str, RequestRecord] = {}
    for record in sorted(_media_records(run), key=lambda r: r.start):
        first.setdefault(record.host.split(":")[0], record)
    assert first
    for host, record in first.items():
        assert record.target == "/robots.txt", (host, record.target)


def test_media_documents_name_their_keys_and_referrer(run: MediaRun) -> None:
    media = [d for d in run.documents if d.get("kind") == "media"]
    assert media
    seeds = set(run.world.seed_hosts)
    for document in media:
        assert document["referrer"].split(":")[0] in seeds
        types = [key.split(":")[0] for key in document["keys"]]
        if document["source"] == "store":
            assert types == ["bucket"]
        elif document["source"] == "cdn":
            assert types[0] == "cdn"
            if "cdn-miss" in types:  # a miss expected: the customer's origin pays for it
                assert "origin" in types
        else:
            assert types[0] == "imgsvc"
