"""Shared by the crawl benchmarks: run one crawler against a fresh simulated web and measure it.

Each run starts its own simulated web (`SimWebProcess`, its own process and request log), runs
the crawler as a child process of this one, waits for it with `os.wait4` (its CPU time: user +
system of the crawler process and of its children it waited for, e.g. Courtier's parse
workers; never the simulated web's), stops the simulated web and audits its log. While the
crawler runs, a sampler reads the crawler's process tree with psutil every 0.25 s, for the CPU
spent in the run's second half (the same half the audit's second-half utilisation covers) and
the share of the main process.

Each run also reads the host's speed before and after it (`host_reading`): the same fixed
piece of work, timed in this process while nothing else of the run is running. The cores of
this machine slow down and speed up for minutes at a time (a crawl's utilisation moved by a
fifth between runs of one tree): a run read at a slow host is compared with others read alike.

The ceiling's run starts when the crawler process is launched (`audit(run_start=…)`), so its
start-up (imports, origin inference, robots.txt before the first page) is charged: every seed
origin has work from then on. Requests/s are over the server-side span (first request to last).
Utilisation is given per kind of site too (standalone, cname-tenant, header-tenant, edge-site,
edge-tenant: `Ceiling.kinds`), so a crawler that keeps one kind of origin busy and starves
another shows it. `--size web` is the real web's mix and shapes (`SIZE_PRESETS["web"]`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import re
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from selectolax.lexbor import LexborHTMLParser

from courtier.simweb.audit import AuditReport, OriginFigures, audit_records
from courtier.simweb.latency import REAL_WEB
from courtier.simweb.log import read_log
from courtier.simweb.process import SERVER_NICE, SimWebProcess
from courtier.simweb.world import SIZE_PRESETS, WorldParams, params_for_total

BENCH = Path(__file__).resolve().parent
GRACE = 120.0  # seconds past --duration before a crawler is killed
SAMPLE = 0.25


def world_params(
    size: str = "demo",
    sites: int | None = None,
    page_bytes: int | None = None,
    seed: int = 1,
    latency: str = "loopback",
) -> WorldParams:
    """The world `courtier demo --size SIZE [--sites N] [--page-bytes B] --seed S` crawls;
    with `latency="real"`, its sites answer after the real web's latencies (`REAL_WEB`)."""
    params = dataclasses.replace(SIZE_PRESETS[size], seed=seed)
    if latency == "real":
        params = dataclasses.replace(params, **REAL_WEB)
    elif latency != "loopback":
        raise ValueError(f"latency: 'real' or 'loopback', not {latency!r}")
    if sites is not None:
        params = params_for_total(params, sites)
    if page_bytes is not None:
        params = dataclasses.replace(params, page_bytes=page_bytes)
    return params


_READING_PAGE: bytes = "".join(
    f'<div class="card"><a href="/item/{i}?ref=grid">Item {i}</a><p>Spade {i} with an ash '
    f"handle, kept dry, {i % 60} minutes ago, 2026-11-{i % 28 + 1:02d}.</p></div>\n"
    for i in range(60)
).encode()
_READING_WORD = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\w+ing\b")


def host_reading(seconds: float = 0.3) -> float:
    """Microseconds of CPU one round of a fixed mix takes here now (lexbor's parse of a 7 KB
    page, its text, a regular expression over it, zlib, pickle): the best of three rounds of
    ``seconds`` each. No Courtier code runs in it, so a change to Courtier never moves it."""
    best = float("inf")
    for _ in range(3):
        rounds, started = 0, time.process_time()
        while (spent := time.process_time() - started) < seconds:
            text = LexborHTMLParser(_READING_PAGE).text(separator=" ")
            _READING_WORD.findall(text)
            pickle.loads(pickle.dumps(zlib.compress(text.encode(), 1)))
            rounds += 1
        best = min(best, spent / rounds * 1e6)
    return best


class CpuSampler(threading.Thread):
    """(time.time(), CPU seconds of the whole tree, of the main process) every SAMPLE s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.process = psutil.Process(pid)
        self.samples: list[tuple[float, float, float]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(SAMPLE):
            try:
                with self.process.oneshot():
                    own = self.process.cpu_times()
                    main = own.user + own.system
                    tree = main + own.children_user + own.children_system
                    children = self.process.children(recursive=True)
                for child in children:
                    try:
                        times = child.cpu_times()
                        tree += times.user + times.system
                    except psutil.Error:
                        pass
            except psutil.Error:
                return
            self.samples.append((time.time(), tree, main))

    def at(self, when: float) -> float | None:
        """The tree's CPU seconds at `when` (linear between samples), None outside them."""
        before = [s for s in self.samples if s[0] <= when]
        after = [s for s in self.samples if s[0] >= when]
        if not before or not after:
            return None
        (t0, c0, _), (t1, c1, _) = before[-1], after[0]
        return c0 if t1 == t0 else c0 + (c1 - c0) * (when - t0) / (t1 - t0)


@dataclass
class RunResult:
    crawler: str
    world: str
    seed_sites: int
    duration: float  # the server-side run: first request's start to last one's end
    requests: int  # as the simulated web logged them
    cpu_s: float  # the crawler process and the children it waited for
    main_cpu_s: float | None  # the main process alone (last sample)
    second_half_cpu_s: float | None
    second_half_requests: int
    report: AuditReport
    stats: dict[str, Any] = field(default_factory=dict)  # the crawler's own summary
    wall: float = 0.0
    returncode: int = 0
    host_us: tuple[float, float] | None = None  # host_reading before and after the run

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.duration if self.duration else 0.0

    @property
    def cpu_per_1000(self) -> float:
        return 1000 * self.cpu_s / self.requests if self.requests else float("nan")

    @property
    def second_half_cpu_per_1000(self) -> float | None:
        if self.second_half_cpu_s is None or not self.second_half_requests:
            return None
        return 1000 * self.second_half_cpu_s / self.second_half_requests

    @property
    def rebook_rate(self) -> float | None:
        value = self.stats.get("rebook_rate")
        return None if value is None else float(value)

    @property
    def loop_lag_p99_ms(self) -> float | None:
        value = self.stats.get("loop_lag_p99_ms")
        return None if value is None else float(value)

    def as_dict(self) -> dict[str, Any]:
        c = self.report.ceiling
        return {
            "crawler": self.crawler,
            "world": self.world,
            "seed_sites": self.seed_sites,
            "duration_s": round(self.duration, 1),
            "requests": self.requests,
            "requests_per_s": round(self.requests_per_s, 1),
            "ceiling_units_per_s": round(c.rate, 1),
            "utilisation": round(c.utilisation, 3),
            "utilisation_second_half": round(c.second_half_utilisation, 3),
            "utilisation_uncapped": round(c.raw_utilisation, 3),
            "utilisation_by_kind": {k.kind: round(k.utilisation, 3) for k in c.kinds},
            "origins_with_work": c.origins_with_work,
            "first_request_s": _round(c.first_request),
            "late_start": len(c.late_start),
            "never_requested": len(c.never_requested),
            "cpu_s": round(self.cpu_s, 2),
            "main_cpu_s": None if self.main_cpu_s is None else round(self.main_cpu_s, 2),
            "cpu_s_per_1000": round(self.cpu_per_1000, 2),
            "cpu_s_per_1000_second_half": _round(self.second_half_cpu_per_1000),
            "rebook_rate": self.rebook_rate,
            "loop_lag_p99_ms": self.loop_lag_p99_ms,
            "violations": violations(self.report),
            "audit_ok": self.report.ok,
            "wall_s": round(self.wall, 1),
            "host_us": None if self.host_us is None else [round(u, 1) for u in self.host_us],
            "server_stalled_requests": self.report.stamp_uncertainty.requests,
            "server_stall_max_ms": round(1000 * self.report.stamp_uncertainty.longest),
        }


def kinds_text(d: dict[str, Any], sep: str = ",", colon: str = ":") -> str:
    """Utilisation per kind of site, as one short piece of text."""
    kinds = d["utilisation_by_kind"]
    return sep.join(f"{kind}{colon}{u:.3f}" for kind, u in kinds.items()) or "-"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def violations(report: AuditReport) -> dict[str, Any]:
    """What each failed criterion counts, in its own unit (sites, requests, origins …)."""
    floor = report.site_interval - report.tolerance
    failed = {c.name for c in report.criteria if not c.ok}
    out: dict[str, Any] = {}
    if "site-gap" in failed:
        gaps = [s.min_gap for s in report.sites if s.min_gap is not None and s.min_gap < floor]
        out["site-gap"] = f"{len(gaps)} sites (min {min(gaps):.2f}s)"
    counts = {
        "robots": sum(s.robots_violations for s in report.sites),
        "crawl-delay": sum(s.crawl_delay_violations for s in report.sites),
        "retry-after": sum(s.retry_after_violations for s in report.sites),
        "canary": report.canary_hits,
        "duplicates": report.duplicate_fetches,
    }
    for name, n in counts.items():
        if name in failed:
            out[name] = n
    if "outside-seed" in failed:
        out["outside-seed"] = sum(report.outside_seed.values())
    if "origin-budget" in failed:
        over = [o for o in report.origins if o.over_budget]
        worst = max(over, key=_overload)
        out["origin-budget"] = (
            f"{len(over)} origins (worst {worst.origin}: {worst.max_units_1s} units in 1 s, "
            f"{worst.max_units_5s} in 5 s; limits {worst.limit_1s:g}, {worst.limit_5s:g})"
        )
    for name in ("bucket-rate", "latency-feedback", "cdn-misses"):
        if name in failed:
            out[name] = report.criterion(name).detail.split(" (")[0]
    return out


def _overload(origin: OriginFigures) -> float:
    """The busiest window over its GCRA limit (budget × window + the largest cost)."""
    return max(origin.max_units_1s / origin.limit_1s, origin.max_units_5s / origin.limit_5s)


def _wait(process: subprocess.Popen[bytes]) -> tuple[int, float]:
    """Wait for the child with wait4: (exit code, CPU seconds of it and its waited children)."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_utime + usage.ru_stime


def run(
    crawler: str,
    label: str,
    params: WorldParams,
    workdir: Path,
    duration: float,
    *,
    settings: list[str] | None = None,
    scrapy_concurrency: int | None = None,
    courtier: list[str] | None = None,
    env: dict[str, str] | None = None,
    beside: Callable[[int], Callable[[], None]] | None = None,
    store: str | None = None,
    workers: int = 1,
) -> RunResult:
    """One run of `crawler` ("courtier" or "scrapy") against a fresh simulated web.

    `courtier`: how Courtier is started (default `python -m courtier`); `env`: the crawler
    process's environment (default this one's); `beside`: started with the crawler's PID
    once it runs, returning what stops it when the crawler has exited; `store`: Courtier's
    `--store` (default its SQLite file under the run's output); `workers`: its `--workers`
    (a PostgreSQL store)."""
    workdir.mkdir(parents=True, exist_ok=True)
    settings = settings or []
    site_interval, allow_media = 1.0, True
    if crawler == "courtier":
        from courtier.config import load

        config = load(None, settings)
        site_interval, allow_media = config.site_interval, config.media.fetch
    out = workdir / crawler
    before = host_reading()
    with SimWebProcess(workdir / "simweb", params, nice=SERVER_NICE) as web:
        if crawler == "courtier":
            command = [
                *(courtier or [sys.executable, "-m", "courtier"]),
                "crawl", "--seeds", str(web.seeds_path),
                "--dns", web.dns, "--allow-net", web.allow_net, "--out", str(out),
                "--duration", str(duration), "--json",
                *(arg for setting in settings for arg in ("-s", setting)),
                *(["--store", store] if store else []),
                *(["--workers", str(workers)] if workers > 1 else []),
            ]  # fmt: skip
        elif crawler == "scrapy":
            command = [
                sys.executable, str(BENCH / "_scrapy_crawl.py"), "--seeds", str(web.seeds_path),
                "--dns", web.dns, "--duration", str(duration),
                "--result", str(workdir / "scrapy-result.json"),
            ]  # fmt: skip
            if scrapy_concurrency:
                command += ["--concurrency", str(scrapy_concurrency)]
        else:
            raise ValueError(crawler)
        with (workdir / f"{crawler}-stderr.log").open("wb") as stderr:
            started, launched = time.perf_counter(), time.time()
            (workdir / "launched.json").write_text(json.dumps({"launched": launched}))
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, env=env)
            killer = threading.Timer(duration + GRACE, process.kill)
            killer.start()
            sampler = CpuSampler(process.pid)
            sampler.start()
            stop_beside = beside(process.pid) if beside is not None else None
            assert process.stdout is not None
            stdout = process.stdout.read()
            code, cpu = _wait(process)
            if stop_beside is not None:
                stop_beside()
            killer.cancel()
            sampler.stopped.set()
            sampler.join()
            wall = time.perf_counter() - started
    after = host_reading()
    records = list(read_log(web.log_path))
    report = audit_records(
        records,
        web.world,
        site_interval=site_interval,
        allow_media=allow_media,
        run_start=launched,
    )
    if crawler == "courtier":
        # The summary is the last JSON line (a wrapper such as py-spy may print after it).
        lines = [line for line in stdout.decode().splitlines() if line.startswith("{")]
        stats = json.loads(lines[-1]) if code == 0 and lines else {}
    else:
        result = workdir / "scrapy-result.json"
        stats = json.loads(result.read_text()) if result.exists() else {}
    # The second half as the audit counts it: requests starting after the run's midpoint.
    starts = sorted(r.start for r in records)
    first, duration_s = (starts[0], report.duration) if starts else (0.0, 0.0)
    mid, last = first + duration_s / 2, first + duration_s
    at_mid, at_end = sampler.at(mid), sampler.at(last)
    second_half = None if at_mid is None or at_end is None else at_end - at_mid
    return RunResult(
        crawler=crawler,
        world=label,
        seed_sites=len(web.world.seed_hosts),
        duration=report.duration,
        requests=report.requests,
        cpu_s=cpu,
        main_cpu_s=sampler.samples[-1][2] if sampler.samples else None,
        second_half_cpu_s=second_half,
        second_half_requests=sum(1 for s in starts if s >= mid),
        report=report,
        stats=stats,
        wall=wall,
        returncode=code,
        host_us=(before, after),
    )


def table(results: list[RunResult]) -> str:
    """The side-by-side table, as Markdown."""
    head = (
        "| crawler | world | requests/s | ceiling (units/s) | utilisation (2nd half; by kind) "
        "| CPU-s / 1,000 req (2nd half) | rebook rate | loop lag p99 | 1st request "
        "| late start | violations | host us (before / after) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for r in results:
        d = r.as_dict()
        rebook = "n/a" if r.rebook_rate is None else f"{r.rebook_rate:.2%}"
        lag = "-" if r.loop_lag_p99_ms is None else f"{r.loop_lag_p99_ms:.0f} ms"
        half = d["cpu_s_per_1000_second_half"]
        found = "; ".join(f"{k} {v}" for k, v in d["violations"].items()) or "none"
        rows.append(
            f"| {r.crawler} | {r.world} ({r.seed_sites} sites) | {d['requests_per_s']} "
            f"| {d['ceiling_units_per_s']} | {d['utilisation']:.2f} "
            f"({d['utilisation_second_half']:.2f}; {kinds_text(d, ', ', ' ')}) "
            f"| {d['cpu_s_per_1000']:.2f} ({'-' if half is None else f'{half:.2f}'}) "
            f"| {rebook} | {lag} | {d['first_request_s']} s "
            f"| {d['late_start']} of {d['origins_with_work']} | {found} "
            f"| {' / '.join(map(str, d['host_us'] or ['-']))} |"
        )
    return head + "\n".join(rows)
