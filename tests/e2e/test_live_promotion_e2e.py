"""End to end: the crawl runs its own ranking cycle ([frontier] promote, rank_every) and
crawls the host it promotes without a restart; the link farm never rises."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from courtier.cli import main
from courtier.simweb.audit import audit
from courtier.simweb.log import read_log
from courtier.simweb.process import SimWebProcess
from courtier.simweb.world import WorldParams
from courtier.url import host_of_site

# A 22 s crawl (two ranking cycles): in CI's `pytest -m long` run, keeping the default run
# under its five minutes.
pytestmark = pytest.mark.long


def test_a_crawl_promotes_the_most_linked_horizon_host_and_crawls_it(tmp_path: Path) -> None:
    with SimWebProcess(tmp_path / "web", WorldParams(seed=3)) as web:
        args = ["crawl", "--seeds", str(web.seeds_path), "--dns", web.dns]
        args += ["--allow-net", web.allow_net, "--out", str(tmp_path / "out")]
        args += ["--duration", "22", "--json", "-s", "frontier.promote=1"]
        args += ["-s", "frontier.rank_every=10"]
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = main(args)
    world = web.world
    stats = json.loads(buffer.getvalue().strip().splitlines()[-1])
    assert code == 0
    promoted = [host_of_site(site) for site, _score in stats["promoted"]]
    assert promoted[:1] == [world.popular_horizon_host]
    assert not set(promoted) & set(world.farm_hosts)
    requested = {record.host.split(":")[0].rstrip(".").lower() for record in read_log(web.log_path)}
    assert world.popular_horizon_host in requested  # crawled in the same run
    assert not requested & set(world.farm_hosts)
    report = audit(web.log_path, world, extra_seeds=promoted, allow_media=True)
    assert report.ok, [c for c in report.criteria if not c.ok]
