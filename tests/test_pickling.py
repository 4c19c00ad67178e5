"""Dataclasses pickled as their field values come back equal, through the parse pool's
pickler; a dataclass with a field ``__init__`` does not take is refused."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from multiprocessing.reduction import ForkingPickler

import pytest

from courtier.content.reading import ReadContext, RedactedBody
from courtier.pickling import positional_pickle
from courtier.sinks.redact import RedactionPolicy
from courtier.sinks.warc import Capture, EncodedCapture


@pytest.mark.parametrize(
    "value",
    [
        ReadContext("text/html", "bot", ("noindex",), RedactionPolicy(phones=False), "a.test"),
        RedactedBody(b"x", {"email": 2}),
        RedactionPolicy(region="GB", skip=frozenset({"aws"})),
        Capture("http://a.test/", 1.5, 200, (("A", "b"),), b"body", truncated=True),
        EncodedCapture((b"m1", b"m2"), "sha1:X", "response", 0.01),
    ],
)
def test_a_value_comes_back_equal(value: object) -> None:
    assert pickle.loads(ForkingPickler.dumps(value)) == value
    assert pickle.loads(pickle.dumps(value)) == value


@positional_pickle
@dataclass(frozen=True)
class One:
    x: int


def test_one_field_and_refused_classes() -> None:
    assert pickle.loads(pickle.dumps(One(3))) == One(3)

    with pytest.raises(TypeError):

        @positional_pickle
        @dataclass
        class Derived:
            x: int
            y: int = field(init=False, default=0)
