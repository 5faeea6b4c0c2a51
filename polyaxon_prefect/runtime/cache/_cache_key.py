"""Whether a job is cached, and under which key (Polyaxon's cache state, hashed).

Apart from `polyaxon_prefect.runtime.cache._run_cache` (the store), which must stay free of
templates: the flow layer reads the store without rendering anything.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from polyaxon_prefect.loading import TemplateError, render_bool
from polyaxon_prefect.runtime._context import RunContext, project_uuid
from polyaxon_prefect.runtime.render._problem_collector import Problems
from polyaxon_prefect.specs import Component

__all__ = ["cache_enabled", "cache_key"]

_CACHE_SECTIONS = ("init", "connections", "containers")


def cache_key(
    *,
    component: Component,
    cache: Any,
    values: Mapping[str, Any],
    run: Any,
    connection_names: Sequence[str],
    context: RunContext,
) -> str:
    """Polyaxon's cache state: the component, its inputs (``cache.io`` only, when given), outputs
    and context values that are set, and the run sections (``cache.sections``, default all three).

    Sections use the *unrendered* spec, as Polyaxon hashes the operation before rendering the
    run: otherwise an arg like ``--dropout={{ dropout }}`` would make ``cache.io`` useless.
    """
    io_filter = set(cache.io) if cache is not None and cache.io else None
    input_names = [io.name for io in component.inputs or []]
    output_names = [io.name for io in component.outputs or []]
    inputs = {
        name: values.get(name)
        for name in sorted(input_names)
        if io_filter is None or name in io_filter
    }
    outputs = {name: values[name] for name in sorted(output_names) if values.get(name) is not None}
    contexts = {
        name: value
        for name, value in sorted(values.items())
        if name not in input_names and name not in output_names
    }
    sections = (cache.sections if cache is not None and cache.sections else None) or _CACHE_SECTIONS
    state: dict[str, Any] = {
        "project": project_uuid(context.owner_name, context.project_name),
        "component": component.to_dict(),
        "in": inputs,
        "out": outputs,
        "ctx": contexts,
    }
    if "init" in sections:
        state["init"] = run.to_dict().get("init")
    if "connections" in sections:
        state["connections"] = sorted(connection_names)
    if "containers" in sections:
        container = run.to_dict().get("container") or {}
        state["containers"] = {
            key: container.get(key) for key in ("image", "command", "args") if key in container
        }
    text = json.dumps(state, sort_keys=True, default=_json_default, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _json_default(value: object) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return str(value)


def cache_enabled(
    cache: object, in_pipeline: bool, context: Mapping[str, Any], problems: Problems
) -> bool:
    disable = getattr(cache, "disable", None)
    if isinstance(disable, str):
        try:
            disable = render_bool(disable, context)
        except TemplateError as exc:
            problems.template(exc, ("component", "cache", "disable"))
            return False
    if in_pipeline:
        return disable is not True
    return disable is False
