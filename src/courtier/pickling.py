"""Cheap pickling for the small dataclasses every parse job carries.

A slotted dataclass pickles through ``dataclasses``' own ``__getstate__``, which asks
``dataclasses.fields()`` for every object: a third of the cost of sending an ordinary page's
job to a parse worker (py-spy, 2,000 sites: ~3% of the crawl process's samples). Pickled as
its class and its field values, in order, it is rebuilt by its own ``__init__``.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, TypeVar

C = TypeVar("C", bound=type)


def positional_pickle(cls: C) -> C:
    """Pickle instances of the dataclass ``cls`` as ``cls(*field values)``."""
    fields = dataclasses.fields(cls)
    if any(not field.init for field in fields):
        raise TypeError(f"{cls.__name__}: every field must be an __init__ argument")
    names = [field.name for field in fields]
    if len(names) == 1:
        name = names[0]

        def reduce_one(self: Any) -> tuple[type, tuple[Any, ...]]:
            return (cls, (getattr(self, name),))

        cls.__reduce__ = reduce_one  # type: ignore[assignment]
        return cls
    values = operator.attrgetter(*names)

    def reduce(self: Any) -> tuple[type, tuple[Any, ...]]:
        return (cls, values(self))

    cls.__reduce__ = reduce  # type: ignore[assignment]
    return cls
