"""A faster ``__init__`` for the frozen dataclasses made on every request.

A frozen dataclass's generated ``__init__`` sets each field through
``object.__setattr__(self, name, value)`` (its own ``__setattr__`` refuses): in CPython 3.11
about 300 ns a field, 2.0 us for a six-field record against 0.36 us unfrozen. The event loop
makes a dozen such records per request (a booking's slot, the fetch's result and phases, the
answer's effects, every link found...): 7.5% of the loop's samples at 2,000 sites were those
``__init__``s (py-spy over python bench/bench_rebook.py --sites 2000 --page-bytes 6000 --duration
40). With ``__slots__`` each field is a member
descriptor whose ``__set__`` stores it directly, and frozen or not is only ``__setattr__``:
``fast_init`` replaces the generated ``__init__`` with one that calls those, 0.65 us for six
fields. Everything else (equality, hashing, ``replace``, which calls ``__init__``, pickling,
``fields``) is the dataclass's own.

Only for what that covers exactly: a frozen dataclass with ``slots=True`` whose fields are
all ``__init__`` parameters, positional or keyword (no ``kw_only``, no ``InitVar``), with
plain defaults or default factories; ``__post_init__`` is called as the dataclass would.
Anything else is refused when the class is made, not when it is used.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar, cast

T = TypeVar("T")


class _NoValue:
    """The default of a parameter whose field has a default factory."""

    def __repr__(self) -> str:
        return "<factory default>"


_FACTORY = _NoValue()


def fast_init(cls: type[T]) -> type[T]:
    """``cls`` (a frozen, slotted dataclass) with the faster ``__init__`` (module docs)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__}: fast_init is for frozen dataclasses with slots=True")
    if not params.init:
        raise TypeError(f"{cls.__name__}: fast_init replaces a generated __init__, not its own")
    namespace: dict[str, Any] = {"__factory": _FACTORY}
    signature: list[str] = []
    body: list[str] = []
    fields = dataclasses.fields(cast(Any, cls))
    # The generated __init__'s parameters are the fields, in order, when nothing else is
    # (an InitVar is a parameter but no field).
    if list(inspect.signature(cls.__init__).parameters)[1:] != [f.name for f in fields]:
        raise TypeError(f"{cls.__name__}: fast_init needs an __init__ of its fields alone")
    for field in fields:
        name = field.name
        if not field.init or field.kw_only:
            raise TypeError(f"{cls.__name__}.{name}: fast_init needs positional init fields")
        namespace[f"__set_{name}"] = cls.__dict__[name].__set__
        value = name
        if field.default is not dataclasses.MISSING:
            namespace[f"__default_{name}"] = field.default
            signature.append(f"{name}=__default_{name}")
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"__make_{name}"] = field.default_factory
            signature.append(f"{name}=__factory")
            value = f"__make_{name}() if {name} is __factory else {name}"
        else:
            signature.append(name)
        body.append(f"    __set_{name}(self, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(signature)}):\n" + ("\n".join(body) or "    pass")
    exec(source, namespace)  # as dataclasses makes its own __init__
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    type.__setattr__(cls, "__init__", init)
    return cls
