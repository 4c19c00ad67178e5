"""Fixtures of the hostile-server suite: a running ``HostileWeb`` (see ``hostile_web.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hostile_web import HostileWeb


@pytest.fixture
def web() -> Iterator[HostileWeb]:
    """The standard listeners (hostile, normal, two canaries), bound, with no hosts yet: the
    test sets up ``web.hosts``, then ``web.start()``s it; it is stopped afterwards."""
    hostile = HostileWeb.standard()
    try:
        yield hostile
    finally:
        hostile.stop()
