"""The open-file limit: raised to the hard limit at start, shared out, said when too low."""

from __future__ import annotations

import logging
import subprocess
import sys

from courtier.runtime import open_files


def test_the_soft_limit_is_raised_to_the_hard_one() -> None:
    code = (
        "import resource\n"
        "from courtier.runtime.open_files import raise_limit\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "assert raise_limit() == (hard if hard != resource.RLIM_INFINITY else 1 << 20)\n"
        "assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == hard\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_idle_connections_get_what_the_limit_leaves(caplog) -> None:
    need = open_files.reserved(in_flight=544, workers=2, browsers=1)
    assert need == open_files.FIXED + 544 + 2 * open_files.PER_WORKER + open_files.PER_BROWSER
    assert open_files.idle_budget(1 << 20, need, 1024) == 1024
    assert open_files.idle_budget(need + 100, need, 1024) == 100
    assert not caplog.records
    with caplog.at_level(logging.WARNING):
        assert open_files.idle_budget(1024, need + 1000, 1024) == 0
    assert "open-file limit (1024" in caplog.text and "max_in_flight" in caplog.text
