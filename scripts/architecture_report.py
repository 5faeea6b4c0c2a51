"""Check the package's structural contracts, and print its sizes for the reviewer.

Contracts (with ``--strict`` the exit code is 1 when one is broken):

- kind switches (a run kind, a matrix kind or an op shape decided on, however it is spelled:
  see ``kind_switches.py``) outside ``specs``, the registries and the dispatcher;
- private names imported across packages; relative imports climbing out of their package;
- package and module import cycles, function-level imports included (type-only ones too, for
  modules);
- ARCHITECTURE.md's layer table against the import-linter ``layers`` contract;
- a module base name used by two modules (``_job.py`` in three packages read as one concept in a
  traceback or a review), but for the mirrors of Polyaxon's own import paths.

Information only (size is judged by cohesion at review, not by a number): the longest modules,
functions and classes, and the imports of other packages' private modules. import-linter and
mypy are not run here: ``make lint`` runs each of them once.

Usage::

    python scripts/architecture_report.py [--strict]
"""

from __future__ import annotations

import argparse
import ast
import functools
import sys
import typing
from pathlib import Path

from import_rules import module_cycles, private_module_imports, relative_imports
from kind_switches import kind_constants, kind_switches
from layer_table import layer_mismatches

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "polyaxon_prefect"
KUBERNETES_SPECS = PACKAGE / "specs" / "kubernetes"
GENERATED = {KUBERNETES_SPECS / name for name in ("_k8s.py", "_k8s_objects.py", "_k8s_values.py")}
SHOWN_SIZES = 5
"""How many of the longest modules, functions and classes the report prints."""

KIND_SWITCH_ALLOWED = {
    "specs/": "the models: a kind is defined, parsed and classified here",
    "search/_kinds/": "the matrix-kind registry (``KINDS``)",
    "runtime/_executors.py": "the executors registry, keyed by (run kind, backend)",
    "prefect/_dispatch.py": "the dispatcher: the one place that picks a runner by op shape",
    "distributed/": "each distributed kind's contract, by kind: env (``ENV``), ports, who decides",
    "kubernetes/": "the manifest builders, by kind: the Kubeflow resources (``KUBEFLOW``), the "
    "kinds the native backend builds (``NATIVE_KINDS``)",
    "legacy/": "converts the v0 format: the v1 kinds are the data it writes",
}
"""Where deciding by kind is the module's job, with the reason."""

KIND_SWITCH_PENDING: dict[str, str] = {}
"""Temporary: modules being rewritten elsewhere; each entry goes when that work lands."""

CYCLE_PENDING: dict[frozenset[str], str] = {}
"""Temporary: module cycles whose fix is in a module being rewritten elsewhere."""

SHARED_NAME_ALLOWED = {
    "_compat/": "the mirrors of Polyaxon's v0 and v1 import paths: their names are Polyaxon's",
}
"""Where a module's base name is not ours to choose, with the reason."""


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p not in GENERATED)


@functools.cache
def parsed(path: Path) -> ast.Module:
    """``path``'s syntax tree, parsed once for every check that reads it."""
    return ast.parse(path.read_text(encoding="utf-8"))


def longest(what: str) -> list[tuple[str, int]]:
    """The ``SHOWN_SIZES`` longest modules, functions or classes (``what``), with their lines."""
    rows = []
    for path in modules():
        name = path.relative_to(PACKAGE).as_posix()
        if what == "modules":
            rows.append((name, len(path.read_text(encoding="utf-8").splitlines())))
            continue
        kinds = (ast.ClassDef,) if what == "classes" else (ast.FunctionDef, ast.AsyncFunctionDef)
        for node in ast.walk(parsed(path)):
            if isinstance(node, kinds):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                rows.append((f"{name}:{node.lineno} {node.name}", length))
    return sorted(rows, key=lambda row: -row[1])[:SHOWN_SIZES]


def kinds_and_shapes() -> tuple[frozenset[str], frozenset[str]]:
    """Every run kind, matrix kind and op shape, and the names of the models that stand for
    a kind, read from the models (a kind added to ``specs`` is checked without an edit)."""
    sys.path.insert(0, str(ROOT))
    from polyaxon_prefect.specs import MATRIX_MODELS, OpKind
    from polyaxon_prefect.specs._run_kinds import RUN_MODELS

    matrices = MATRIX_MODELS
    kinds = {*RUN_MODELS, *typing.get_args(OpKind)}
    kinds |= {model.model_fields["kind"].default for model in matrices}
    shapes = {model.__name__ for model in (*RUN_MODELS.values(), *matrices)}
    return frozenset(kinds), frozenset(shapes)


def _listed(path: Path, table: dict[str, str]) -> bool:
    name = path.relative_to(PACKAGE).as_posix()
    return any(name == entry or (entry.endswith("/") and name.startswith(entry)) for entry in table)


def kind_switch_places() -> list[str]:
    """Kind switches outside the allowed and pending modules."""
    kinds, shapes = kinds_and_shapes()
    sources = {path: path.read_text(encoding="utf-8") for path in modules()}
    constants = kind_constants((parsed(path) for path in sources), kinds)
    places = []
    for path, text in sources.items():
        if _listed(path, KIND_SWITCH_ALLOWED) or _listed(path, KIND_SWITCH_PENDING):
            continue
        for switch in kind_switches(text, kinds, shapes, constants):
            places.append(f"{path.relative_to(ROOT)}:{switch.line} {switch.how}")
    return places


def private_imports() -> list[str]:
    """``from polyaxon_prefect.<other package>... import _name``: a private name used across a
    package boundary (make it public in its package instead)."""
    places = []
    for path in modules():
        parts = path.relative_to(PACKAGE).parts
        own = parts[0] if len(parts) > 1 else path.stem
        for node in ast.walk(parsed(path)):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            names = node.module.split(".")
            if names[0] != "polyaxon_prefect" or len(names) < 2 or names[1] == own:
                continue
            for alias in node.names:
                if alias.name.startswith("_"):
                    places.append(f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}")
    return places


def package_cycles() -> list[str]:
    """Pairs of subpackages (and top-level modules) that import each other, function-level
    imports included (import-linter's layers contract checks the declared order; this finds
    a cycle anywhere, declared or not)."""
    import grimp

    graph = grimp.build_graph("polyaxon_prefect")
    units = sorted({".".join(m.split(".")[:2]) for m in graph.modules if m.count(".") >= 1})
    cycles = []
    for i, a in enumerate(units):
        for b in units[i + 1 :]:
            if a.startswith(b + ".") or b.startswith(a + "."):
                continue
            ab = graph.find_shortest_chain(importer=a, imported=b, as_packages=True)
            ba = graph.find_shortest_chain(importer=b, imported=a, as_packages=True)
            if ab and ba:
                cycles.append(f"{a} <-> {b}")
    return cycles


def repeated_base_names(paths: typing.Iterable[Path], package: Path) -> list[str]:
    """Each module base name (``__init__`` aside) that two or more modules use, with their paths.

    A base name should say one thing: a traceback, a review comment or a search for ``_render``
    names a module by it, and with two modules under one name a reader takes one for the other.
    The modules under `SHARED_NAME_ALLOWED` are left out.
    """
    by_name: dict[str, list[str]] = {}
    for path in paths:
        where = path.relative_to(package).as_posix()
        if path.name == "__init__.py" or any(where.startswith(p) for p in SHARED_NAME_ALLOWED):
            continue
        by_name.setdefault(path.name, []).append(where)
    return [
        f"{name}: {', '.join(sorted(ps))}" for name, ps in sorted(by_name.items()) if len(ps) > 1
    ]


def _report(title: str, rows: list[str], failed: bool) -> int:
    print(title)
    for row in rows:
        print(f"  {row}")
    return int(failed)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strict", action="store_true")
    strict = parser.parse_args().strict
    missed = 0

    print("sizes (information: judged by cohesion at review)")
    for what in ("modules", "functions", "classes"):
        print(f"  longest {what}:")
        for name, lines in longest(what):
            print(f"    {lines:5d}  {name}")

    places = kind_switch_places()
    pending = [f"(not checked) {name}: {why}" for name, why in KIND_SWITCH_PENDING.items()]
    missed += _report(
        f"kind switches outside specs, the registries and the dispatcher: {len(places)}",
        places + pending,
        bool(places),
    )

    places = private_imports()
    title = f"private names imported across packages: {len(places)}"
    missed += _report(title, places, bool(places))

    places = private_module_imports(modules(), ROOT, PACKAGE.name)
    print(f"private modules imported across packages (information): {len(places)}")

    every, escaping = relative_imports(modules(), ROOT)
    missed += _report(
        f"relative imports: {len(every)}, climbing out of their package: {len(escaping)}",
        escaping,
        bool(escaping),
    )

    cycles = package_cycles()
    missed += _report(
        f"package import cycles (function-level imports included): {len(cycles)}",
        cycles,
        bool(cycles),
    )

    groups = module_cycles(PACKAGE.name)
    new = [group for group in groups if frozenset(group) not in CYCLE_PENDING]
    rows = [
        " <-> ".join(group) + (f" ({CYCLE_PENDING[frozenset(group)]})" if group not in new else "")
        for group in groups
    ]
    missed += _report(
        f"module import cycles (function-level and type-only imports included): {len(groups)} "
        f"({len(groups) - len(new)} pending rework elsewhere)",
        rows,
        bool(new),
    )

    problems = layer_mismatches(ROOT / ".importlinter", ROOT / "ARCHITECTURE.md", PACKAGE.name)
    missed += _report(
        f"ARCHITECTURE.md layer table against the layers contract: {len(problems)} differences",
        problems,
        bool(problems),
    )

    shared = repeated_base_names(modules(), PACKAGE)
    missed += _report(f"module base names used by two modules: {len(shared)}", shared, bool(shared))

    print(f"contracts broken: {missed} of 7")
    return 1 if strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
