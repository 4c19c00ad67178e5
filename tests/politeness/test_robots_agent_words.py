"""Which ``User-agent`` group speaks to our token, as protego scores it: ``*`` scores 1, a
group whose agent is our token, or a word of it, scores the agent's length; an agent that is
only part of a word (``xcourtier``, ``super-courtier``, ``courtier_beta``) is someone else."""

from __future__ import annotations

import pytest

from courtier.politeness.robots import RobotsGroup


@pytest.mark.parametrize(
    ("token", "score"),
    [
        ("courtier", 8),
        ("Courtier/1.0", 8),
        ("my courtier", 8),
        ("(courtier)", 8),
        ("xcourtier", 0),
        ("super-courtier", 0),
        ("crawl_courtier", 0),
        ("xcourtier courtier", 8),  # the second occurrence is a word of its own
        ("xcourtier-courtier", 0),
        ("other", 0),
    ],
)
def test_an_agent_scores_only_as_a_word_of_the_token(token: str, score: int) -> None:
    assert RobotsGroup("courtier", "").applies_to(token) == score


def test_the_star_group_scores_one_whatever_the_token() -> None:
    assert RobotsGroup("*", "").applies_to("courtier") == 1
    assert RobotsGroup("*", "").applies_to("") == 1
