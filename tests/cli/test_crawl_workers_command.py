"""`courtier crawl --workers N`: the command each worker on this machine runs."""

from __future__ import annotations

import sys

from courtier.cli import build_parser
from courtier.cli import crawl as crawl_cli
from courtier.cli.crawl import worker_command
from courtier.cli.options import load_config

WORDS = ["crawl", "--seeds", "seeds.txt", "--workers", "2", "--store", "postgresql://db/x"]


def test_each_worker_runs_the_same_crawl_without_workers_and_a_share_of_the_cores() -> None:
    command = worker_command(WORDS, 2, 0, cores=2)
    assert command[:3] == [sys.executable, "-m", "courtier"]
    assert "--workers" not in command
    assert command[-2:] == ["-s", "crawl.parse_workers=1"]
    args = build_parser("crawl", crawl_cli).parse_args(command[3:])
    assert load_config(args).crawl.parse_workers == 1  # the option is taken where it stands


def test_the_share_of_the_cores_is_never_zero() -> None:
    assert worker_command(WORDS, 3, 0, cores=8)[-1] == "crawl.parse_workers=2"
    assert worker_command(WORDS, 4, 0, cores=1)[-1] == "crawl.parse_workers=1"


def test_an_operators_number_of_parse_workers_is_kept_as_given() -> None:
    words = [*WORDS, "-s", "crawl.parse_workers=3"]
    command = worker_command(words, 2, 3, cores=2)
    assert command[3:] == [w for w in words if w not in ("--workers", "2")]
