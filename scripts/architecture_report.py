"""Print the package's structural measures, against the targets the redesign aims for.

- hand-written modules over 600 lines (generated models excepted);
- functions over 80 lines;
- where the run kind ``"job"`` is compared as a string (target: only the dispatcher/registry);
- the import-linter contracts (``lint-imports``).

Usage::

    python scripts/architecture_report.py [--strict]

With ``--strict`` the exit code is 1 when a target is missed (for CI once the targets are met).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "polyaxon_prefect"
GENERATED = {PACKAGE / "specs" / "_k8s.py"}
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
KIND_ALLOWED = {"_dispatch.py", "_executors.py"}


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p not in GENERATED)


def long_modules() -> list[tuple[str, int]]:
    rows = []
    for path in modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            rows.append((str(path.relative_to(ROOT)), lines))
    return sorted(rows, key=lambda row: -row[1])


def long_functions() -> list[tuple[str, int]]:
    rows = []
    for path in modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    rows.append((f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", length))
    return sorted(rows, key=lambda row: -row[1])


def job_comparisons() -> list[str]:
    """``x == "job"`` / ``x != "job"`` / ``"job" in``-style comparisons outside the dispatcher."""
    places = []
    for path in modules():
        if path.name in KIND_ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and o.value == "job" for o in operands):
                places.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return places


def import_contracts() -> tuple[bool, str]:
    linter = Path(sys.executable).with_name("lint-imports")
    if not linter.exists():
        return False, "lint-imports is not installed"
    done = subprocess.run([str(linter)], cwd=ROOT, capture_output=True, text=True, check=False)
    summary = [line for line in done.stdout.splitlines() if line.startswith("Contracts:")]
    return done.returncode == 0, summary[-1] if summary else done.stdout[-300:]


def private_imports() -> list[str]:
    """``from polyaxon_prefect.<other package>... import _name``: a private name used across a
    package boundary (make it public in its package instead)."""
    places = []
    for path in modules():
        parts = path.relative_to(PACKAGE).parts
        own = parts[0] if len(parts) > 1 else path.stem
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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


def mypy_package() -> tuple[bool, str]:
    """mypy (config in pyproject.toml: the pydantic plugin, the whole package, the pure
    packages strictly)."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    lines = done.stdout.strip().splitlines()
    return done.returncode == 0, lines[-1] if lines else done.stderr[-300:]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strict", action="store_true")
    strict = parser.parse_args().strict
    missed = 0

    rows = long_modules()
    print(f"modules over {MAX_MODULE_LINES} lines (generated excepted): {len(rows)}")
    for name, lines in rows:
        print(f"  {lines:5d}  {name}")
    missed += bool(rows)

    rows = long_functions()
    print(f"functions over {MAX_FUNCTION_LINES} lines: {len(rows)}")
    for name, lines in rows:
        print(f"  {lines:5d}  {name}")
    missed += bool(rows)

    places = job_comparisons()
    print(f'"job" compared outside the dispatcher: {len(places)}')
    for place in places:
        print(f"  {place}")
    missed += bool(places)

    places = private_imports()
    print(f"private names imported across packages: {len(places)}")
    for place in places:
        print(f"  {place}")
    missed += bool(places)

    ok, summary = import_contracts()
    print(f"import-linter: {summary}")
    missed += not ok

    cycles = package_cycles()
    print(f"package import cycles (function-level imports included): {len(cycles)}")
    for cycle in cycles:
        print(f"  {cycle}")
    missed += bool(cycles)

    ok, summary = mypy_package()
    print(f"mypy (the package; strict on the pure packages): {summary}")
    missed += not ok

    print(f"targets missed: {missed} of 7")
    return 1 if strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
