"""The legacy ``hptuning``/``settings`` section as a v1.1 ``matrix`` (and the inputs it feeds)."""

from __future__ import annotations

import math
from typing import Any

from polyaxon_prefect.legacy._convert_base import ConverterBase, Path, common_type, number
from polyaxon_prefect.legacy._schema_tuning import (
    DISTRIBUTION_KEYS,
    EarlyStopping,
    HPTuning,
    MatrixEntry,
    space_items,
)

__all__ = ["MatrixConverter"]

# the (legacy, v1.1) names of the bayes settings that carry over as they are
_GAUSSIAN_PROCESS_FIELDS = (
    ("kernel", "kernel"),
    ("length_scale", "lengthScale"),
    ("nu", "nu"),
    ("n_restarts_optimizer", "numRestartsOptimizer"),
)
_UTILITY_FUNCTION_FIELDS = (
    ("kappa", "kappa"),
    ("eps", "eps"),
    ("n_warmup", "numWarmup"),
    ("n_iter", "numIterations"),
)


def _renamed(legacy: object, fields: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """The ``fields`` that ``legacy`` sets, under their v1.1 names (in ``fields``' order)."""
    renamed: dict[str, Any] = {}
    for old, new in fields:
        value = getattr(legacy, old)
        if value is not None:
            renamed[new] = value
    return renamed


class MatrixConverter(ConverterBase):
    """The matrix part of the conversion of a legacy ``kind: group`` file."""

    def _matrix(self, tuning: HPTuning, path: Path) -> dict[str, Any]:
        params = {
            name: self._hp(entry, (*path, "matrix", name))
            for name, entry in (tuning.matrix or {}).items()
        }
        matrix: dict[str, Any]
        if tuning.random_search is not None:
            matrix = {"kind": "random", "numRuns": tuning.random_search.n_experiments}
            if tuning.seed is not None:
                matrix["seed"] = tuning.seed
        elif tuning.hyperband is not None:
            band = tuning.hyperband
            matrix = {
                "kind": "hyperband",
                "maxIterations": band.max_iter,
                "eta": number(band.eta),
                "resource": {"name": band.resource.name, "type": band.resource.type},
                "metric": {"name": band.metric.name, "optimization": band.metric.optimization},
            }
            if band.resume is not None:
                matrix["resume"] = band.resume
            if tuning.seed is not None:
                matrix["seed"] = tuning.seed
        elif tuning.bo is not None:
            matrix = self._bayes(tuning, path)
        else:
            matrix = {"kind": "grid"}
            if tuning.grid_search is not None and tuning.grid_search.n_experiments is not None:
                matrix["numRuns"] = tuning.grid_search.n_experiments
            if tuning.seed is not None:
                self.note((*path, "seed"), "grid search is deterministic; dropped")
        # legacy ran one experiment at a time unless told otherwise; v1.1 defaults to unlimited
        matrix["concurrency"] = tuning.concurrency if tuning.concurrency is not None else 1
        matrix["params"] = params
        stopping = [
            self._early_stopping(item, (*path, "early_stopping", index))
            for index, item in enumerate(tuning.early_stopping or [])
        ]
        if stopping:
            matrix["earlyStopping"] = stopping
        return matrix

    def _bayes(self, tuning: HPTuning, path: Path) -> dict[str, Any]:
        bo = tuning.bo
        assert bo is not None
        matrix: dict[str, Any] = {
            "kind": "bayes",
            "numInitialRuns": bo.n_initial_trials,
            "maxIterations": bo.n_iterations,
            "metric": {"name": bo.metric.name, "optimization": bo.metric.optimization},
        }
        function = bo.utility_function
        if function is not None:
            utility: dict[str, Any] = {
                "acquisitionFunction": function.acquisition_function or "ucb"
            }
            process = function.gaussian_process
            if process is not None:
                utility["gaussianProcess"] = _renamed(process, _GAUSSIAN_PROCESS_FIELDS)
            utility.update(_renamed(function, _UTILITY_FUNCTION_FIELDS))
            matrix["utilityFunction"] = utility
        if tuning.seed is not None:
            matrix["seed"] = tuning.seed
        return matrix

    def _hp(self, entry: MatrixEntry, path: Path) -> dict[str, Any]:
        key, value = entry.key, entry.value
        if key == "values":
            return {"kind": "choice", "value": list(value)}
        if key == "pvalues":
            return self._pchoice(value, (*path, "pvalues"))
        if key == "range" and isinstance(value, list) and len(value) > 3:
            self.note(
                (*path, "range"),
                f"a range is [start, stop, step], but {len(value)} "
                "numbers were given; read as a list of values (`choice`)",
            )
            return {"kind": "choice", "value": list(value)}
        if isinstance(value, dict):
            value = dict(value)
        return {"kind": key, "value": value}

    def _pchoice(self, value: list[list[Any]], path: Path) -> dict[str, Any]:
        """v1.1 wants probabilities that sum to 1; legacy sampled with numpy's multinomial,
        which gives any missing mass to the last value, so that is where it goes."""
        items = [list(item) for item in value]
        if len(items) == 1:
            self.note(path, "a single value is certain: written as a `choice`")
            return {"kind": "choice", "value": [items[0][0]]}
        total = math.fsum(item[1] for item in items)
        if total < 1 - 1e-9:
            last = round(1 - math.fsum(item[1] for item in items[:-1]), 12)
            self.note(
                path,
                f"probabilities summed to {total:g}; the missing {1 - total:g} goes to the last "
                f"value, {items[-1][0]!r}, as legacy sampling did",
            )
            items[-1][1] = last
        return {"kind": "pchoice", "value": items}

    def _early_stopping(self, item: EarlyStopping, path: Path) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "metric_early_stopping",
            "metric": item.metric,
            "value": number(item.value) if item.value is not None else None,
            "optimization": item.optimization,
        }
        policy = item.policy
        if policy is None:
            return out
        if policy.kind == "average":
            self.note(
                (*path, "policy"),
                "the `average` stopping policy has no v1.1 equivalent; "
                "dropped (the metric threshold is kept)",
            )
        elif policy.kind == "median":
            out["policy"] = {"kind": "median", "evaluationInterval": policy.evaluation_interval}
        else:
            out["policy"] = {
                "kind": "truncation",
                "percent": number(policy.percent),
                "evaluationInterval": policy.evaluation_interval,
            }
        return out

    def _add_matrix_inputs(self, component: dict[str, Any], tuning: HPTuning, path: Path) -> None:
        """Declare every matrix key as an input, so each trial's value is a valid param."""
        inputs: list[dict[str, Any]] = list(component.get("inputs") or [])
        by_name = {io["name"]: io for io in inputs}
        wanted: dict[str, str | None] = {
            name: _hp_type(entry) for name, entry in (tuning.matrix or {}).items()
        }
        if tuning.hyperband is not None:
            resource = tuning.hyperband.resource
            wanted.setdefault(resource.name, resource.type)
        for name, hp_type in wanted.items():
            if name not in by_name:
                io = {"name": name}
                if hp_type is not None:
                    io["type"] = hp_type
                inputs.append(io)
                continue
            io = by_name[name]
            declared = io.get("type")
            if {declared, hp_type} == {"int", "float"}:
                io["type"] = "float"
            elif hp_type is not None and declared not in (None, hp_type):
                self.note(
                    (*path, "matrix", name),
                    f"declared as `{declared}` but the matrix "
                    f"gives `{hp_type}` values; the input type was dropped",
                )
                io.pop("type", None)
        if inputs:
            rest = {k: v for k, v in component.items() if k != "inputs"}
            component.clear()
            component.update({"inputs": inputs, **rest})


def _hp_type(entry: MatrixEntry) -> str | None:
    key, value = entry.key, entry.value
    if key == "values":
        return common_type(value)
    if key == "pvalues":
        return common_type([item[0] for item in value])
    if key == "range":
        if isinstance(value, list) and len(value) > 3:
            return common_type(value)
        numbers = space_items("range", value)
        return "int" if all(isinstance(v, int) for v in numbers.values()) else "float"
    if key in DISTRIBUTION_KEYS or key in ("linspace", "logspace", "geomspace"):
        return "float"
    return None
