"""A throwaway PostgreSQL cluster for tests and benchmarks, started from the server binaries.

``PostgresCluster`` runs ``initdb`` and ``pg_ctl`` (as the ``postgres`` user when we are
root: the server refuses to run as root) in a temporary directory, listens on a free port of
127.0.0.1 with trust authentication, and is removed on ``stop``. When the binaries are
missing the ``postgres_dsn`` fixture FAILS with a message saying what to install: PostgreSQL
tests are never silently skipped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

PG_BIN = Path(os.environ.get("COURTIER_PG_BIN", "/usr/lib/postgresql/15/bin"))

PORT_ATTEMPTS = 5

# Throwaway-cluster settings: durability off (the data dies with the test run).
TEST_SETTINGS = ("fsync=off", "full_page_writes=off", "synchronous_commit=off")


class PostgresUnavailable(RuntimeError):
    """The server binaries are missing or the cluster did not start."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PostgresCluster:
    def __init__(
        self,
        settings: Sequence[str] = TEST_SETTINGS,
        max_connections: int = 300,
        bin_dir: Path = PG_BIN,
    ):
        for tool in ("initdb", "pg_ctl"):
            if not (bin_dir / tool).is_file():
                raise PostgresUnavailable(
                    f"PostgreSQL server binary {bin_dir / tool} is missing: install the "
                    "PostgreSQL 15 server (apt-get install postgresql-15) or point "
                    "COURTIER_PG_BIN at its bin directory"
                )
        self._bin = bin_dir
        self._settings = (*settings, f"max_connections={max_connections}")
        self._root = Path(tempfile.mkdtemp(prefix="courtier-pg-"))
        self.data = self._root / "data"
        self.port = _free_port()
        self._as_postgres = os.geteuid() == 0
        self.dsn = f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"
        self.socket_dir = self._root
        """Where the server's Unix socket is (``postgresql:///DB?host=DIR&port=PORT``)."""

    def _run(self, *args: str) -> None:
        command = [str(self._bin / args[0]), *args[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise PostgresUnavailable(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")

    def start(self) -> PostgresCluster:
        if self._as_postgres:
            shutil.chown(self._root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync")
        log = self._root / "server.log"
        for attempt in range(PORT_ATTEMPTS):
            options = f"-k {self._root} -h 127.0.0.1 -p {self.port}"
            options += "".join(f" -c {setting}" for setting in self._settings)
            start = ("pg_ctl", "-D", str(self.data), "-l", str(log), "-o", options, "-w", "start")
            try:
                self._run(*start)
                return self
            except PostgresUnavailable:
                # The port was free when _free_port looked; something (another test process,
                # another worker's cluster) may have taken it since: take another.
                taken = log.exists() and "Address already in use" in log.read_text()
                if not taken or attempt == PORT_ATTEMPTS - 1:
                    raise
                self.port = _free_port()
                self.dsn = f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"
        raise AssertionError("unreachable")

    def restart(self, down: float = 0.0) -> None:
        """Stop the server (fast: sessions are ended), wait ``down`` seconds, start it
        again on the same port, as an operator's restart or a failover does."""
        import time

        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        time.sleep(down)
        options = f"-k {self._root} -h 127.0.0.1 -p {self.port}"
        options += "".join(f" -c {setting}" for setting in self._settings)
        log = self._root / "server.log"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(log), "-o", options, "-w", "start")

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self._root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """The DSN of a PostgreSQL cluster started for this test session (fails if impossible)."""
    try:
        cluster = PostgresCluster()
    except PostgresUnavailable as exc:
        pytest.fail(f"PostgreSQL tests need a server: {exc}", pytrace=False)
    try:
        cluster.start()
    except PostgresUnavailable as exc:
        cluster.stop()
        pytest.fail(f"PostgreSQL tests need a server: {exc}", pytrace=False)
    try:
        RUNNING.append(cluster)
        yield cluster.dsn
    finally:
        RUNNING.remove(cluster)
        cluster.stop()


RUNNING: list[PostgresCluster] = []
"""The session's cluster while ``postgres_dsn`` is active (its socket directory, port)."""


@contextlib.contextmanager
def fresh_database(dsn: str, prefix: str) -> Iterator[str]:
    """A database of its own on the cluster of ``dsn`` (dropped after), as a crawl's
    ``--store`` URL."""
    import uuid

    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    params = dict(part.split("=", 1) for part in dsn.split())
    try:
        yield f"postgresql://{params['user']}@{params['host']}:{params['port']}/{name}"
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
