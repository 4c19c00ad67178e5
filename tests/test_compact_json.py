"""Compact JSON reads back as ``json.dumps`` would have written it, whatever orjson refuses."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from courtier.compact_json import dumps, dumps_line

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()  # past 64 bits too: json writes those
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()  # lone surrogates included
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


def _reference(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@given(_VALUES)
def test_dumps_reads_back_as_json_dumps(value):
    text = dumps(value)
    assert json.loads(text) == json.loads(_reference(value))
    assert "\n" not in text


@given(_VALUES)
def test_a_line_is_one_utf8_line_that_reads_back(value):
    line = dumps_line(value)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    expected = _reference(value).encode("utf-8", "backslashreplace").decode("utf-8")
    assert json.loads(line.decode("utf-8")) == json.loads(expected)


def test_what_orjson_refuses_is_written_by_json():
    assert dumps({"n": 2**70}) == '{"n":1180591620717411303424}'
    assert dumps({1: "a"}) == '{"1":"a"}'
    assert dumps_line({"h": "caf\udce9"}) == b'{"h":"caf\\udce9"}\n'


def test_compact_and_not_ascii_escaped():
    assert dumps({"a": [1, "é", None, True]}) == '{"a":[1,"é",null,true]}'
    assert dumps_line(["é"]) == '["é"]\n'.encode()
