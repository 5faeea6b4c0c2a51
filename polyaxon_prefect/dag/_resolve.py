"""Param values of a DAG op, once its upstreams have finished: refs read, joins gathered, typed.

Polyaxon resolves ``ref: ops.X`` and ``ref: dag`` params on its server when it creates the child
run. Here the DAG flow calls `resolve_params` right before an op starts, with what the finished
ops left behind (`OpRecord`s) and the DAG's own inputs and globals (`DagScope`).
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.dag._join_query import resolve_joins
from polyaxon_prefect.dag._records import MISSING, DagScope, OpRecord, op_sources, read_path
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.specs import Param, Status

__all__ = ["DagScope", "dag_sources", "resolve_params", "resolve_ref"]


def dag_sources(scope: DagScope) -> dict[str, Any]:
    """What ``ref: dag`` reads: the DAG's ``inputs``, ``globals`` and ``artifacts``."""
    run_globals = dict(scope.globals)
    return {
        "inputs": dict(scope.inputs),
        "globals": run_globals,
        "artifacts": {
            "base": run_globals.get("run_artifacts_path"),
            "outputs": run_globals.get("run_outputs_path"),
        },
    }


def _find_run(scope: DagScope, run_uuid: str) -> OpRecord | None:
    for record in scope.records.values():
        if run_uuid in (record.uuid, record.globals.get("uuid")):
            return record
    return None


def _unresolved(name: str, message: str, hint: str | None = None) -> Problem:
    return Problem(
        f"param `{name}`: {message}", rule="ref_unresolved", path=("params", name), hint=hint
    )


def resolve_ref(name: str, param: Param, scope: DagScope) -> Any:
    """The raw (untyped) value a ref param reads; `MISSING` is never returned.

    Raises:
        PolyaxonfileError: rule ``ref_unresolved``: the op has not finished (or is not in the
            DAG), it has no such value (a skipped or failed upstream has no outputs), or a
            ``runs.<uuid>`` ref names a run outside this DAG.
    """
    parts = param.ref_path or ()
    where = f"`{param.value}` of `{param.ref}`"
    kind = param.entity_kind
    base: str | None = None
    record: OpRecord | None = None
    if param.reads_dag:
        sources = dag_sources(scope)
    else:
        target = param.entity_ref or ""
        record = scope.records.get(target) if kind == "ops" else _find_run(scope, target)
        if record is None:
            if kind == "ops":
                message = f"{where} cannot be read: operation `{target}` has not finished"
                hint = f"make `{target}` an upstream of this op (it is one when referenced)"
            else:
                message = f"{where} cannot be read: run `{target}` is not part of this DAG"
                hint = "`runs.<uuid>` refs need a Polyaxon server; use `ref: ops.<name>`"
            raise PolyaxonfileError([_unresolved(name, message, hint)])
        sources = op_sources(record)
        base = sources["artifacts"]["base"]
    value = read_path(sources, parts, base=base)
    if value is MISSING:
        if record is not None:
            message = (
                f"{where} cannot be read: `{record.name}` ended `{record.status}` and has no "
                f"`{'.'.join(parts)}`"
            )
            hint = (
                "the upstream did not produce it; guard this op with a trigger such as "
                "`all_succeeded`, or make the input optional"
                if record.status != Status.SUCCEEDED
                else f"`{record.name}` has: "
                + ", ".join(f"{k}.{n}" for k in ("inputs", "outputs") for n in sources[k])
            )
        else:
            message = f"{where} cannot be read: the dag has no `{'.'.join(parts)}`"
            hint = "the dag has inputs: " + (", ".join(scope.inputs) or "none")
        raise PolyaxonfileError([_unresolved(name, message, hint)])
    return value


def _typed(name: str, io: Any, value: Any, source: str) -> Any:
    try:
        return io.validate_value(value)
    except ValueError as exc:
        raise PolyaxonfileError(
            [
                Problem(
                    f"param `{name}`: {source} gave {value!r}, which does not fit the input of "
                    f"type `{io.full_type}`: {exc}",
                    rule="ref_type",
                    path=("params", name),
                    value=value,
                )
            ]
        ) from None


def resolve_params(op: Any, scope: DagScope) -> dict[str, Any]:
    """Every param value of the DAG op ``op`` (an `Operation` with its component inlined).

    Literal params and input defaults are typed as when the op is loaded alone; ``ref: ops.X``
    (``outputs.Y``, ``inputs.Y``, ``globals.Y`` with ``globals.status``, ``artifacts[.Y]``,
    ``io``) and ``ref: dag`` (``inputs.Y``, ``globals.Y``) are read from ``scope``; join params
    are gathered by `resolve_joins`. Values are typed by the receiving input (``"0.5"`` becomes
    ``0.5`` for a float input, ``3`` becomes ``3.0``); ``contextOnly`` params stay raw. When an
    upstream lacks a value and the receiving input is optional, the input's default is used.

    Raises:
        PolyaxonfileError: every param that cannot be resolved (rule ``ref_unresolved``) or
            typed (``ref_type``), at once.
    """
    from polyaxon_prefect.specs import typed_params

    component = op.component
    ios = {io.name: io for io in component.ios} if component is not None else {}
    params = dict(op.params or {})
    problems: list[Problem] = []
    try:
        result = typed_params(component, params) if component is not None else {}
    except ValueError as exc:
        raise PolyaxonfileError(
            [Problem(f"operation `{op.name}`: {exc}", rule="param_type", path=("params",))]
        ) from None
    for name, param in params.items():
        if not param.is_ref:
            if name not in result:
                result[name] = param.value
            continue
        io = None if param.is_context_only else ios.get(name)
        try:
            value = resolve_ref(name, param, scope)
        except PolyaxonfileError as exc:
            if io is not None and io.is_optional is True:
                result[name] = io.value
                continue
            problems.extend(exc.problems)
            continue
        try:
            result[name] = value if io is None else _typed(name, io, value, param.searchable_ref)
        except PolyaxonfileError as exc:
            problems.extend(exc.problems)
    if problems:
        raise PolyaxonfileError(problems)
    result.update(resolve_joins(op, scope, params=result))
    return result
