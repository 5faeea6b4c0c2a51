"""Read what a run's process logged (``outputs.json``, ``metrics.jsonl``) and check the outputs
against the component's declared ``outputs``.

The file formats are the contract documented in `polyaxon_prefect.tracking`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.runtime._errors import OutputsError
from polyaxon_prefect.tracking import METRICS_FILE, OUTPUTS_FILE, read_metrics_file

__all__ = ["DeclaredOutput", "read_metrics", "read_outputs", "validate_outputs"]


class DeclaredOutput(Protocol):
    """What `validate_outputs` needs from an output declaration (`specs.IO` fits)."""

    name: str
    type: str | None
    is_optional: Any
    value: Any


def read_outputs(run_outputs_path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``outputs.json`` object of a run; ``{}`` when the run logged none.

    Raises:
        OutputsError: the file exists but is not a JSON object.
    """
    path = Path(run_outputs_path) / OUTPUTS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise OutputsError(
            f"{path} is not valid JSON ({exc}); write it with `tracking.log_outputs(...)` or "
            "replace it atomically (temporary file + rename)"
        ) from exc
    if not isinstance(data, dict):
        raise OutputsError(
            f"{path} must hold a JSON object mapping output names to values, "
            f"found a {type(data).__name__}"
        )
    return data


def read_metrics(run_outputs_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every record of the run's ``metrics.jsonl``, in logged order (``[]`` when none).

    Each record is ``{"step": int | None, "timestamp": str, "<metric>": number, ...}``; a line
    cut short by a killed process is skipped.
    """
    return read_metrics_file(Path(run_outputs_path) / METRICS_FILE)


def _is_optional(io: DeclaredOutput) -> bool:
    if getattr(io, "is_optional", None) is True:
        return True
    fields_set = getattr(io, "model_fields_set", None)
    return bool(fields_set and "value" in fields_set) or getattr(io, "value", None) is not None


def _check_type(io: DeclaredOutput, value: object) -> tuple[Any, list[str]]:
    """The typed value and the rules it breaks (type first, then ``validation``)."""
    from polyaxon_prefect.specs.params._io import check_validation
    from polyaxon_prefect.specs.params._types import parse_value

    io_type = getattr(io, "type", None)
    is_list = getattr(io, "is_list", None) is True
    if io_type is None and not is_list:
        typed = value
    else:
        try:
            typed = parse_value(io_type or "any", value, is_list=is_list)
        except ValueError as exc:
            return value, [f"value {value!r:.80} is not a `{io_type}`: {exc}"]
    validation = getattr(io, "validation", None)
    return typed, check_validation(validation, typed) if validation is not None else []


def validate_outputs(
    declared: Sequence[DeclaredOutput],
    values: Mapping[str, Any],
    *,
    file: str | None = None,
) -> tuple[dict[str, Any], list[Problem]]:
    """Check logged outputs against the component's ``outputs``.

    Returns the typed values (declared defaults filled in for outputs that were not logged) and
    every problem found: a value of the wrong type, a non-optional output that was not logged,
    an output that the component does not declare. An empty problem list means all is well.
    ``file`` (e.g. the ``outputs.json`` path) is put on each problem.
    """
    declared_names = [io.name for io in declared]
    listed = ", ".join(f"`{name}`" for name in declared_names) or "none"
    typed: dict[str, Any] = {}
    problems: list[Problem] = []

    for name, value in values.items():
        if name not in declared_names:
            problems.append(
                Problem(
                    f"output `{name}` was logged but the component does not declare it "
                    f"(declared outputs: {listed})",
                    rule="output_undeclared",
                    path=("outputs", name),
                    file=file,
                    value=value,
                    hint="declare it under `outputs:` or stop logging it",
                )
            )

    for io in declared:
        if io.name not in values or values[io.name] is None:
            if _is_optional(io):
                typed[io.name] = getattr(io, "value", None)
                continue
            problems.append(
                Problem(
                    f"output `{io.name}` is not optional but the run did not log it",
                    rule="output_missing",
                    path=("outputs", io.name),
                    file=file,
                    hint=f"log it from the op with `tracking.log_outputs({io.name}=...)`, or "
                    "give it a default `value` / `isOptional: true` in the component",
                )
            )
            continue
        value, errors = _check_type(io, values[io.name])
        if errors:
            problems.extend(
                Problem(
                    f"output `{io.name}`: {error}",
                    rule="output_type",
                    path=("outputs", io.name),
                    file=file,
                    value=values[io.name],
                )
                for error in errors
            )
            continue
        typed[io.name] = value
    return typed, problems


def tail_metric(path: Path, offset: int, metric: str) -> tuple[list[tuple[int, float]], int]:
    """``(step, value)`` of ``metric`` in the complete lines appended to a metrics file since
    ``offset``, and the offset to read from next time (a half-written last line waits)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            chunk = handle.read()
    except FileNotFoundError:
        return [], offset
    end = chunk.rfind(b"\n")
    if end < 0:
        return [], offset
    values = []
    for raw in chunk[: end + 1].splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("step") is None:
            continue
        value = record.get(metric)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(value):
            values.append((int(record["step"]), float(value)))
    return values, offset + end + 1
