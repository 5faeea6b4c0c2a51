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
KIND_ALLOWED = {"_dispatch.py", "_executors.py", "_kind.py", "_registry.py"}


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

    ok, summary = import_contracts()
    print(f"import-linter: {summary}")
    missed += not ok

    print(f"targets missed: {missed} of 4")
    return 1 if strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
