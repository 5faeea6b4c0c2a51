"""Reading a large Polyaxonfile: libyaml's composer (what `check` uses) against PyYAML's pure
Python one, on the same text in the same process, both through our position-keeping builder.

The text is a real quick-start DAG followed by a long `x-data` list of mappings (about 3 MB, under
the 4 MiB input limit). Prints the median of ``--runs`` parses for each and the ratio.

Usage::

    python benchmarks/yaml_speed.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from polyaxon_prefect._source import _located_yaml

ROOT = Path(__file__).resolve().parent.parent


def parse_with(loader: type, text: str) -> float:
    saved = _located_yaml._FastLoader
    _located_yaml._FastLoader = loader
    try:
        started = time.perf_counter()
        _located_yaml.parse_yaml(text)
        return time.perf_counter() - started
    finally:
        _located_yaml._FastLoader = saved


def main() -> None:
    # This file is over the default node limit on purpose: measure the parser, not the limit.
    os.environ.setdefault("POLYAXON_PREFECT_MAX_YAML_NODES", "10000000")
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    base = (ROOT / "examples" / "quick-start" / "dag.yaml").read_text(encoding="utf-8")
    rows = "".join(
        f"- {{name: item{i}, value: {i}.5, tags: [a, b], on: true}}\n" for i in range(40_000)
    )
    text = base + "x-data:\n" + rows
    print(f"{len(text) / 1e6:.1f} MB, {text.count(chr(10))} lines")
    fast = statistics.median(parse_with(_located_yaml._FastLoader, text) for _ in range(runs))
    pure = statistics.median(parse_with(_located_yaml._Loader, text) for _ in range(runs))
    print(f"libyaml: {fast:.2f} s, pure Python: {pure:.2f} s, ratio {fast / pure:.2f}x")


if __name__ == "__main__":
    main()
