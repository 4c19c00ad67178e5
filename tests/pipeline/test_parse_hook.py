"""The parse hook (``[parse] hook``): its fields in the page, every way it can fail counted as
its kind with the page kept, the pool alive after each, and a bad hook refused at start."""

from __future__ import annotations

import contextlib
import io
import itertools
import textwrap
from functools import partial
from pathlib import Path

import pytest

from courtier.cli import main
from courtier.config import ConfigError, load
from courtier.content.hook import HOOK_ERRORS, HookError, load_hook
from courtier.content.reading import ReadContext, read_page
from courtier.pipeline.workers.pool import ParsePool
from courtier.pipeline.workers.worker import warm_up_parse
from courtier.sinks.documents import document_files

HOOKS = textwrap.dedent(
    """
    import math
    import os
    import pathlib

    with (pathlib.Path(__file__).parent / "imported.txt").open("a") as log:
        log.write(f"{os.getpid()}\\n")  # each import of this module, by process

    def fine(page):
        return {"h1": page.tree.css_first("h1").text(), "url": page.url,
                "type": dict(page.headers).get("X-Kind"), "text": page.text}

    def raises(page):
        raise ValueError("no price on " + page.url)

    def endless(page):
        try:
            while True:
                pass
        except Exception:  # a hook's own handler does not stop the budget
            return {"caught": True}

    def not_a_dict(page):
        return ["a", "list"]

    def not_json(page):
        return {"when": object()}

    def not_a_number(page):
        return {"ratio": math.nan}

    def too_large(page):
        return {"blob": "x" * 2_000_000}
    """
)
_names = itertools.count()
PAGE = b"<title>T</title><h1>Heading</h1><p>Some words here.</p><a href='/next'>n</a>"
URL = "http://hook.test/page"


@pytest.fixture
def hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of a fresh module of hooks, importable here and in spawned workers."""
    name = f"courtier_test_hooks_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(HOOKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _context(spec: str, timeout: float = 0.5) -> ReadContext:
    return ReadContext("text/html", hook=spec, hook_timeout=timeout, headers=(("X-Kind", "page"),))


def test_the_hooks_fields_are_in_the_page(hooks: str) -> None:
    page = read_page(PAGE, URL, _context(f"{hooks}:fine"))
    fields = page.fields["hook"]
    assert (fields["h1"], fields["url"], fields["type"]) == ("Heading", URL, "page")
    assert "Some words here." in fields["text"]  # the body's text, when no text is extracted
    assert page.title == "T" and [link.fetch_url for link in page.links] == [
        "http://hook.test/next"
    ]


@pytest.mark.parametrize(
    ("function", "kind"),
    [
        ("raises", "hook-error"),
        ("endless", "hook-timeout"),
        ("not_a_dict", "hook-not-dict"),
        ("not_json", "hook-not-json"),
        ("not_a_number", "hook-not-json"),
        ("too_large", "hook-too-large"),
    ],
)
def test_every_failure_is_its_kind_and_the_page_is_kept(
    hooks: str, function: str, kind: str
) -> None:
    assert kind in HOOK_ERRORS
    page = read_page(PAGE, URL, _context(f"{hooks}:{function}", timeout=0.2))
    assert str(page.fields["hook_error"]).startswith(kind + ":")
    assert "hook" not in page.fields
    assert page.title == "T" and len(page.links) == 1


async def test_the_pool_survives_every_failure_and_imports_the_hook_once_per_worker(
    hooks: str, tmp_path: Path
) -> None:
    pool = ParsePool(1, timeout=10.0, warm_up=partial(warm_up_parse, f"{hooks}:fine"))
    imported = tmp_path / "imported.txt"
    try:
        for function in ("raises", "endless", "not_json", "fine"):
            page = await pool.run(read_page, PAGE, URL, _context(f"{hooks}:{function}", 0.2))
            assert ("hook" in page.fields) is (function == "fine")
            assert page.title == "T"
    finally:
        await pool.close()
    assert len(imported.read_text().splitlines()) == 1  # in the warm-up, once


def test_a_bad_spec_is_refused_with_the_other_settings() -> None:
    with pytest.raises(ConfigError, match="module:function"):
        load(None, ["parse.hook=no spaces allowed"])
    assert load(None, ["parse.hook=pkg.mod:obj.fn"]).parse.hook == "pkg.mod:obj.fn"
    with pytest.raises(HookError, match="cannot import"):
        load_hook("courtier_no_such_module_here:fn")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("courtier_no_such_module_here:fn", "cannot import courtier_no_such_module_here"),
        ("courtier.content.hook:no_such_function", "has no no_such_function"),
        ("courtier.content.hook:MAX_RESULT_CHARS", "is not callable"),
    ],
)
def test_a_hook_that_cannot_be_loaded_is_a_one_line_error_at_start(
    tmp_path: Path, spec: str, message: str
) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("hook.test\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(
            [
                "crawl",
                "--seeds",
                str(seeds),
                "--out",
                str(tmp_path / "out"),
                "-s",
                f"parse.hook={spec}",
            ]
        )
    assert code == 2
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert not document_files(tmp_path / "out")


def test_a_crawl_from_python_refuses_a_hook_that_cannot_be_loaded(tmp_path: Path) -> None:
    from courtier import CrawlConfig, Crawler, InputError

    config = CrawlConfig.from_mapping({"parse": {"hook": "courtier_no_such_module_here:fn"}})
    with pytest.raises(InputError, match="cannot import courtier_no_such_module_here"):
        Crawler(seeds=["http://hook.test/"], store=tmp_path / "frontier.sqlite3", config=config)
    assert not (tmp_path / "frontier.sqlite3").exists()
