"""How ``ls`` and ``get`` print runs (the table, a run's fields): one printer for the flow
layer's commands and the thin client's."""

from __future__ import annotations

import json
from typing import Any

from polyaxon_prefect.client.runs._progress_label import progress_words
from polyaxon_prefect.client.runs._reports import trial_results

__all__ = ["print_ls", "print_run"]

_NAME_WIDTH = 40
"""The widest name `ls` shows (longer ones end in `…`; `get` and `--json` show them whole)."""


def _clipped(text: object, width: int = _NAME_WIDTH) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _print_table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    table = [header, *rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        cells = (str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())


def _ls_status(row: dict[str, Any]) -> str:
    """The status cell; a queued run says what it waits for (e.g. its GPUs)."""
    if row["status"] == "queued" and row.get("message"):
        return f"{row['status']} ({row['message']})"
    return str(row["status"])


def _shown(value: object) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _pairs(values: dict[str, Any]) -> str:
    return " ".join(f"{name}={_shown(value)}" for name, value in values.items())


def _print_sweep(run: dict[str, Any]) -> None:
    named = run.get("metric")
    metric = named or "value"
    if named and run.get("ranked_by") == "best over steps":  # say which value ranks them
        metric += " (best over steps)"
    trials = run["trials"]
    if trials:
        print("trials:")
        # without a metric (and no value read back) the value column would be all "-": each
        # trial's outputs and last metrics say what it gave instead (as the end lines do)
        if named or any(t["value"] is not None for t in trials):
            _print_table(
                ("  trial", "status", metric, "params"),
                [
                    (f"  {t['index']}", t["status"], _shown(t["value"]), _pairs(t["params"]))
                    for t in trials
                ],
            )
        else:
            _print_table(
                ("  trial", "status", "params", "results"),
                [
                    (
                        f"  {t['index']}",
                        t["status"],
                        _pairs(t["params"]),
                        _pairs(trial_results(t.get("outputs"), t.get("metrics"), None)),
                    )
                    for t in trials
                ],
            )
    best = run["best"]
    if best is not None:
        print(f"best: trial {best['index']}, {metric} = {_shown(best['value'])}")
        print(f"  params: {_pairs(best['params'])}")


def print_run(run: dict[str, Any]) -> None:
    for key in ("name", "kind", "status", "message", "uuid", "started", "duration", "url"):
        print(f"{key}: {run[key] if run[key] is not None else '-'}")
    if run.get("gpu_hours") is not None:
        print(f"gpu_hours: {run['gpu_hours']:.4g}")
    if run.get("progress"):
        print(f"progress: {progress_words(run['progress'])}")
    for section in ("params", "outputs", "metrics"):
        if run[section]:
            print(f"{section}:")
            for name, value in run[section].items():
                print(f"  {name}: {_shown(value)}")
    if run.get("ops"):
        print("ops:")
        for name, op in run["ops"].items():
            outputs = f"  {_pairs(op['outputs'])}" if op.get("outputs") else ""
            shown = op["status"] != "succeeded" or op.get("reused")  # reused from run X
            why = op.get("message") if shown else ""
            print(f"  {name}: {op['status']}{outputs}" + (f"  ({why})" if why else ""))
    if "trials" in run:
        _print_sweep(run)


def print_ls(rows: list[dict[str, Any]]) -> None:
    """``ls``'s table of ``rows`` (`list_runs`'s), or ``no runs``."""
    if not rows:
        print("no runs")
        return
    header = ("name", "kind", "status", "started", "duration", "id")
    _print_table(
        header,
        [
            (_clipped(r["name"]), r["kind"], _ls_status(r), *(r[k] for k in header[3:]))
            for r in rows
        ],
    )
