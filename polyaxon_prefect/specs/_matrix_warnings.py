"""What a searched matrix asks for that the search only approximates, as located warnings.

These are properties of the file (a Matern ``nu`` with no closed form, a normal prior Optuna
cannot express, a list of dates searched as categories), so they are
reported where the file is loaded: ``check`` shows the same warnings ``run`` shows, at the
line they are about, without importing Optuna. The search (``search/_samplers``) applies the
approximations these sentences describe and says nothing more about them.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

from polyaxon_prefect.exceptions import Problem

from ._dag import Dag
from ._matrix import Bayes, GaussianProcess, Matrix, UtilityFunction
from ._operation import Operation

__all__ = ["CLOSED_FORM_NUS", "QUANTILE_EPS", "matrix_warnings", "nearest_nu"]

CLOSED_FORM_NUS = (0.5, 1.5, 2.5)
"""The Matern smoothnesses with a closed form, the only ones the Gaussian process computes."""

QUANTILE_EPS = 1e-6
"""How far from 0 and 1 the quantile of a normal-family param stays (about +-4.75 sigma)."""

_SEARCHED = ("bayes", "hyperopt")
"""The matrix kinds whose params a sampler searches (the others enumerate or draw them)."""

_UNIFORM_KINDS = ("uniform", "quniform", "loguniform", "qloguniform")

Path = tuple[str | int, ...]


def nearest_nu(nu: float) -> float:
    """The closed-form Matern smoothness the search uses for ``nu``."""
    return min(CLOSED_FORM_NUS, key=lambda v: abs(v - nu))


def matrix_warnings(operation: Operation) -> list[Problem]:
    """The warnings of every matrix in ``operation``: its own and its DAG ops' (recursively),
    each with its path from the operation (unlocated: the loader adds file:line:col)."""
    return list(_walk(operation, ()))


def _walk(operation: Operation, prefix: Path) -> Iterator[Problem]:
    matrix = operation.matrix
    if matrix is not None and matrix.kind in _SEARCHED:
        for problem in _of_matrix(matrix):
            yield problem.prefixed((*prefix, "matrix"))
    component = operation.component
    run = component.run if component is not None else None
    if isinstance(run, Dag) and isinstance(run.operations, list):
        for index, op in enumerate(run.operations):
            yield from _walk(op, (*prefix, "component", "run", "operations", index))


def _warning(message: str, path: Path, hint: str, value: Any) -> Problem:
    return Problem(
        message, rule="search_approximation", path=path, value=value, hint=hint, severity="warning"
    )


def _of_matrix(matrix: Matrix) -> Iterator[Problem]:
    match matrix:
        case Bayes(
            utility_function=UtilityFunction(
                gaussian_process=GaussianProcess(kernel="matern", nu=nu)
            )
        ) if nu not in CLOSED_FORM_NUS:
            yield _warning(
                f"`nu: {nu:g}` has no closed form (only 0.5, 1.5 and 2.5 do): the Gaussian "
                f"process uses {nearest_nu(nu):g} instead",
                ("utilityFunction", "gaussianProcess", "nu"),
                "set `nu` to 0.5, 1.5 or 2.5",
                nu,
            )
    for name, hp in matrix.hp_params().items():
        yield from _of_param(name, hp)


def _of_param(name: str, hp: Any) -> Iterator[Problem]:
    path: Path = ("params", name)
    kind = hp.kind  # no `pchoice`: both searched kinds refuse it
    if hp.is_continuous and kind not in _UNIFORM_KINDS:
        yield _warning(
            f"`{name}` is a {kind}: Optuna has no normal prior, so the search works on its "
            f"quantile u in ({QUANTILE_EPS:g}, 1 - {QUANTILE_EPS:g}) and decodes loc + scale * "
            "inverse_cdf(u) (random draws keep the exact law, within about 4.75 sigma)",
            path,
            "a uniform or loguniform range searches the same values without the approximation",
            kind,
        )
    elif kind == "choice" and not getattr(hp, "is_ref", False):
        try:
            values = hp.to_values()
        except (ValueError, TypeError):  # a template, rendered at run time
            return
        if values and isinstance(values[0], date):
            yield _warning(
                f"`{name}` lists dates: the search treats them as categories",
                path,
                "dates have no order or distance to the sampler; list them as numbers to search "
                "between them",
                kind,
            )
