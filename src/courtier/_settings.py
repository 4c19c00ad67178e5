"""Typed settings read from layers (defaults, a file, the environment, ``-s`` flags), every
error naming its input: a file's own line and column, the environment variable, the flag.

Rules:
- A setting's type is its dataclass annotation: ``bool``, ``int``, ``float``, ``str``,
  ``tuple[str, ...]``, or another settings dataclass (a table of settings). Nothing else.
- Values from a file or a Python mapping must already have that type: a quoted ``"3"`` is a
  string, never a number. Values given as text (environment, ``-s``) are read as TOML
  literals for numbers, booleans and lists, and taken as they are for strings.
- Besides its type, a setting accepts what its ``Rule`` says: a range, a set of values, a
  format. A number without a rule must still be finite; NaN is never accepted.
- A section's own checks (``__post_init__``, for constraints between settings) run when the
  section is built; a failure is reported at the one value that fails on its own, or else
  names every input that set a value in that section.
- Names may be written with ``-`` for ``_`` (``[limits.cdn-miss]``).

Theory of operation: each layer becomes a list of entries (path, value, origin); entries are
checked one by one (path, type, rule), later layers replace earlier ones path by path, and
the sections are built once at the end, bottom-up.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tomllib
import typing
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from functools import cache
from typing import Any

from courtier.inputs import InputError

Path_ = tuple[str, ...]
Check = Callable[[Any], str | None]
"""What is wrong with a value (already of the right type): None if nothing, "" if it is just
not what the rule accepts, or a detail worth printing ("not a valid regex (...)")."""


class ConfigError(InputError):
    """A configuration file, environment variable or override that cannot be applied."""


# -- what a setting accepts -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    accepts: str
    """What a value must be, in words, for messages: "a whole number, from 1 to 256"."""
    check: Check | None = None
    infinite: bool = False
    """Numbers only: ``inf`` is accepted (it means "no limit")."""


def _bounds(low: float | None, high: float | None, above: float | None) -> str:
    def show(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else str(x)

    if above is not None:
        return f"above {show(above)}" + (f" and at most {show(high)}" if high is not None else "")
    if low is not None and high is not None:
        return f"from {show(low)} to {show(high)}"
    if low is not None:
        return f"at least {show(low)}"
    return f"at most {show(high)}" if high is not None else ""


def _range_check(low: float | None, high: float | None, above: float | None) -> Check:
    def check(value: Any) -> str | None:
        if math.isinf(value) and value > 0 and high is None:
            return None
        ok = (low is None or value >= low) and (high is None or value <= high)
        return None if ok and (above is None or value > above) and math.isfinite(value) else ""

    return check


def whole(low: int | None = None, high: int | None = None, *, unit: str = "") -> Rule:
    noun = "a whole number" + (f" of {unit}" if unit else "")
    words = _bounds(low, high, None)
    return Rule(f"{noun}, {words}" if words else noun, _range_check(low, high, None))


def number(
    low: float | None = None,
    high: float | None = None,
    *,
    above: float | None = None,
    unit: str = "",
    infinite: bool = False,
) -> Rule:
    noun = "a number" + (f" of {unit}" if unit else "")
    words = _bounds(low, high, above) + (" (inf: no limit)" if infinite else "")
    return Rule(f"{noun}, {words}" if words else noun, _range_check(low, high, above), infinite)


def one_of(*choices: str) -> Rule:
    allowed = ", ".join(json.dumps(c) for c in choices)
    return Rule(f"one of {allowed}", lambda v: None if v in choices else "")


def text(accepts: str, check: Check) -> Rule:
    return Rule(accepts, check)


def each(accepts: str, check: Check) -> Rule:
    """A rule for ``tuple[str, ...]`` settings: ``check`` applies to every item."""

    def check_all(values: Any) -> str | None:
        for position, item in enumerate(values, 1):
            problem = check(item)
            if problem is not None:
                shown = json.dumps(item, ensure_ascii=False)
                return f"item {position} {shown} is {problem or 'not accepted'}"
        return None

    return Rule(f"a list of {accepts}", check_all)


# -- where a value came from -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """The layer a value came from (``default``, ``file``, ``env``, ``-s``, ``mapping``) and
    exactly where: ``c.toml:3:17``, ``COURTIER_CRAWL__MAX_IN_FLIGHT``, ``-s crawl.x=1``."""

    layer: str
    where: str = ""

    def __str__(self) -> str:
        return f"{self.layer} {self.where}" if self.where else self.layer


DEFAULT = Source("default")


@dataclass(frozen=True, slots=True)
class Entry:
    words: Path_
    """The path as written (``limits``, ``cdn-miss``, ``rate``)."""
    value: Any
    source: Source
    subject: str
    """The input, as a message names it: ``c.toml:3:17: crawl.x = 0`` or ``-s crawl.x=0``."""
    textual: bool
    """The value is text to be read for the setting's type (environment, ``-s``)."""


# -- the schema: settings dataclasses --------------------------------------------------------

_SCALARS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}
_STRINGS = tuple[str, ...]


def hints(cls: type) -> dict[str, Any]:
    """The annotation of every field of a settings dataclass, resolved."""
    return _hints(cls)


@cache
def _hints(cls: Any) -> dict[str, Any]:
    resolved = typing.get_type_hints(cls)
    return {f.name: resolved[f.name] for f in fields(cls)}


def is_table(annotation: Any) -> bool:
    return isinstance(annotation, type) and dataclasses.is_dataclass(annotation)


def type_words(annotation: Any) -> str:
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    if annotation == _STRINGS:
        return "a list of strings"
    return "a table"


def _kind(value: Any) -> str:
    """What a value is, in words, for a wrong-type message."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a table"
    return f"a {type(value).__name__}"


def show(value: Any) -> str:
    """A value as TOML would write it (for messages and ``courtier config show``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)


@dataclass(frozen=True, slots=True)
class Setting:
    """One leaf of the schema, found from a path as written."""

    names: Path_
    """The canonical path (field names)."""
    owner: type
    annotation: Any

    @property
    def dotted(self) -> str:
        return ".".join(self.names)


def find(root: type, words: Sequence[str]) -> tuple[Path_, Any, type]:
    """The canonical path, annotation and owning dataclass of a path as written."""
    cls: Any = root
    owner: type = root
    names: list[str] = []
    for word in words:
        if not is_table(cls):
            raise ConfigError(f"{'.'.join(names)} is a setting, not a table")
        name = str(word).replace("-", "_")
        known = hints(cls)
        if name not in known:
            options = ", ".join(sorted(known))
            if not names:
                raise ConfigError(f"unknown section [{word}] (known: {options})")
            raise ConfigError(f"unknown setting {'.'.join(names)}.{word} (known: {options})")
        owner, cls = cls, known[name]
        names.append(name)
    return tuple(names), cls, owner


# -- reading values ---------------------------------------------------------------------------


class _Wrong(Exception):
    """A value that is not what the setting accepts; the message says how."""


def _toml_literal(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        raise _Wrong("unreadable") from None


def from_text(annotation: Any, raw: str) -> Any:
    """A value for ``annotation`` read from text (an environment variable, ``-s``)."""
    text = raw.strip()
    if annotation is str:
        if text[:1] in ('"', "'"):
            try:
                value = _toml_literal(text)
            except _Wrong:
                return text
            return value if isinstance(value, str) else text
        return text
    if annotation is bool:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise _Wrong("wrong type")
    value = _toml_literal(text) if text else None
    if value is None:
        raise _Wrong("empty" if not text else "wrong type")
    return strict(annotation, value)


def strict(annotation: Any, value: Any) -> Any:
    """``value`` as ``annotation`` if it already has that type (ints pass for floats)."""
    if annotation is bool:
        ok = isinstance(value, bool)
    elif annotation is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif annotation is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif annotation is str:
        ok = isinstance(value, str)
    elif annotation == _STRINGS:
        ok = isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
        value = tuple(value) if ok else value
    else:
        raise TypeError(f"unsupported setting type {annotation!r}")
    if not ok:
        raise _Wrong("wrong type")
    return value


def checked(setting: Setting, rule: Rule | None, value: Any, textual: bool) -> Any:
    """The value for ``setting``, type-checked and checked against its rule; raises _Wrong
    with the whole problem ("wrong type (a string): must be ...")."""
    accepts = rule.accepts if rule is not None else type_words(setting.annotation)
    try:
        value = (
            from_text(setting.annotation, value) if textual else strict(setting.annotation, value)
        )
    except _Wrong:
        if not textual:
            raise _Wrong(f"wrong type ({_kind(value)}): must be {accepts}") from None
        if setting.annotation == _STRINGS:
            accepts += ', written as a TOML list: ["a", "b"]'
        raise _Wrong(f"must be {accepts}") from None
    if isinstance(value, float) and (
        math.isnan(value) or (math.isinf(value) and not (rule and rule.infinite))
    ):
        raise _Wrong(f"not finite: must be {accepts}")
    problem = rule.check(value) if rule is not None and rule.check is not None else None
    if problem is not None:
        raise _Wrong(f"{problem}: must be {accepts}" if problem else f"must be {accepts}")
    return value


# -- layers -----------------------------------------------------------------------------------


def mapping_entries(
    root: type,
    table: Mapping[str, Any],
    locate: Callable[[Path_], tuple[Source, str, str]],
    prefix: Path_ = (),
) -> Iterator[Entry]:
    """Entries of a nested mapping (a parsed file, or a Python dict), values as they are.
    ``locate`` gives a path's source and the prefixes naming its key and its value
    (``"c.toml:3:1: "``, ``"c.toml:3:17: "``)."""
    for key, value in table.items():
        words = (*prefix, str(key))
        if not prefix and str(key).startswith("$"):
            continue  # metadata, such as the "$sources" of `courtier config show --json`
        source, at_key, where = locate(words)
        try:
            _names, annotation, _owner = find(root, words)
        except ConfigError as exc:
            raise ConfigError(f"{at_key}{exc}") from None
        if is_table(annotation):
            if not isinstance(value, Mapping):
                dotted = ".".join(words)
                raise ConfigError(
                    f"{where}{dotted} = {show(value)}: wrong type ({_kind(value)}): "
                    f"[{dotted}] is a table of {', '.join(hints(annotation))}"
                )
            yield from mapping_entries(root, value, locate, words)
        else:
            subject = f"{where}{'.'.join(words)} = {show(value)}"
            yield Entry(words, value, source, subject, textual=False)


def text_entry(root: type, words: Sequence[str], raw: str, source: Source, subject: str) -> Entry:
    try:
        _names, annotation, _owner = find(root, words)
    except ConfigError as exc:
        raise ConfigError(f"{subject}: {exc}") from None
    if is_table(annotation):
        dotted = ".".join(words)
        example = next(iter(hints(annotation)))
        raise ConfigError(
            f"{subject}: {dotted} is a table of {', '.join(hints(annotation))}; "
            f"set one of them, e.g. {dotted}.{example}=VALUE"
        )
    return Entry(tuple(words), raw, source, subject, textual=True)


def override_entry(root: type, item: str) -> Entry:
    """``section.key=value`` (a ``-s`` flag)."""
    name, sep, raw = item.partition("=")
    words = name.strip().split(".")
    if not sep or len(words) < 2 or not all(words):
        raise ConfigError(f"-s {item}: not of the form SECTION.KEY=VALUE, e.g. crawl.max_depth=5")
    return text_entry(root, words, raw, Source("-s", item), f"-s {item}")


ENV_PREFIX = "COURTIER_"


def env_entries(root: type, environ: Mapping[str, str]) -> Iterator[Entry]:
    """``COURTIER_SECTION__KEY=value`` (``__`` between names; other COURTIER_ names ignored)."""
    for name in sorted(environ):
        rest = name[len(ENV_PREFIX) :] if name.startswith(ENV_PREFIX) else ""
        if "__" not in rest:
            continue
        words = rest.lower().split("__")
        subject = f"environment variable {name}={environ[name]}"
        if not all(words):
            raise ConfigError(f"{subject}: not of the form COURTIER_SECTION__KEY")
        yield text_entry(root, words, environ[name], Source("env", name), subject)


# -- checking and building --------------------------------------------------------------------

Rules = Mapping[type, Mapping[str, Rule]]


def check_entry(root: type, rules: Rules, entry: Entry) -> tuple[Path_, Any]:
    names, annotation, owner = find(root, entry.words)
    setting = Setting(names, owner, annotation)
    rule = rules.get(owner, {}).get(names[-1])
    try:
        return names, checked(setting, rule, entry.value, entry.textual)
    except _Wrong as wrong:
        raise ConfigError(f"{entry.subject}: {wrong}") from None


def build(
    base: Any, values: Mapping[Path_, Any], sources: Mapping[Path_, Entry], prefix: Path_ = ()
) -> Any:
    """``base`` (a settings dataclass) with ``values`` applied, built bottom-up."""
    updates: dict[str, Any] = {}
    for name, annotation in hints(type(base)).items():
        path = (*prefix, name)
        if is_table(annotation):
            if any(key[: len(path)] == path for key in values):
                updates[name] = build(getattr(base, name), values, sources, path)
        elif path in values:
            updates[name] = values[path]
    if not updates:
        return base
    try:
        return replace(base, **updates)
    except (ValueError, TypeError) as exc:
        raise ConfigError(_blame(base, updates, exc, prefix, sources)) from None


def _blame(
    base: Any,
    updates: Mapping[str, Any],
    exc: Exception,
    prefix: Path_,
    sources: Mapping[Path_, Entry],
) -> str:
    """The message for a section that cannot be built, at the one value that fails on its own
    if there is one, else naming every input that set a value of the section."""
    leaves = [(name, value) for name, value in updates.items() if (*prefix, name) in sources]
    culprits = []
    for name, value in leaves:
        try:
            replace(base, **{name: value})
        except (ValueError, TypeError):
            culprits.append(name)
    if len(culprits) == 1:
        return f"{sources[(*prefix, culprits[0])].subject}: {exc}"
    inputs = "; ".join(sources[(*prefix, name)].subject for name, _ in leaves)
    section = ".".join(prefix) or "settings"
    return f"[{section}]: {exc} (set by {inputs})" if inputs else f"[{section}]: {exc}"


def leaves(instance: Any, prefix: Path_ = ()) -> Iterator[tuple[Path_, Any, type, Any]]:
    """Every setting of a settings dataclass: (path, value, owner, annotation)."""
    for name, annotation in hints(type(instance)).items():
        value = getattr(instance, name)
        if is_table(annotation):
            yield from leaves(value, (*prefix, name))
        else:
            yield (*prefix, name), value, type(instance), annotation


def validate(instance: Any, rules: Rules) -> None:
    """Check every setting of an already built settings dataclass (made in Python)."""
    for path, value, owner, annotation in leaves(instance):
        setting = Setting(path, owner, annotation)
        try:
            checked(setting, rules.get(owner, {}).get(path[-1]), value, textual=False)
        except _Wrong as wrong:
            raise ConfigError(f"{setting.dotted} = {show(value)}: {wrong}") from None


# -- positions in a TOML file -----------------------------------------------------------------

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR = re.compile(r"[^,\]}\n\r#]*")


class _TomlScanner:
    """Finds where each key and value of a valid TOML text starts (tomllib does not say)."""

    def __init__(self, text: str) -> None:
        self.t = text
        self.i = 0
        self.found: dict[Path_, tuple[int, int]] = {}

    def scan(self) -> dict[Path_, tuple[int, int]]:
        t = self.t
        table: Path_ = ()
        while True:
            self._space(newlines=True)
            if self.i >= len(t):
                return self.found
            start = self.i
            if t[self.i] == "[":
                double = t.startswith("[[", self.i)
                self.i += 2 if double else 1
                table = self._key()
                self._space()
                self.i += 2 if double else 1
                self.found.setdefault(table, (start, start))
                continue
            path = table + self._key()
            self._space()
            self._expect("=")
            self._space()
            self.found[path] = (start, self.i)
            self._value(path)

    def _expect(self, char: str) -> None:
        if self.t[self.i] != char:
            raise ValueError(f"expected {char!r} at {self.i}")
        self.i += 1

    def _space(self, newlines: bool = False) -> None:
        t = self.t
        while self.i < len(t):
            c = t[self.i]
            if c in " \t" or (newlines and c in "\r\n"):
                self.i += 1
            elif c == "#" and newlines:
                end = t.find("\n", self.i)
                self.i = len(t) if end < 0 else end
            else:
                return

    def _key(self) -> Path_:
        words: list[str] = []
        while True:
            self._space()
            if self.t[self.i] in "\"'":
                end = self._string_end(self.i)
                words.append(str(tomllib.loads("k = " + self.t[self.i : end])["k"]))
                self.i = end
            else:
                match = _BARE_KEY.match(self.t, self.i)
                if match is None:
                    raise ValueError(f"no key at {self.i}")
                words.append(match.group())
                self.i = match.end()
            self._space()
            if self.t[self.i : self.i + 1] != ".":
                return tuple(words)
            self.i += 1

    def _string_end(self, i: int) -> int:
        t = self.t
        for quotes in ('"""', "'''"):
            if t.startswith(quotes, i):
                j = i + 3
                while True:
                    k = t.index(quotes, j)
                    backslashes = len(t[j:k]) - len(t[j:k].rstrip("\\"))
                    if quotes == '"""' and backslashes % 2:
                        j = k + 1
                        continue
                    end = k + 3
                    while end < len(t) and t[end] == quotes[0] and end - k < 5:
                        end += 1
                    return end
        quote, j = t[i], i + 1
        while t[j] != quote:
            j += 2 if (t[j] == "\\" and quote == '"') else 1
        return j + 1

    def _value(self, path: Path_) -> None:
        t = self.t
        c = t[self.i]
        if c in "\"'":
            self.i = self._string_end(self.i)
        elif c == "[":
            self.i += 1
            while True:
                self._space(newlines=True)
                if t[self.i] == "]":
                    self.i += 1
                    return
                self._value(())
                self._space(newlines=True)
                if t[self.i] == ",":
                    self.i += 1
        elif c == "{":
            self.i += 1
            while True:
                self._space()
                if t[self.i] == "}":
                    self.i += 1
                    return
                start = self.i
                inner = path + self._key()
                self._space()
                self._expect("=")
                self._space()
                if path:
                    self.found[inner] = (start, self.i)
                self._value(inner if path else ())
                self._space()
                if t[self.i] == ",":
                    self.i += 1
        else:
            match = _SCALAR.match(t, self.i)
            self.i = match.end() if match else self.i + 1


def toml_positions(text: str) -> dict[Path_, tuple[tuple[int, int], tuple[int, int]]]:
    """(line, column) of each key and of its value, 1-based, by path as written; empty if
    the text cannot be scanned (positions are a help for messages, never a requirement)."""
    try:
        offsets = _TomlScanner(text).scan()
    except (ValueError, IndexError, tomllib.TOMLDecodeError):
        return {}
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_col(offset: int) -> tuple[int, int]:
        line = bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1

    return {path: (line_col(k), line_col(v)) for path, (k, v) in offsets.items()}
