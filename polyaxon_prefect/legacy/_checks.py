"""Rules of the legacy format that span several sections.

They run on the raw data (defensively: the structural validation may have failed too) so that
every problem of a file is reported in one go, each pointing at the legacy key at fault.
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.legacy._schema import DISTRIBUTION_KEYS, FRAMEWORK_BLOCKS

__all__ = ["ALGORITHMS", "FRAMEWORK_REPLICA_KEYS", "check_rules"]

ALGORITHMS = ("grid_search", "random_search", "hyperband", "bo")

_TF = {
    "n_workers",
    "n_ps",
    "delay_workers_by_global_step",
    "run_config",
    "default_worker",
    "default_ps",
    "worker",
    "ps",
}
FRAMEWORK_REPLICA_KEYS: dict[str, set[str]] = {
    "tensorflow": _TF,
    "mxnet": _TF - {"delay_workers_by_global_step", "run_config"},
    "horovod": {"n_workers", "default_worker", "worker"},
    "pytorch": {"n_workers", "default_worker", "worker"},
    "mpi": {"n_workers", "default_worker"},
}
_DISTRIBUTED_KINDS = ("experiment", "group")


def check_rules(data: dict[str, Any]) -> list[Problem]:
    """Every cross-section rule violated by ``data`` (a legacy file's top-level mapping)."""
    problems: list[Problem] = []
    problems += _check_kind_sections(data)
    problems += _check_distribution(data)
    for key in ("hptuning", "settings"):
        tuning = data.get(key)
        if isinstance(tuning, dict):
            problems += _check_tuning(tuning, (key,))
    return problems


def _check_kind_sections(data: dict[str, Any]) -> list[Problem]:
    kind = data.get("kind")
    problems: list[Problem] = []
    tuning_keys = [k for k in ("hptuning", "settings") if data.get(k) is not None]
    if kind == "group":
        if not tuning_keys:
            problems.append(
                Problem(
                    "a `group` needs an `hptuning` section with a `matrix`",
                    rule="legacy_group_hptuning",
                    path=(),
                    hint="add `hptuning: {matrix: {...}}` or use `kind: experiment`",
                )
            )
        elif len(tuning_keys) > 1:
            problems.append(
                Problem(
                    "`settings` is the old name of `hptuning`; use only one of them",
                    rule="legacy_group_hptuning",
                    path=("settings",),
                )
            )
        else:
            tuning = data.get(tuning_keys[0])
            if isinstance(tuning, dict) and not tuning.get("matrix"):
                problems.append(
                    Problem(
                        f"`{tuning_keys[0]}.matrix` is required for a group: it defines the "
                        "hyper-parameters to search",
                        rule="legacy_group_hptuning",
                        path=(tuning_keys[0],),
                    )
                )
    elif kind in ("experiment", "job", "notebook", "tensorboard", "build", "pipeline"):
        problems.extend(
            Problem(
                f"`{key}` is only allowed in a `kind: group` file, not in a `{kind}`",
                rule="legacy_section_kind",
                path=(key,),
                hint="change `kind` to `group` to run a hyper-parameter search",
            )
            for key in tuning_keys
        )
    if kind not in _DISTRIBUTED_KINDS and isinstance(kind, str):
        problems.extend(
            Problem(
                f"`{key}` is only allowed in an experiment or a group, not in a `{kind}`",
                rule="legacy_section_kind",
                path=(key,),
            )
            for key in ("framework", "backend")
            if key in data
        )
    return problems


def _check_distribution(data: dict[str, Any]) -> list[Problem]:
    environment = data.get("environment")
    if not isinstance(environment, dict):
        return []
    blocks = [k for k in ("replicas", *FRAMEWORK_BLOCKS) if k in environment]
    if not blocks:
        return []
    problems: list[Problem] = []
    for extra in blocks[1:]:
        problems.append(
            Problem(
                f"the distributed topology is defined twice (`{blocks[0]}` and `{extra}`)",
                rule="legacy_replicas",
                path=("environment", extra),
                hint="keep a single `environment.replicas` block and set `framework`",
            )
        )
    block_key = blocks[0]
    block = environment.get(block_key)
    framework = data.get("framework")
    backend = data.get("backend")
    if block_key != "replicas":
        if framework is not None and framework != block_key:
            problems.append(
                Problem(
                    f"`framework: {framework}` contradicts the `environment.{block_key}` block",
                    rule="legacy_replicas",
                    path=("framework",),
                )
            )
        framework = block_key
    if backend == "mpi":
        effective = "mpi"
    elif framework is None:
        problems.append(
            Problem(
                "you must specify which framework to use for a distributed experiment",
                rule="legacy_replicas_framework",
                path=("environment", block_key),
                hint="add `framework: tensorflow|mxnet|horovod|pytorch|mpi` at the top level",
            )
        )
        return problems
    elif not isinstance(framework, str) or framework not in FRAMEWORK_REPLICA_KEYS:
        problems.append(
            Problem(
                f"distributed experiments do not support the framework `{framework}`; "
                f"expected one of {', '.join(FRAMEWORK_REPLICA_KEYS)}",
                rule="legacy_replicas_framework",
                path=("framework",),
            )
        )
        return problems
    else:
        effective = framework
    if isinstance(block, dict):
        allowed = FRAMEWORK_REPLICA_KEYS[effective]
        for key in block:
            if key not in allowed and key in _TF:
                problems.append(
                    Problem(
                        f"`{key}` is not available for {effective} replicas; "
                        f"allowed: {', '.join(sorted(allowed))}",
                        rule="legacy_replicas_framework",
                        path=("environment", block_key, key),
                    )
                )
    return problems


def _matrix_key(entry: object) -> str | None:
    if isinstance(entry, dict) and len(entry) == 1:
        return next(iter(entry))
    return None


def _check_tuning(tuning: dict[str, Any], path: tuple[str, ...]) -> list[Problem]:
    problems: list[Problem] = []
    used = [key for key in ALGORITHMS if tuning.get(key) is not None]
    for extra in used[1:]:
        problems.append(
            Problem(
                f"only one search algorithm can be used; found {', '.join(used)}",
                rule="legacy_search_algorithm",
                path=(*path, extra),
            )
        )
    algorithm = used[0] if used else "grid_search"
    matrix = tuning.get("matrix")
    if isinstance(matrix, dict):
        for name, entry in matrix.items():
            key = _matrix_key(entry)
            if key not in DISTRIBUTION_KEYS:
                continue
            if algorithm == "grid_search":
                problems.append(
                    Problem(
                        f"`{name}` defines a distribution (`{key}`), and it cannot be used "
                        "with grid search",
                        rule="legacy_grid_distribution",
                        path=(*path, "matrix", name, key),
                        hint="use `values` or a range, or pick `random_search`",
                    )
                )
            elif algorithm == "bo" and key != "uniform":
                problems.append(
                    Problem(
                        f"`{name}` defines a non uniform distribution (`{key}`), and it "
                        "cannot be used with bayesian optimization",
                        rule="legacy_bo_distribution",
                        path=(*path, "matrix", name, key),
                    )
                )
    random = tuning.get("random_search")
    if isinstance(random, dict) and random.get("n_experiments") is None:
        problems.append(
            Problem(
                "`random_search.n_experiments` is required to upgrade: a v1.1 random search "
                "needs `numRuns`",
                rule="legacy_random_runs",
                path=(*path, "random_search"),
            )
        )
    stopping = tuning.get("early_stopping")
    if isinstance(stopping, list):
        for index, item in enumerate(stopping):
            if isinstance(item, dict) and item.get("value") is None:
                problems.append(
                    Problem(
                        "`value` is required to upgrade an early-stopping entry: v1.1 stops "
                        "when the metric reaches it",
                        rule="legacy_early_stopping",
                        path=(*path, "early_stopping", index),
                    )
                )
    return problems
