"""What the op cache's code hash costs: the milliseconds to hash a working folder
(`polyaxon_prefect.runtime.cache._code_hash.read_code`: every file read and hashed) against a
baseline on the same tree, a plain ``os.walk`` + ``stat`` of every file (the least any
change detector reads).

Two trees: the quick-start example (``examples/quick-start``) and a generated folder of
10,000 small files (100 folders of 100 files of 200 bytes, in a temporary directory). Each is
timed ``--runs`` times after one untimed run (the page cache warm, as on a second run of a
DAG); the report gives the median and minimum of each and the ratio hash/walk of the medians.

Usage::

    python benchmarks/code_hash.py [--runs 15] [--files 10000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUICK_START = REPO / "examples" / "quick-start"


def walk_and_stat(root: Path) -> int:
    """The baseline: every file under ``root`` listed and stat'ed, nothing read."""
    count = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.stat(os.path.join(folder, name))
            count += 1
    return count


def generate(root: Path, files: int, size: int = 200) -> None:
    per_folder = 100
    for index in range(files):
        folder = root / f"pkg{index // per_folder:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{index % per_folder:03d}.py").write_bytes(
            (f"# {index}\n".encode() + b"x = 1\n" * size)[:size]
        )


def timed(action: Callable[[], object], runs: int) -> list[float]:
    action()  # untimed: the page cache warm
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        action()
        times.append((time.perf_counter() - began) * 1000)
    return times


def report(name: str, root: Path, runs: int) -> None:
    from polyaxon_prefect.runtime.cache._code_hash import read_code
    from polyaxon_prefect.runtime.cache._code_rules import CodeBudget

    budget = CodeBudget(max_files=1_000_000, max_bytes=1 << 40)
    state = read_code(root, {"python": sys.version}, budget)
    hashed = timed(lambda: read_code(root, {"python": sys.version}, budget), runs)
    walked = timed(lambda: walk_and_stat(root), runs)
    ratio = statistics.median(hashed) / statistics.median(walked)
    print(
        f"{name}: {state.files} files, {state.size} bytes hashed; "
        f"code hash median {statistics.median(hashed):.2f} ms (min {min(hashed):.2f}); "
        f"os.walk+stat median {statistics.median(walked):.2f} ms (min {min(walked):.2f}); "
        f"ratio {ratio:.2f}x"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    report("examples/quick-start", QUICK_START, args.runs)
    with tempfile.TemporaryDirectory(prefix="code-hash-") as tmp:
        generate(Path(tmp), args.files)
        report(f"{args.files} small files", Path(tmp), args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
