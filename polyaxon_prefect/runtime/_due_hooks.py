"""``hooks``: which of an op's hooks are due when it ends, and the operation each one runs.

Polyaxon starts a hook's hub component after the op is done when the op's status matches the
hook's ``trigger`` (``done``, or no trigger, matches every final status) and its
``conditions`` render true; unless ``disableDefaults`` is set the hook gets the op's context as
params: ``uuid``, ``kind``, ``name``, ``inputs``, ``outputs``, ``status`` and ``condition``
(``V1Operation.from_hook``). A default param the hook component does not declare is passed as
context-only (usable in its templates, never checked against its inputs). Pure: the Prefect
layer (``prefect/_state_hooks.py``) loads and runs what this returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from polyaxon_prefect.loading import ParamValue, TemplateError, build_context, render_bool
from polyaxon_prefect.specs import DONE_STATUSES

__all__ = ["DEFAULT_PARAMS", "hook_context", "hook_document", "hook_due", "hooks_of"]

DEFAULT_PARAMS = ("uuid", "kind", "name", "inputs", "outputs", "status", "condition")


def hooks_of(operation: object) -> list[Any]:
    """The op's hooks (the operation's, else its component's); none while still a template."""
    component = getattr(operation, "component", None)
    hooks = getattr(operation, "hooks", None) or getattr(component, "hooks", None) or []
    return list(hooks) if isinstance(hooks, list) else []


def hook_context(
    *,
    uuid: str | None,
    kind: str | None,
    name: str,
    status: str,
    message: str,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
) -> dict[str, Any]:
    """The params a hook gets by default, in Polyaxon's names."""
    return {
        "uuid": uuid,
        "kind": kind,
        "name": name,
        "inputs": dict(inputs),
        "outputs": dict(outputs),
        "status": status,
        "condition": {"type": status, "status": True, "reason": status, "message": message},
    }


def hook_due(hook: object, context: Mapping[str, Any]) -> bool:
    """Whether ``hook`` runs for an op that ended as ``context`` says: its trigger matches the
    status and its ``conditions`` (rendered with the context) are true.

    Raises:
        TemplateError: the conditions use an undefined name or are not a boolean.
    """
    status = str(context.get("status"))
    trigger = getattr(hook, "trigger", None)
    if trigger in (None, "done"):
        if status not in DONE_STATUSES:
            return False
    elif trigger != status:
        return False
    conditions = getattr(hook, "conditions", None)
    if not conditions:
        return True
    values = {key: ParamValue(value=value) for key, value in context.items()}
    return bool(render_bool(conditions, build_context(values)))


def hook_document(
    hook: Any, context: Mapping[str, Any], declared: Iterable[str] = ()
) -> dict[str, Any]:
    """The operation a due hook runs: its hub component, its params over the op's context
    (context-only where the component does not declare them), its connection on the run."""
    inputs = set(declared)
    params: dict[str, Any] = {}
    if not getattr(hook, "disable_defaults", None):
        for name in DEFAULT_PARAMS:
            value = context.get(name)
            params[name] = (
                {"value": value} if name in inputs else {"value": value, "contextOnly": True}
            )
    for name, value in (getattr(hook, "params", None) or {}).items():
        params[name] = value if isinstance(value, Mapping) else {"value": value}
    document: dict[str, Any] = {
        "version": 1.1,
        "kind": "operation",
        "name": f"{context.get('name') or 'op'}-hook-{hook.hub_ref.split(':')[0].split('/')[-1]}",
        "hubRef": hook.hub_ref,
        "params": params,
    }
    if getattr(hook, "presets", None):
        document["presets"] = list(hook.presets)
    if getattr(hook, "connection", None):
        document["runPatch"] = {"connections": [hook.connection]}
    return document


def safe_due(hook: Any, context: Mapping[str, Any]) -> tuple[bool, str | None]:
    """`hook_due`, with a template error turned into (False, why) for the caller to log."""
    try:
        return hook_due(hook, context), None
    except TemplateError as exc:
        return False, f"hook `{hook.hub_ref}`: its conditions could not be evaluated: {exc}"
