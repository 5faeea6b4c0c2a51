"""Print the best runs of a project, for the quick-start DAG's ``best_model`` op.

Reads the ``outputs.json`` of every run under ``<artifacts root>/<project>/`` and prints the
``--top`` runs with the lowest ``loss``. The artifacts root is the parent of this run's own
project directory when run by polyaxon-prefect, else ``POLYAXON_PREFECT_ARTIFACTS_ROOT``, else
``~/.polyaxon_prefect/artifacts``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path


def project_dir(project: str) -> Path:
    own = os.environ.get("POLYAXON_PREFECT_RUN_ARTIFACTS_PATH")
    if own and Path(own).parent.name == project:
        return Path(own).parent
    root = os.environ.get("POLYAXON_PREFECT_ARTIFACTS_ROOT") or "~/.polyaxon_prefect/artifacts"
    return Path(root).expanduser() / project


def finished_runs(directory: Path) -> list[tuple[float, str, dict]]:
    runs = []
    for outputs_file in sorted(directory.glob("*/outputs/outputs.json")):
        try:
            outputs = json.loads(outputs_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        loss = outputs.get("loss") if isinstance(outputs, dict) else None
        if isinstance(loss, int | float) and not math.isnan(loss):
            runs.append((float(loss), outputs_file.parent.parent.name, outputs))
    return sorted(runs, key=lambda run: run[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", required=True)
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()
    directory = project_dir(args.project)
    runs = finished_runs(directory)
    if not runs:
        print(f"no finished runs with a `loss` output under {directory}")
        return
    print(f"top {min(args.top, len(runs))} of {len(runs)} runs in {directory} by loss:")
    for rank, (loss, uuid, outputs) in enumerate(runs[: args.top], start=1):
        accuracy = outputs.get("accuracy")
        extra = f" accuracy={accuracy:.4f}" if isinstance(accuracy, int | float) else ""
        print(f"{rank}. {uuid} loss={loss:.4f}{extra}")


if __name__ == "__main__":
    main()
