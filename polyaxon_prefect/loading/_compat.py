"""Backwards-compatible value forms Polyaxon still reads, rewritten to the current form.

Older Polyaxonfiles (and Polyaxon's own quick-start DAG) give an image param as a mapping::

    destination:
      value: {name: polyaxon/polyaxon-quick-start, connection: docker-connection}

Polyaxon reads that as the image ``name`` pushed through ``connection``. The rewrite happens on
the raw operation, once its components are inlined and before validation, so everything after it
(type checks, refs across the DAG, rendering) sees one form: ``{value: <name>, connection: ...}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs import is_dag_kind

__all__ = ["normalize_image_params"]

_IMAGE_KEYS = frozenset({"name", "connection"})


def _image_ios(component: object) -> set[str]:
    if not isinstance(component, Mapping):
        return set()
    names: set[str] = set()
    for section in ("inputs", "outputs"):
        for io in component.get(section) or []:
            if isinstance(io, Mapping) and io.get("type") == "image" and not io.get("isList"):
                names.add(str(io.get("name")))
    return names


def _as_image(value: object) -> dict[str, Any] | None:
    """``{name, connection?}`` (nothing else, ``name`` a string) or None."""
    if (
        isinstance(value, Mapping)
        and "name" in value
        and isinstance(value["name"], str)
        and set(value) <= _IMAGE_KEYS
    ):
        return dict(value)
    return None


def _normalize_op(op: dict[str, Any], path: tuple[str | int, ...], problems: list[Problem]) -> None:
    params = op.get("params")
    if not isinstance(params, dict):
        return
    for name in _image_ios(op.get("component")) & set(params):
        param = params[name]
        short = _as_image(param)
        if short is not None and "value" not in param:
            # `destination: {name: ..., connection: ...}`: the short form of the same thing
            params[name] = {"value": short["name"], **_connection(short)}
            continue
        if not isinstance(param, dict) or param.get("ref") is not None:
            continue
        image = _as_image(param.get("value"))
        if image is None:
            continue
        connection = image.get("connection")
        if connection is not None and param.get("connection") not in (None, connection):
            problems.append(
                Problem(
                    f"param `{name}` names two connections: `{param['connection']}` and "
                    f"`{connection}` inside its value",
                    rule="param_connection",
                    path=(*path, "params", name, "value", "connection"),
                    hint="keep one of them",
                )
            )
            connection = None  # reported once; the image name itself is fine
        rewritten = {**param, "value": image["name"]}
        if connection is not None:
            rewritten["connection"] = connection
        params[name] = rewritten


def _connection(image: Mapping[str, Any]) -> dict[str, Any]:
    return {"connection": image["connection"]} if image.get("connection") is not None else {}


def normalize_image_params(op: dict[str, Any], path: tuple[str | int, ...] = ()) -> list[Problem]:
    """Rewrite image params given as ``{name, connection}`` in ``op`` and its DAG, in place.

    Only params of inputs/outputs typed ``image`` are touched; a ``dict`` input keeps its mapping.
    Returns the problems found (a value and its param naming different connections).
    """
    problems: list[Problem] = []
    _walk(op, path, problems, {})
    return problems


def _walk(
    op: dict[str, Any],
    path: tuple[str | int, ...],
    problems: list[Problem],
    dag_components: Mapping[str, Any],
) -> None:
    if op.get("component") is None and isinstance(op.get("dagRef"), str):
        component = dag_components.get(op["dagRef"])
        if component is not None:
            _normalize_op({**op, "component": component}, path, problems)
    else:
        _normalize_op(op, path, problems)
    component = op.get("component")
    run = component.get("run") if isinstance(component, dict) else None
    if not isinstance(run, dict) or not is_dag_kind(run.get("kind")):
        return
    components = {
        c["name"]: c
        for c in run.get("components") or []
        if isinstance(c, dict) and isinstance(c.get("name"), str)
    }
    for index, child in enumerate(run.get("operations") or []):
        if isinstance(child, dict):
            _walk(child, (*path, "component", "run", "operations", index), problems, components)
