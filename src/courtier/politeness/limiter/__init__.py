"""Booking backends behind one ``Limiter`` contract (see ``base``).

``PostgresLimiter`` lives in ``courtier.politeness.limiter.postgres`` and is imported from
there, so psycopg stays an optional dependency of the embedded default.
"""

from courtier.politeness.limiter.base import DEFAULT_PRUNE_MARGIN, Clock, Limiter, LimiterError
from courtier.politeness.limiter.memory import MemoryLimiter
from courtier.politeness.limiter.sqlite import SqliteLimiter

__all__ = [
    "DEFAULT_PRUNE_MARGIN",
    "Clock",
    "Limiter",
    "LimiterError",
    "MemoryLimiter",
    "SqliteLimiter",
]
