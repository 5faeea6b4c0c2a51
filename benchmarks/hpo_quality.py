"""How good the search is: median best value over seeds on two classic test functions.

The matrices are built from the spec models exactly as a Polyaxonfile would give them, and a
``SweepStudy`` (in-memory storage) is driven with ask/tell, the objective computed in-process:
this measures the search, not Prefect.

- Branin (2-d, 50 trials; global minimum 0.397887);
- Hartmann-6 (6-d, 100 trials; global minimum -3.32237).

Searchers: ``bayes`` (a matrix without ``utilityFunction``: 10 random trials, then Optuna's
``GPSampler``, as users get it when torch is installed), ``hyperopt`` ``tpe`` (Optuna's TPE,
multivariate, constant liar) and ``random``. Targets (the process exits non-zero when one is
missed): bayes on Branin <= 0.40, bayes on Hartmann-6 <= -3.25, and random clearly behind bayes
on both.

Usage::

    python benchmarks/hpo_quality.py [--seeds 10] [--quick]

``--quick`` runs 3 seeds (targets still checked).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from polyaxon_prefect.search._optuna._study import SweepStudy
from polyaxon_prefect.specs.matrix._matrix import Matrix

BRANIN_OPTIMUM = 0.397887
HARTMANN_OPTIMUM = -3.32237
TARGETS = {"branin": 0.40, "hartmann6": -3.25}

_A = np.array(
    [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
     [17, 8, 0.05, 10, 0.1, 14]]
)  # fmt: skip
_P = 1e-4 * np.array(
    [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
     [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]
)  # fmt: skip
_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


def branin(p: dict[str, float]) -> float:
    x1, x2 = p["x1"], p["x2"]
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


def hartmann6(p: dict[str, float]) -> float:
    x = np.array([p[f"x{i}"] for i in range(6)])
    return -float(np.sum(_ALPHA * np.exp(-np.sum(_A * (x - _P) ** 2, axis=1))))


PROBLEMS: dict[str, tuple[Callable[[dict[str, float]], float], dict[str, Any], int]] = {
    "branin": (
        branin,
        {"x1": {"kind": "uniform", "value": [-5, 10]}, "x2": {"kind": "uniform", "value": [0, 15]}},
        50,
    ),
    "hartmann6": (
        hartmann6,
        {f"x{i}": {"kind": "uniform", "value": [0, 1]} for i in range(6)},
        100,
    ),
}


def _matrix(searcher: str, params: dict[str, Any], trials: int, seed: int) -> Any:
    metric = {"name": "loss", "optimization": "minimize"}
    if searcher == "bayes":
        data = {"kind": "bayes", "numInitialRuns": 10, "maxIterations": trials - 10}
        data["metric"] = metric
    elif searcher == "hyperopt-tpe":
        data = {"kind": "hyperopt", "algorithm": "tpe", "numRuns": trials, "metric": metric}
    else:
        data = {"kind": "random", "numRuns": trials}
    return TypeAdapter(Matrix).validate_python({**data, "params": params, "seed": seed})


def run_one(searcher: str, problem: str, seed: int) -> float:
    objective, params, trials = PROBLEMS[problem]
    matrix = _matrix(searcher, params, trials, seed)
    name = f"{problem}-{searcher}-{seed}-{time.monotonic_ns()}"
    study = SweepStudy.open(matrix, study_name=name, storage=":memory:")
    best = math.inf
    while (suggestion := study.ask()) is not None:
        value = objective(suggestion.params)
        best = min(best, value)
        study.tell(suggestion.number, status="succeeded", value=value)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 seeds")
    args = parser.parse_args(argv)
    seeds = 3 if args.quick else args.seeds
    if seeds < 1:
        parser.error("--seeds must be at least 1")
    optima = {"branin": BRANIN_OPTIMUM, "hartmann6": HARTMANN_OPTIMUM}
    medians: dict[tuple[str, str], float] = {}
    print(f"median best value over {seeds} seeds (lower is better)")
    probe = SweepStudy.open(
        _matrix("bayes", PROBLEMS["branin"][1], 50, 0),
        study_name=f"probe-{time.monotonic_ns()}",
        storage=":memory:",
    )
    print(f"bayes: {type(probe._study.sampler).__name__}")
    for note in probe.warnings:
        print(f"  note: {note}")
    print()
    print(f"{'problem':<10} {'trials':>6} {'optimum':>9} {'target':>7} {'searcher':<13} "
          f"{'median':>9} {'min':>9} {'max':>9} {'s/study':>8}")  # fmt: skip
    for problem, (_objective, _params, trials) in PROBLEMS.items():
        for searcher in ("bayes", "hyperopt-tpe", "random"):
            started = time.perf_counter()
            bests = [run_one(searcher, problem, seed) for seed in range(seeds)]
            per_study = (time.perf_counter() - started) / seeds
            median = statistics.median(bests)
            medians[(problem, searcher)] = median
            target = f"{TARGETS[problem]:.2f}" if searcher == "bayes" else ""
            print(
                f"{problem:<10} {trials:>6} {optima[problem]:>9.5f} {target:>7} {searcher:<13} "
                f"{median:>9.5f} {min(bests):>9.5f} {max(bests):>9.5f} {per_study:>8.2f}",
                flush=True,
            )
    missed = []
    for problem, target in TARGETS.items():
        bayes, random = medians[(problem, "bayes")], medians[(problem, "random")]
        if bayes > target:
            missed.append(f"bayes on {problem}: {bayes:.5f} > {target}")
        gap = abs(optima[problem]) * 0.1
        if random < bayes + gap:
            missed.append(f"random on {problem} ({random:.5f}) is not far behind bayes")
    print()
    for line in missed:
        print(f"MISSED: {line}")
    print("all targets met" if not missed else f"{len(missed)} target(s) missed")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
