"""A Crawl-delay under one second is a delay like any other; zero asks for none."""

from __future__ import annotations

from courtier.politeness.robots import crawl_delay_verdict


def test_a_crawl_delay_under_a_second_is_honoured_and_zero_is_none() -> None:
    assert crawl_delay_verdict(0.5, 10.0) == (0.5, None)
    assert crawl_delay_verdict(0.0, 10.0) == (None, None)
