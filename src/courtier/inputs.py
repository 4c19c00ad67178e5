"""Inputs other than settings, checked before anything starts: store URLs and paths, output
directories, seed lists, networks and nameservers. Shared by the command line and the Python
API, so both accept and refuse exactly the same things.

Rules:
- Every check raises ``InputError`` with one line naming the input as the caller spells it
  (``--store``, ``store=``) and what would be accepted; nothing here prints or exits.
- Pure checks come first; the only side effect is creating an output directory, last.
- A store is a SQLite file path or a PostgreSQL libpq URL; ``parse_store`` is the one place
  that tells them apart. psycopg (the ``postgres`` extra) is imported only for a PostgreSQL
  URL. Connection parameters are parsed, never used: no connection is made here.
- This module imports nothing heavy at import time (``courtier --version`` loads it).
"""

from __future__ import annotations

import ipaddress
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from courtier.net.policy import AddressPolicy
    from courtier.url import Url


class InputError(ValueError):
    """Bad input: reported as one line naming the input and what it accepts (exit status 2)."""


# -- stores -----------------------------------------------------------------------------------

STORE_FORMS = (
    "a SQLite file path, or a PostgreSQL URL (postgresql://USER@HOST:PORT/DB, postgres://…, "
    "postgresql:///DB?host=/socket/dir)"
)
SQLITE_HEADER = b"SQLite format 3\x00"
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_POSTGRES_SCHEMES = ("postgresql", "postgres")


@dataclass(frozen=True, slots=True)
class SqliteStore:
    """The embedded store: one SQLite file."""

    path: Path

    def __str__(self) -> str:
        return str(self.path)


@dataclass(frozen=True, slots=True)
class PostgresStore:
    """The shared store: a PostgreSQL database, as a libpq URL (passed to psycopg as is)."""

    conninfo: str

    def __str__(self) -> str:
        return redact(self.conninfo)


StoreSpec = SqliteStore | PostgresStore


def redact(conninfo: str) -> str:
    """A connection URL fit for messages and logs: passwords replaced by ``***``."""
    text = re.sub(r"(://[^:/@?]*:)[^@/?]*@", r"\1***@", conninfo)
    return re.sub(r"(?i)(password=)[^&\s]*", r"\1***", text)


def parse_store(text: str | Path, *, name: str = "--store") -> StoreSpec:
    """A SQLite path or a PostgreSQL URL; any other URL scheme is refused."""
    if isinstance(text, Path):
        return SqliteStore(text)
    raw = text.strip()
    if not raw:
        raise InputError(f"{name} is empty: must be {STORE_FORMS}")
    match = _URL_SCHEME.match(raw)
    if match is None:
        return SqliteStore(Path(raw))
    if match.group(1).lower() not in _POSTGRES_SCHEMES:
        raise InputError(f"{name} {redact(raw)}: unsupported store URL; must be {STORE_FORMS}")
    return PostgresStore(_check_postgres(raw, name))


def check_postgres_reachable(spec: PostgresStore, *, name: str = "--store") -> None:
    """Connect once (5 s at most) before anything starts: a wrong host, socket directory,
    database or role is bad input, said in one line, not a failure in the middle of a run."""
    import psycopg

    try:
        with psycopg.connect(spec.conninfo, connect_timeout=5):
            pass
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"{name} {redact(spec.conninfo)}: cannot connect ({reason})") from None


def _check_postgres(url: str, name: str) -> str:
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise InputError(
            f"{name} {redact(url)}: a PostgreSQL store needs psycopg: "
            "pip install 'courtier[postgres]'"
        ) from None
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{name} {redact(url)}: not a valid PostgreSQL URL ({reason})") from None
    for port in str(params.get("port") or "").split(","):
        if port and not (port.isdigit() and 0 < int(port) < 65536):  # empty: the default
            raise InputError(f"{name} {redact(url)}: port {port!r} must be from 1 to 65535")
    for host in str(params.get("host") or "").split(","):
        if host.startswith(("/", "@")) or not host:
            continue  # a Unix-socket directory (or abstract socket), or libpq's default
        if not re.fullmatch(r"[A-Za-z0-9._:\[\]-]+", host):
            raise InputError(f"{name} {redact(url)}: host {host!r} is not a host name or address")
    return url


def check_sqlite_store(path: Path, *, name: str = "--store", create: bool) -> None:
    """A SQLite store file that exists and is a database, or (``create``) one that can be
    made: its directory exists or can be created."""
    if path.is_dir():
        raise InputError(f"{name} {path}: is a directory; must be a SQLite database file")
    if path.exists():
        try:
            with path.open("rb") as handle:
                header = handle.read(len(SQLITE_HEADER))
        except OSError as exc:
            raise InputError(f"{name} {path}: cannot read it ({exc.strerror})") from None
        if header and header != SQLITE_HEADER:
            raise InputError(f"{name} {path}: not a SQLite database (wrong file header)")
        return
    if not create:
        raise InputError(f"{name} {path}: no store there (run a crawl first, or check the path)")
    check_creatable(path.parent, f"{name} {path}")


def check_creatable(directory: Path, subject: str) -> None:
    """The nearest existing ancestor of ``directory`` is a directory (no file in the way)."""
    for ancestor in (directory, *directory.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise InputError(f"{subject}: {ancestor} is not a directory")
            return


def prepare_directory(path: Path, *, name: str = "--out") -> Path:
    """Create the output directory if needed and prove it writable (the last check)."""
    check_creatable(path, f"{name} {path}")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError(
            f"{name} {path}: cannot create or write the directory ({reason})"
        ) from None
    return path


# -- seeds ------------------------------------------------------------------------------------


def parse_seed_lines(lines: Iterable[str]) -> tuple[list[Url], list[tuple[str, str]]]:
    """Seed lines (URLs or bare hosts; ``#`` comments) as root URLs, and the bad lines."""
    from courtier.url import UrlError, parse_url

    seeds: list[Url] = []
    errors: list[tuple[str, str]] = []
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        text = line if "://" in line else f"http://{line}/"
        try:
            seeds.append(parse_url(text))
        except UrlError as exc:
            errors.append((line, str(exc)))
    return seeds, errors


def read_seed_file(path: Path, *, name: str = "--seeds") -> tuple[list[Url], list[tuple[str, str]]]:
    """The seeds of a file, and its unusable lines; no usable seed at all is an error."""
    if path.is_dir():
        raise InputError(f"{name} {path}: is a directory; must be a file of URLs or host names")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{name} {path}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{name} {path}: not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"{name} {path}: cannot read it ({exc.strerror})") from None
    seeds, errors = parse_seed_lines(text.splitlines())
    if not seeds:
        skipped = f" ({len(errors)} unusable lines)" if errors else ""
        raise InputError(
            f"{name} {path}: no usable seed{skipped}; one URL or host name per line, "
            "'#' starts a comment"
        )
    return seeds, errors


def parse_seed_list(seeds: Iterable[str], *, name: str = "seeds=") -> list[Url]:
    """Seeds given one by one (the Python API): every one must be usable."""
    items = [seeds] if isinstance(seeds, str) else list(seeds)
    parsed, errors = parse_seed_lines(items)
    if errors:
        line, error = errors[0]
        raise InputError(f"{name}: {line!r} is not a URL or host name ({error})")
    if not parsed:
        raise InputError(f"{name}: no seed given; give URLs or host names")
    return parsed


# -- networks and nameservers -----------------------------------------------------------------


def parse_networks(specs: Sequence[str], *, name: str = "--allow-net") -> AddressPolicy:
    """The SSRF guard's policy with these networks allowed."""
    from courtier.net.policy import AddressPolicy, parse_allowed_network

    for spec in specs:
        try:
            parse_allowed_network(spec)
        except ValueError as exc:
            reason = str(exc).partition(" (")[2].rstrip(")") or str(exc)
            raise InputError(
                f"{name} {spec}: must be a network in CIDR notation such as 127.0.0.0/8 or "
                f"::1/128 ({reason})"
            ) from None
    return AddressPolicy(allow=list(specs))


def parse_nameserver_arg(text: str | None, *, name: str = "--dns") -> str | None:
    """A nameserver ``IP:PORT`` (or None: the system's)."""
    if text is None:
        return None
    from courtier.net.resolve import parse_nameserver

    try:
        parse_nameserver(text)
    except ValueError as exc:
        reason = str(exc).partition(": ")[2] or str(exc)
        raise InputError(
            f"{name} {text}: {reason}; must be IP:PORT, IP or [IPv6]:PORT, e.g. 127.0.0.1:5353"
        ) from None
    return text


_RESERVED_NAMES = ("test", "localhost", "invalid", "example")


def is_local_host(host: str) -> bool:
    """A loopback address, or a name under a reserved TLD (RFC 2606/6761: ``.test``,
    ``.localhost``, ``.invalid``, ``.example``) that is never a site on the Internet."""
    bare = host.strip("[]").rstrip(".").lower()
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return bare.rsplit(".", 1)[-1] in _RESERVED_NAMES
