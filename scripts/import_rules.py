"""Import measures the architecture report checks: reach into other packages' private modules,
relative imports, and import cycles between modules.

A package's ``__init__`` is its public face; ``from polyaxon_prefect.runtime._one_process import x``
in another package ties the importer to a file layout that ``runtime`` is free to change.
Relative imports hide which package a name comes from when read out of context. A module
cycle means neither module can be understood, tested or imported alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

__all__ = ["module_cycles", "private_module_imports", "relative_imports"]


def _package_of(module: str) -> str:
    """``polyaxon_prefect.runtime._one_process`` -> ``runtime``; a top-level module is its own."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level or not node.module:
        return []
    # ``from pkg import _mod`` imports a module too when ``_mod`` is one; counted by the name
    return [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]


def private_module_imports(paths: Iterable[Path], root: Path, package: str) -> list[str]:
    """``file:line module`` for each import of another package's private module
    (a path segment after the package that starts with ``_``)."""
    places = []
    for path in paths:
        importer = _module_name(path, root)
        own = _package_of(importer)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for module in _imported_modules(node):
                parts = module.split(".")
                if parts[0] != package or len(parts) < 3 or parts[1] == own:
                    continue
                if any(part.startswith("_") for part in parts[2:]):
                    places.append(f"{path.relative_to(root)}:{node.lineno} {module}")
                    break
    return sorted(set(places))


def relative_imports(paths: Iterable[Path], root: Path) -> tuple[list[str], list[str]]:
    """Every relative import (``file:line``), and those that climb out of their own package
    (``from .. import``: a cross-package import written so that it does not look like one)."""
    every, escaping = [], []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                place = f"{path.relative_to(root)}:{node.lineno}"
                every.append(place)
                if node.level > 1:
                    escaping.append(place)
    return every, escaping


def module_cycles(package: str) -> list[list[str]]:
    """Groups of modules that import each other (strongly connected components of the module
    graph), function-level imports and imports under ``if TYPE_CHECKING:`` included: a circle
    that only annotations close still ties the modules together for a reader and for mypy."""
    import grimp

    graph = grimp.build_graph(package, exclude_type_checking_imports=False)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    return [sorted(group) for group in _strongly_connected(edges) if len(group) > 1]


def _strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph is deep enough to hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = edges.get(node, [])
            if position < len(targets):
                work.append((node, position + 1))
                target = targets[position]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                groups.append(group)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return groups
