"""Polyaxon's four patch strategies, presets and ``runPatch``, on YAML-shaped (camelCase) dicts.

Polyaxon patches its pydantic models; we patch the plain data before validation, so a preset or a
``runPatch`` is checked once, in its merged form, with positions that still point at the YAML.

Strategies (``patchStrategy``):

* ``replace``: every value the patch provides replaces the current one. Mappings that describe
  spec objects (``cache``, ``environment``, ``container``...) are patched key by key, so
  ``cache: {}`` leaves the cache alone; free-form maps (``labels``, ``nodeSelector``, ``params``...)
  and lists are replaced whole, as Polyaxon does for its ``Dict`` and ``List`` fields.
* ``isnull``: a value is applied only where the current one is missing.
* ``post_merge`` (default): deep merge, the patch wins; lists become the current items followed by
  the patch items not already present.
* ``pre_merge``: deep merge, the current values win; lists become the patch items followed by the
  current items not already present (the patch is applied "first").

``matrix``, ``schedule`` and ``mount`` use Polyaxon's same-kind patch: they merge only when both
sides have the same ``kind``; otherwise the patch replaces them (replace, post_merge) or is
ignored (isnull, pre_merge).

``None`` in the patch always means "no opinion" and never clears a value. Polyaxon clears a field
that a preset explicitly sets to ``null`` under replace or post_merge; in YAML that is easy to do by
accident (``name:`` with nothing after it), and dropping a field silently is worse than keeping it.
The Kubernetes-object rule where ``null`` clears under post_merge is not reproduced either.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Literal, get_args

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.specs import replica_patch_keys, replica_paths, run_keys

__all__ = [
    "PATCH_STRATEGIES",
    "PatchStrategy",
    "apply_preset",
    "apply_run_patch",
    "patch",
]

PatchStrategy = Literal["replace", "isnull", "post_merge", "pre_merge"]
PATCH_STRATEGIES: tuple[str, ...] = get_args(PatchStrategy)

SAME_KIND_KEYS = frozenset({"matrix", "schedule", "mount"})

# Maps whose keys are user data rather than field names: replace and isnull treat them as one
# value, like Polyaxon's ``Dict[str, ...]`` fields.
FREE_FORM_KEYS = frozenset(
    {
        "labels",
        "annotations",
        "nodeSelector",
        "matchLabels",
        "params",
        "requests",
        "limits",
        "runtimeEnv",
        "metadata",
        "rayStartParams",
    }
)


def _check_strategy(strategy: object, path: tuple[str | int, ...] = ("patchStrategy",)) -> str:
    if strategy not in PATCH_STRATEGIES:
        raise PolyaxonfileError(
            [
                Problem(
                    f"unknown patch strategy {strategy!r}; expected one of "
                    f"{', '.join(PATCH_STRATEGIES)}",
                    rule="patch_strategy",
                    path=path,
                    value=strategy,
                )
            ]
        )
    return str(strategy)


def patch(current: object, new: object, strategy: str = "post_merge") -> Any:
    """Patch ``current`` with ``new`` using a Polyaxon patch strategy; inputs are not modified."""
    _check_strategy(strategy)
    return _patch(current, new, strategy, None)


def _patch(current: object, new: object, strategy: str, key: object) -> Any:
    if new is None:
        return copy.deepcopy(current)
    if current is None:
        return copy.deepcopy(new)
    if isinstance(current, Mapping) and isinstance(new, Mapping):
        return _patch_mapping(current, new, strategy, key)
    if strategy == "isnull":
        return copy.deepcopy(current)
    if isinstance(current, list) and isinstance(new, list):
        if strategy == "replace":
            return copy.deepcopy(new)
        first, second = (current, new) if strategy == "post_merge" else (new, current)
        return copy.deepcopy(first) + [copy.deepcopy(x) for x in second if x not in first]
    # Scalars, or values whose types differ (a list against a template string, say).
    return copy.deepcopy(current if strategy == "pre_merge" else new)


def _patch_mapping(
    current: Mapping[Any, Any], new: Mapping[Any, Any], strategy: str, key: object
) -> dict[Any, Any]:
    if key in SAME_KIND_KEYS and current.get("kind") != new.get("kind"):
        keep_current = strategy in ("isnull", "pre_merge")
        return copy.deepcopy(dict(current if keep_current else new))
    if key in FREE_FORM_KEYS:
        if strategy == "replace":
            return copy.deepcopy(dict(new))
        if strategy == "isnull":
            return copy.deepcopy(dict(current))
    out = copy.deepcopy(dict(current))
    for name, value in new.items():
        if value is None:
            continue
        out[name] = _patch(current.get(name), value, strategy, name)
    return out


def apply_preset(operation: Mapping[str, Any], preset: Mapping[str, Any]) -> dict[str, Any]:
    """Apply a preset (an operation fragment) to an operation with the preset's own strategy.

    A preset is normally marked ``isPreset: true``; one without the key is accepted too, because
    a file given as an extra ``-f`` is a preset by position (Polyaxon's quick-start
    ``termination.yaml`` has no marker). ``isPreset``, ``patchStrategy``, ``version`` and
    ``kind`` describe the preset itself and are not copied into the operation.
    """
    if not isinstance(preset, Mapping):
        raise PolyaxonfileError(
            [
                Problem(
                    f"a preset must be a mapping of operation fields, got {type(preset).__name__}",
                    rule="preset",
                )
            ]
        )
    if preset.get("isPreset", True) is not True:
        raise PolyaxonfileError(
            [
                Problem(
                    f"this file is used as a preset but says `isPreset: {preset['isPreset']}`",
                    rule="preset",
                    path=("isPreset",),
                    hint="set `isPreset: true`, or pass the file as the main polyaxonfile",
                )
            ]
        )
    kind = preset.get("kind")
    if kind not in (None, "operation"):
        raise PolyaxonfileError(
            [
                Problem(
                    f"a preset is an operation fragment, but this one has `kind: {kind}`",
                    rule="preset",
                    path=("kind",),
                    hint="remove `kind` or set it to `operation`",
                )
            ]
        )
    strategy = _check_strategy(preset.get("patchStrategy") or "post_merge")
    body = {
        key: value
        for key, value in preset.items()
        if key not in ("isPreset", "patchStrategy", "version", "kind")
    }
    return _patch_mapping(operation, body, strategy, None)


def apply_run_patch(
    run: Mapping[str, Any], run_patch: Mapping[str, Any] | None, strategy: str = "post_merge"
) -> dict[str, Any]:
    """Patch a component's ``run`` with an operation's ``runPatch``.

    For distributed kinds a patch whose keys are not run-level fields is a *replica* patch,
    applied to every replica the run defines (tfjob chief/ps/worker/evaluator, pytorchjob
    master/worker, mpijob launcher/worker, ray head and worker groups, ...), so
    ``runPatch: {environment: {nodeSelector: ...}}`` reaches every pod. Problems are reported at
    ``runPatch.<key>`` of the operation.
    """
    _check_strategy(strategy)
    if not run_patch:
        return copy.deepcopy(dict(run))
    if not isinstance(run_patch, Mapping):
        raise PolyaxonfileError(
            [
                Problem(
                    f"runPatch must be a mapping of run fields, got {type(run_patch).__name__}",
                    rule="run_patch",
                    path=("runPatch",),
                )
            ]
        )
    kind = run.get("kind")
    patch_kind = run_patch.get("kind")
    if patch_kind is not None and patch_kind != kind:
        raise PolyaxonfileError(
            [
                Problem(
                    f"runPatch has `kind: {patch_kind}` but the component runs a `{kind}`",
                    rule="run_patch",
                    path=("runPatch", "kind"),
                    hint="remove `kind` from runPatch; it always patches the component's run",
                )
            ]
        )
    body = {key: value for key, value in run_patch.items() if key != "kind"}
    keys = run_keys(kind) if isinstance(kind, str) else None
    if keys is None or set(body) <= keys:
        return _patch_mapping(run, body, strategy, None)

    replica_keys = replica_patch_keys(kind) if isinstance(kind, str) else None
    if replica_keys is not None:
        if set(body) <= replica_keys:
            out = copy.deepcopy(dict(run))
            for path in replica_paths(str(kind), run):
                parent = out
                for part in path[:-1]:
                    parent = parent[part]
                parent[path[-1]] = _patch(parent[path[-1]], body, strategy, None)
            return out
        unknown = sorted(set(body) - keys - replica_keys) or sorted(set(body) - keys)
        message = (
            f"runPatch keys {', '.join(f'`{k}`' for k in sorted(body))} are neither all "
            f"{kind} fields ({', '.join(sorted(keys - {'kind'}))}) nor all replica fields "
            f"({', '.join(sorted(replica_keys))})"
        )
        hint = "patch the whole run or one set of replica fields, not a mix of both"
    else:
        unknown = sorted(set(body) - keys)
        message = (
            f"runPatch key {', '.join(f'`{k}`' for k in unknown)} is not a field of a {kind} "
            f"run; expected some of: {', '.join(sorted(keys - {'kind'}))}"
        )
        hint = None
    raise PolyaxonfileError(
        [Problem(message, rule="run_patch", path=("runPatch", unknown[0]), hint=hint)]
    )
