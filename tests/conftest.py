"""Project-wide fixtures: a throwaway PostgreSQL cluster (``postgres_dsn``, see tests/pg.py)."""

from pg import postgres_dsn

__all__ = ["postgres_dsn"]
