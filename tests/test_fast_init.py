"""``fast_init``: the frozen dataclass behaves as before, only its ``__init__`` is faster."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import InitVar, dataclass, field

import pytest

from courtier.fast_init import fast_init


def _totals(record: Plain | Fast) -> None:
    if record.size < 0:
        raise ValueError("size")
    object.__setattr__(record, "total", record.size + len(record.tags))


@dataclass(frozen=True, slots=True)
class Plain:
    name: str
    size: int = 3
    tags: list[str] = field(default_factory=list)
    total: int = 0

    __post_init__ = _totals


@fast_init
@dataclass(frozen=True, slots=True)
class Fast:
    name: str
    size: int = 3
    tags: list[str] = field(default_factory=list)
    total: int = 0

    __post_init__ = _totals


PLAIN, FAST = Plain, Fast

CALLS = [
    (("a",), {}),
    (("a", 5), {}),
    (("a",), {"tags": ["x", "y"]}),
    ((), {"name": "b", "size": 1, "tags": ["z"], "total": 9}),
    (("a", 1, ["t"], 4), {}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_the_same_record_as_the_dataclass_makes(args: tuple, kwargs: dict) -> None:
    plain, fast = PLAIN(*args, **kwargs), FAST(*args, **kwargs)
    assert dataclasses.astuple(plain) == dataclasses.astuple(fast)
    assert repr(plain).replace("Plain", "Fast") == repr(fast)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((), {}), (("a", 1, [], 0, 5), {}), (("a",), {"nope": 1}), (("a",), {"name": "b"})],
)
def test_the_same_errors_as_the_dataclass_raises(args: tuple, kwargs: dict) -> None:
    with pytest.raises(TypeError):
        PLAIN(*args, **kwargs)
    with pytest.raises(TypeError):
        FAST(*args, **kwargs)


def test_still_frozen_comparable_replaceable_and_picklable() -> None:
    record = FAST("a", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.size = 4  # type: ignore[misc]
    assert record == FAST("a", 2) and record != FAST("a", 3)
    assert dataclasses.replace(record, size=7).total == 7
    with pytest.raises(ValueError, match="size"):
        dataclasses.replace(record, size=-1)
    assert pickle.loads(pickle.dumps(record)) == record
    assert FAST("a").tags is not FAST("a").tags  # a fresh list each time


def test_the_signature_names_the_same_parameters() -> None:
    plain = inspect.signature(PLAIN.__init__).parameters
    fast = inspect.signature(FAST.__init__).parameters
    assert list(plain) == list(fast)
    assert [p.default for p in plain.values()][:3] == [p.default for p in fast.values()][:3]


def test_what_it_cannot_copy_exactly_is_refused_when_the_class_is_made() -> None:
    @dataclass(slots=True)
    class Mutable:
        a: int

    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True)
    class KeywordOnly:
        a: int = field(kw_only=True)

    @dataclass(frozen=True, slots=True)
    class NotInInit:
        a: int = field(init=False, default=1)

    @dataclass(frozen=True, slots=True)
    class WithInitVar:
        a: int
        b: InitVar[int]

        def __post_init__(self, b: int) -> None:
            pass

    @dataclass(frozen=True, slots=True, init=False)
    class OwnInit:
        a: int

        def __init__(self) -> None:
            object.__setattr__(self, "a", 1)

    for cls in (Mutable, NoSlots, KeywordOnly, NotInInit, WithInitVar, OwnInit):
        with pytest.raises(TypeError, match="fast_init"):
            fast_init(cls)
