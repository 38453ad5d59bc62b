"""The shape of the code, checked like behaviour: layers, cycles, edges, module sizes.

The layer contracts themselves are import-linter's (``[tool.importlinter]`` in
pyproject.toml, run by ``make lint``); this module checks what import-linter does not:
that no module imports itself back through others (function-level imports included,
since a cycle hidden in a function is still a cycle), that DAG files and Spark entry
points touch only the package's edges (:mod:`cdcgen.airflow`, :mod:`cdcgen.jobs`), and
that modules stay small.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

from cdcgen_dev.paths import REPO_ROOT

PRODUCT = REPO_ROOT / "plugins" / "cdcgen"


def strongly_connected(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """Tarjan's algorithm: every set of modules that import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0

    def visit(node: str) -> Iterator[list[str]]:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                yield from visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                yield sorted(component)

    for node in sorted(graph):
        if node not in index:
            yield from visit(node)


def test_strongly_connected_finds_a_cycle_and_nothing_else() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert list(strongly_connected(graph)) == [["a", "b", "c"]]
    assert list(strongly_connected({"a": {"b"}, "b": set()})) == []


def test_no_import_cycles_in_the_product() -> None:
    imports = grimp.build_graph("cdcgen")
    graph = {m: set(imports.find_modules_directly_imported_by(m)) for m in imports.modules}
    cycles = list(strongly_connected(graph))
    assert cycles == [], f"modules importing each other: {cycles}"


def _project_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] in ("cdcgen", "cdcgen_dev")}


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "dags").glob("*.py")), ids=lambda p: p.name)
def test_dag_files_touch_only_the_airflow_edge(path: Path) -> None:
    outside = {m for m in _project_imports(path) if not m.startswith("cdcgen.airflow")}
    assert outside == set(), f"{path.name} imports {sorted(outside)}"


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "spark").glob("*.py")), ids=lambda p: p.name)
def test_spark_entry_points_touch_only_the_jobs(path: Path) -> None:
    outside = {m for m in _project_imports(path) if not m.startswith("cdcgen.jobs")}
    assert outside == set(), f"{path.name} imports {sorted(outside)}"
