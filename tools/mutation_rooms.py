"""Mutation testing of the policy rooms with mutmut: every small change the tool makes to a
room's code must fail one of that room's tests, or be written down here as equivalent.

``tools/mutations.py`` breaks a few central promises of the wiring by hand; this script lets
mutmut (pinned in the ``mutation`` extra) break the pure policy code everywhere it can:
operators, comparisons, constants, arguments, return values. Each room is mutated alone and
tested with its own tests only (``tests/origins`` for ``origins/``...), so a run stays short
and its score says which tests hold the room's promises.

A room runs in a scratch directory, ``.mutation/<room>/`` at the repository root (ignored by
git): a copy of ``src`` and ``tests``, the ``pyproject.toml`` with a ``[tool.mutmut]`` section
for the room, and mutmut's own ``mutants/`` copy inside it. The working tree is never
written. Each run starts from a fresh copy (mutmut does not refresh a stale one), so a score is
always of the code as it is.

The score is killed / (mutants - equivalents): a mutant counts as killed when a test failed,
timed out or crashed; as not killed when every test passed ("survived") or no test of the room
ran its code ("no tests"). Survivors judged equivalent (no test can tell them from the original,
because the behaviour is the same) are listed in ``EQUIVALENT`` with their reason and the line
the mutant writes: if mutmut's mutant of that name no longer writes that line (the code moved),
the run says so and counts the mutant like any other.

Run it with the interpreter that runs the tests::

    pip install -e '.[test,mutation]'
    python3 tools/mutation_rooms.py                     # every room (origins about 20 minutes,
                                                        # politeness 10, on 2 shared cores)
    python3 tools/mutation_rooms.py origins politeness  # some rooms
    python3 tools/mutation_rooms.py --changed origin/main   # modules changed since the merge
                                                        # base with that ref, in their rooms
    python3 tools/mutation_rooms.py --survivors origins # after new tests: only the last run's
                                                        # survivors, against today's tests
    python3 tools/mutation_rooms.py --report origins    # the last run's scores again
    python3 tools/mutation_rooms.py --list              # the rooms, their modules and tests

The survivors' diffs are written to ``.mutation/<room>/survivors.txt``; ``cd .mutation/<room>``
then ``mutmut show NAME`` or ``mutmut browse`` looks at them. Exit status: 0 when every room
run reached its threshold, 1 when one did not, 2 on an error.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / ".mutation"


@dataclass(frozen=True)
class Room:
    name: str
    mutate: tuple[str, ...]
    """Globs of the modules to mutate, relative to the repository root."""
    skip: tuple[str, ...]
    """Globs of modules under ``mutate`` left out: I/O edges, not policy (each says why below)."""
    tests: tuple[str, ...]
    """The room's tests: paths or node ids, relative to the repository root."""
    threshold: float
    """The least score (killed / (mutants - equivalents)) the room must reach."""
    narrow: tuple[str, ...] = ()
    """pytest arguments that leave out the room's slow end-to-end tests (a crawl of the
    simulated web, a PostgreSQL cluster): each mutant would pay for their setup, and the
    room's unit tests are the ones that must hold its promises."""


ROOMS: tuple[Room, ...] = (
    Room(
        "origins",
        ("src/courtier/origins/*.py",),
        # probe.py opens sockets (the HTTP/TLS probe), store.py is the SQLite table: I/O
        # edges, tested end to end, not the clustering policy.
        ("src/courtier/origins/probe.py", "src/courtier/origins/store.py"),
        ("tests/origins",),
        0.90,
        (
            "--ignore=tests/origins/test_origin_cli.py",
            "--ignore=tests/origins/test_origin_simweb.py",
        ),
    ),
    Room(
        "politeness",
        ("src/courtier/politeness/*.py", "src/courtier/politeness/limiter/*.py"),
        # The SQLite and PostgreSQL limiters are storage: the same GCRA rules as memory.py
        # (which is mutated) run in SQL there.
        (
            "src/courtier/politeness/limiter/sqlite.py",
            "src/courtier/politeness/limiter/postgres.py",
        ),
        ("tests/politeness",),
        0.90,
        ("-k", "not postgres and not sqlite", "--ignore=tests/politeness/test_robots_cli.py"),
    ),
    Room("url", ("src/courtier/url/*.py",), (), ("tests/url",), 0.80),
)

_NEVER_READ = "CacheObservations.silent_seen is a counter nothing reads (no caller, no report)"
_TRUTHY = (
    "verdicts_seen is only read as 'any verdict yet' (behaviour): 0 before the first verdict "
    "and non-zero after it under the mutant too"
)
_ONE_PER_ITEM = "the zip's lists have one entry per item by construction: strict never fires"
_AFTER_LOWER = "rstrip of 'X' and '.' after lower(): no 'X' is left to strip, so only '.' is"

_FAST = (
    "a stricter hot-path test (a float in range) only sends more values to the full checks "
    "after it, which accept every float the hot path accepts: the same verdicts"
)
_FAST_PARAMS = _FAST + " (_check_seconds of each field)"
_FAST_RATE = _FAST + " (the checked path returns the same cls(1.0 / rate, ...))"
_FAST_COST = _FAST + " (the isinstance/range test of the cost)"
_FAST_LEAD = _FAST + " (_check_seconds with allow_inf)"
_INF_LEAD = (
    "allow_inf only matters for an infinite max_lead, which is a float and always passes the "
    "hot path before it: the flag is never read with an infinity"
)
_TWO_KEYS = (
    "in the branch for other than two keys, 'count == 2' is never true and 'count == 1' is "
    "what the set comparison gives for one key anyway: the same verdict"
)

EQUIVALENT: dict[str, tuple[str, str]] = {
    # mutant name: (a line the mutant writes, stripped; why no test can tell it from the code)
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_2": (
        "self.silent_seen = 1",
        _NEVER_READ,
    ),
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_3": (
        "self.silent_seen -= 1",
        _NEVER_READ,
    ),
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_4": (
        "self.silent_seen += 2",
        _NEVER_READ,
    ),
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_8": (
        "self.verdicts_seen = 1",
        _TRUTHY,
    ),
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_9": (
        "self.verdicts_seen -= 1",
        _TRUTHY,
    ),
    "courtier.origins.media.xǁCacheObservationsǁrecord__mutmut_10": (
        "self.verdicts_seen += 2",
        _TRUTHY,
    ),
    "courtier.origins.infer.xǁOriginInferenceǁ_lookup__mutmut_43": (
        "self._left_out.discard(None)",
        "_left_out is read only by add(), which skips a host with facts before it looks "
        "there; a host this loop reaches has facts from then on",
    ),
    "courtier.origins.infer.xǁOriginInferenceǁ_finish__mutmut_4": (
        "if len(facts) <= CLUSTER_IN_THREAD:",
        "exactly CLUSTER_IN_THREAD sites clustered in line instead of on a thread: the same "
        "function on the same facts under the same lock, the same assignments",
    ),
    "courtier.origins.infer.xǁOriginInferenceǁ_probe_indeterminate__mutmut_20": (
        "for facts, headers in zip(todo, results, strict=None):",
        _ONE_PER_ITEM + " (map_bounded: one result per item)",
    ),
    "courtier.origins.infer.xǁOriginInferenceǁ_probe_indeterminate__mutmut_23": (
        "for facts, headers in zip(todo, results, ):",
        _ONE_PER_ITEM + " (map_bounded: one result per item)",
    ),
    "courtier.origins.infer.xǁOriginInferenceǁ_probe_indeterminate__mutmut_24": (
        "for facts, headers in zip(todo, results, strict=False):",
        _ONE_PER_ITEM + " (map_bounded: one result per item)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁlookup__mutmut_81": (
        "ptr = {a: names for a, (names, _) in zip(unique, ptr_results, strict=None) if names}",
        _ONE_PER_ITEM + " (_ptr_of: one entry per address asked)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁlookup__mutmut_84": (
        "ptr = {a: names for a, (names, _) in zip(unique, ptr_results, ) if names}",
        _ONE_PER_ITEM + " (_ptr_of: one entry per address asked)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁlookup__mutmut_85": (
        "ptr = {a: names for a, (names, _) in zip(unique, ptr_results, strict=False) if names}",
        _ONE_PER_ITEM + " (_ptr_of: one entry per address asked)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁ_ptr_of__mutmut_16": (
        "for address, (name, _), outcome in zip(asked, questions, outcomes, strict=None):",
        _ONE_PER_ITEM + " (DnsClient.ask: one outcome per question)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁ_ptr_of__mutmut_20": (
        "for address, (name, _), outcome in zip(asked, questions, outcomes, ):",
        _ONE_PER_ITEM + " (DnsClient.ask: one outcome per question)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁ_ptr_of__mutmut_21": (
        "for address, (name, _), outcome in zip(asked, questions, outcomes, strict=False):",
        _ONE_PER_ITEM + " (DnsClient.ask: one outcome per question)",
    ),
    "courtier.origins.dns_evidence.xǁDnsEvidenceSourceǁ_ptr_of__mutmut_11": (
        "outcomes = await self._ask(questions) if (questions) or True else []",
        "asking no questions: _ask finds all of none in the cache and returns [] itself",
    ),
    "courtier.origins.tls_evidence.xǁTlsFactsǁcovers__mutmut_5": (
        'host = host.lower().rstrip("XX.XX")',
        _AFTER_LOWER,
    ),
    "courtier.origins.tls_evidence.x_tls_facts__mutmut_24": (
        'san.append(str(entry[1]).lower().rstrip("XX.XX"))',
        _AFTER_LOWER,
    ),
    "courtier.origins.tls_evidence.x_tls_facts__mutmut_3": (
        'san_entries = peercert.get("subjectAltName", None)',
        "a missing subjectAltName as None instead of (): the isinstance check right after "
        "takes both to no names",
    ),
    "courtier.origins.tls_evidence.x_tls_facts__mutmut_5": (
        'san_entries = peercert.get("subjectAltName", )',
        "a missing subjectAltName as None instead of (): the isinstance check right after "
        "takes both to no names",
    ),
    "courtier.politeness.gcra.x__check_seconds__mutmut_3": (
        "if type(None) is float and 0.0 <= value < _INF:",
        _FAST,
    ),
    "courtier.politeness.gcra.x__check_seconds__mutmut_5": (
        "if type(value) is float and 1.0 <= value < _INF:",
        _FAST,
    ),
    "courtier.politeness.gcra.x__check_seconds__mutmut_6": (
        "if type(value) is float and 0.0 < value < _INF:",
        _FAST,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_7": (
        "type(None) is float",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_9": (
        "and type(None) is float",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_11": (
        "and type(None) is float",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_13": (
        "and 1.0 <= interval < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_14": (
        "and 0.0 < interval < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_16": (
        "and 1.0 <= burst < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_17": (
        "and 0.0 < burst < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_19": (
        "and 1.0 <= width < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁ__post_init____mutmut_20": (
        "and 0.0 < width < _INF",
        _FAST_PARAMS,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁfrom_rate__mutmut_4": (
        "if type(None) is float and rate > 0.0:",
        _FAST_RATE,
    ),
    "courtier.politeness.gcra.xǁKeyParamsǁfrom_rate__mutmut_7": (
        "if type(rate) is float and rate > 1.0:",
        _FAST_RATE,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_23": (
        "if not (type(None) is float and 0.0 < cost < _INF) and (",
        _FAST_COST,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_25": (
        "if not (type(cost) is float and 1.0 < cost < _INF) and (",
        _FAST_COST,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_38": (
        "if not (type(None) is float and 0.0 <= max_lead <= _INF):",
        _FAST_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_40": (
        "if not (type(max_lead) is float and 1.0 <= max_lead <= _INF):",
        _FAST_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_41": (
        "if not (type(max_lead) is float and 0.0 < max_lead <= _INF):",
        _FAST_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_42": (
        "if not (type(max_lead) is float and 0.0 <= max_lead < _INF):",
        _FAST_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_45": (
        '_check_seconds("max_lead", max_lead, allow_inf=None)',
        _INF_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_48": (
        '_check_seconds("max_lead", max_lead, )',
        _INF_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_51": (
        '_check_seconds("max_lead", max_lead, allow_inf=False)',
        _INF_LEAD,
    ),
    "courtier.politeness.gcra.x_check_request__mutmut_15": (
        "distinct = count == 2 or len({limit.key for limit in limits}) == count",
        _TWO_KEYS,
    ),
}


def room_named(name: str) -> Room:
    for room in ROOMS:
        if room.name == name:
            return room
    raise SystemExit(f"no room {name!r}; rooms: {', '.join(r.name for r in ROOMS)}")


def modules_of(room: Room) -> list[str]:
    """The room's modules to mutate, relative to the root, sorted."""
    found: set[str] = set()
    for pattern in room.mutate:
        for path in ROOT.glob(pattern):
            rel = path.relative_to(ROOT).as_posix()
            if path.name != "__init__.py" and not any(fnmatch.fnmatch(rel, s) for s in room.skip):
                found.add(rel)
    return sorted(found)


def changed_modules(ref: str) -> set[str] | None:
    """The Python files changed between the merge base with ``ref`` and the working tree;
    None when git cannot tell (no such ref: a shallow clone, a first commit)."""

    def git(*args: str) -> str | None:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else None

    base = git("merge-base", "HEAD", ref)
    out = None if base is None else git("diff", "--name-only", base.strip(), "--", "src")
    if out is None:
        return None
    return {line for line in out.splitlines() if line.endswith(".py")}


def mutmut_command() -> str:
    beside = Path(sys.executable).parent / "mutmut"
    found = str(beside) if beside.exists() else shutil.which("mutmut")
    if found is None:
        raise SystemExit("mutmut is not installed: pip install -e '.[mutation]'")
    return found


def prepare(room: Room, modules: Sequence[str]) -> Path:
    """A fresh scratch directory for the room: src, tests and a pyproject.toml for mutmut."""
    work = SCRATCH / room.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(ROOT / "src", work / "src", ignore=ignore)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=ignore)
    config = {
        "source_paths": ["src"],
        "only_mutate": list(modules),
        # One process per mutant run (mutmut forks its workers); the room's tests only. A
        # mutant that loops forever fails its test after 10 s (pytest-timeout) instead of
        # holding a worker for mutmut's own CPU limit (15 times its tests' time, doubled).
        "pytest_add_cli_args": ["-n", "0", "-p", "no:cacheprovider", "--timeout=10"],
        "pytest_add_cli_args_test_selection": [*room.tests, *room.narrow],
    }
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    text += "\n[tool.mutmut]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in config.items())
    tomllib.loads(text)  # a config mutmut cannot read is an error here, not a silent default
    (work / "pyproject.toml").write_text(text, "utf-8")
    return work


KILLED = {"killed", "timeout", "segfault", "caught by type check"}
NOT_KILLED = {"survived", "no tests", "suspicious"}


def status_of(exit_code: int | None) -> str:
    from mutmut.stats import status_by_exit_code

    return str(status_by_exit_code[exit_code])


@dataclass
class Outcome:
    room: Room
    seconds: float
    by_module: dict[str, Counter[str]]
    survivors: list[str]
    equivalent: list[str]
    stale: list[str]

    @property
    def counts(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for counts in self.by_module.values():
            total.update(counts)
        return total

    @staticmethod
    def score(counts: Counter[str]) -> float | None:
        killed = sum(counts[s] for s in KILLED)
        judged = killed + sum(counts[s] for s in NOT_KILLED)
        return killed / judged if judged else None


_DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant
diffs = {}
for name in json.load(sys.stdin):
    diffs[name] = get_diff_for_mutant(name, path=find_mutant(name).path)
print(json.dumps(diffs))
"""


def diffs_of(work: Path, names: Sequence[str]) -> dict[str, str]:
    """What each mutant changes, as mutmut shows it (one process for all of them)."""
    if not names:
        return {}
    shown = subprocess.run(
        [sys.executable, "-c", _DIFFS],
        cwd=work,
        input=json.dumps(list(names)),
        capture_output=True,
        text=True,
        check=True,
    )
    diffs: dict[str, str] = json.loads(shown.stdout.splitlines()[-1])
    return diffs


def written_lines(diff: str) -> list[str]:
    return [line[1:].strip() for line in diff.splitlines() if line.startswith("+")][1:]


def not_killed(work: Path, modules: Sequence[str]) -> list[str]:
    """The mutants of the last run in ``work`` that no test killed."""
    names = []
    for module in modules:
        meta = json.loads((work / "mutants" / f"{module}.meta").read_text("utf-8"))
        names += [n for n, c in meta["exit_code_by_key"].items() if status_of(c) in NOT_KILLED]
    return sorted(names)


def refresh_tests(room: Room, modules: Sequence[str]) -> tuple[Path, list[str]]:
    """The last run's scratch directory with today's tests, and its mutants to run again.
    The code must be the code that run mutated: new tests can kill a survivor, never bring a
    killed mutant back, so only survivors need running again."""
    work = SCRATCH / room.name
    if not (work / "mutants").is_dir():
        raise RuntimeError(f"no earlier run of {room.name} to go on from: run it in full")
    for module in modules:
        if (work / module).read_bytes() != (ROOT / module).read_bytes():
            raise RuntimeError(f"{module} changed since the last full run: run it in full")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for target in (work / "tests", work / "mutants" / "tests"):
        shutil.rmtree(target)
        shutil.copytree(ROOT / "tests", target, ignore=ignore)
    # The rest of src as it is now (the tests may need it); the room's mutated modules and
    # mutmut's records beside them stay as the full run left them.
    for path in (ROOT / "src").rglob("*"):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_file() and "__pycache__" not in rel and rel not in modules:
            for target in (work / rel, work / "mutants" / rel):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
    return work, not_killed(work, modules)


def run_room(room: Room, modules: Sequence[str], workers: int, again: bool) -> Outcome:
    names: list[str] = []
    if again:
        work, names = refresh_tests(room, modules)
    else:
        work = prepare(room, modules)
    what = f"{len(names)} surviving mutants of" if again else "mutating"
    print(f"== {room.name}: {what} {len(modules)} modules", flush=True)
    start = time.monotonic()
    log = work / "mutmut.log"
    with log.open("w") as out:
        done = subprocess.run(
            [mutmut_command(), "run", "--max-children", str(workers), *names],
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    seconds = time.monotonic() - start
    if done.returncode != 0:
        tail = log.read_text("utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"mutmut run failed in {work} (exit {done.returncode}):\n{tail}")
    return results(room, modules, seconds)


def results(room: Room, modules: Sequence[str], seconds: float) -> Outcome:
    """The outcome of the last run of ``room`` (in its scratch directory)."""
    work = SCRATCH / room.name
    if not (work / "mutants").is_dir():
        raise RuntimeError(f"no run of {room.name} to report")
    codes: dict[str, dict[str, int | None]] = {}
    for module in modules:
        meta = json.loads((work / "mutants" / f"{module}.meta").read_text("utf-8"))
        codes[module] = dict(sorted(meta["exit_code_by_key"].items()))
    diffs = diffs_of(
        work,
        [n for per in codes.values() for n, c in per.items() if status_of(c) in NOT_KILLED],
    )
    by_module: dict[str, Counter[str]] = {}
    survivors: list[str] = []
    equivalent: list[str] = []
    stale: list[str] = []
    report: list[str] = []
    for module, per_module in codes.items():
        counts: Counter[str] = Counter()
        for name, code in per_module.items():
            status = status_of(code)
            if status in NOT_KILLED:
                diff = diffs[name]
                judged = EQUIVALENT.get(name)
                if judged is not None and judged[0] in written_lines(diff):
                    equivalent.append(name)
                    status = "equivalent"
                else:
                    if judged is not None:
                        stale.append(name)
                    survivors.append(name)
                    report.append(f"# {name}: {status}\n{diff}\n")
            counts[status] += 1
        by_module[module] = counts
    (work / "survivors.txt").write_text("\n".join(report), "utf-8")
    return Outcome(room, seconds, by_module, survivors, equivalent, stale)


def show(outcome: Outcome) -> bool:
    def line(label: str, counts: Counter[str]) -> str:
        score = Outcome.score(counts)
        shown = "  n/a" if score is None else f"{score:6.1%}"
        rest = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        return f"  {shown}  {label}  ({rest})"

    for module, counts in outcome.by_module.items():
        print(line(module, counts))
    score = Outcome.score(outcome.counts)
    ok = score is None or score >= outcome.room.threshold
    print(line(f"ROOM {outcome.room.name}", outcome.counts))
    print(
        f"  {'PASS' if ok else 'FAIL'}: threshold {outcome.room.threshold:.0%}, "
        f"{outcome.seconds / 60:.1f} minutes run, {len(outcome.survivors)} survivors "
        f"({SCRATCH.name}/{outcome.room.name}/survivors.txt), "
        f"{len(outcome.equivalent)} judged equivalent"
    )
    for name in outcome.stale:
        print(f"  STALE equivalent entry (mutant now writes another line): {name}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rooms", nargs="*", help="rooms to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the rooms and exit")
    parser.add_argument("--workers", type=int, default=2, help="mutmut's --max-children")
    parser.add_argument(
        "--changed",
        metavar="REF",
        help="only modules changed since the merge base with REF (e.g. origin/main)",
    )
    parser.add_argument(
        "--survivors",
        action="store_true",
        help="after new tests: run again only the last run's survivors (the code unchanged)",
    )
    parser.add_argument(
        "--report", action="store_true", help="only report the last run's results, run nothing"
    )
    args = parser.parse_args(argv)
    rooms = [room_named(n) for n in args.rooms] if args.rooms else list(ROOMS)
    if args.list:
        for room in rooms:
            tests = " ".join((*room.tests, *room.narrow))
            print(f"{room.name} (>= {room.threshold:.0%}), tests: {tests}")
            for module in modules_of(room):
                print(f"    {module}")
        return 0
    changed = changed_modules(args.changed) if args.changed else None
    if args.changed and changed is None:
        print(f"git cannot tell what changed since {args.changed}: no room run")
        return 0
    ok = True
    try:
        for room in rooms:
            modules = modules_of(room)
            if changed is not None:
                modules = [m for m in modules if m in changed]
                if not modules:
                    print(f"== {room.name}: no module changed since {args.changed}")
                    continue
            if args.report:
                outcome = results(room, modules, 0.0)
            else:
                outcome = run_room(room, modules, args.workers, args.survivors)
            ok = show(outcome) and ok
    except RuntimeError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
