"""The architecture as the code has it: layering contracts (import-linter, declared in
pyproject.toml), no import circle, and the engine's rooms kept small."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent
ROOMS = (ROOT / "src" / "courtier" / "pipeline", ROOT / "src" / "courtier" / "content")
MAX_MODULE_LINES = 400


def test_the_layering_contracts_hold(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Modules that import each other, directly or through others (Tarjan's components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for module in sorted(graph.modules):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_module_imports_itself_through_others() -> None:
    graph = grimp.build_graph(
        "courtier", include_external_packages=False, exclude_type_checking_imports=True
    )
    assert _circles(graph) == []


def test_a_circle_would_be_found() -> None:
    graph = grimp.ImportGraph()
    for module in ("a", "b", "c", "d"):
        graph.add_module(module)
    graph.add_import(importer="a", imported="b")
    graph.add_import(importer="b", imported="c")
    graph.add_import(importer="c", imported="a")
    graph.add_import(importer="c", imported="d")
    assert _circles(graph) == [["a", "b", "c"]]


def test_every_engine_module_fits_in_a_room() -> None:
    sizes = {
        str(path.relative_to(room.parent)): len(path.read_text(encoding="utf-8").splitlines())
        for room in ROOMS
        for path in room.rglob("*.py")
    }
    assert len(sizes) > 50
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}
