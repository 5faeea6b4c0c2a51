"""What a searched matrix asks for that the search only approximates, as located warnings.

These are properties of the file (a bayes ``utilityFunction`` that Optuna's ``GPSampler`` does
not honour, a normal prior Optuna cannot express, a list of dates searched as categories), so
they are reported where the file is loaded: ``check`` shows the same warnings ``run`` shows, at
the line they are about, without importing Optuna. The search (``search/_samplers``) applies the
approximations these sentences describe and says nothing more about them.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs._polyaxonfile import Dag, Operation
from polyaxon_prefect.specs.matrix._hp_base import PCHOICE_TOLERANCE
from polyaxon_prefect.specs.matrix._hyperparams import HpParam
from polyaxon_prefect.specs.matrix._matrix import Bayes, Matrix, UtilityFunction

__all__ = ["QUANTILE_EPS", "matrix_warnings", "utility_gaps"]

QUANTILE_EPS = 1e-6
"""How far from 0 and 1 the quantile of a normal-family param stays (about +-4.75 sigma)."""

_GP_SAMPLER_NU = 2.5
"""The only Matern smoothness of the search's Gaussian process (Optuna's ``GPSampler``)."""

_UNIFORM_KINDS = ("uniform", "quniform", "loguniform", "qloguniform")

Path = tuple[str | int, ...]


def utility_gaps(utility: UtilityFunction | None) -> list[str]:
    """The settings of a bayes ``utilityFunction`` that the search's one model (Optuna's
    ``GPSampler``, or the same on numpy without torch: log expected improvement, a Matern 5/2
    kernel whose lengthscales it fits) does not honour, spelled as in a file
    (``gaussianProcess`` defaults included); empty when it honours them all."""
    if utility is None:
        return []
    gaps = []
    if utility.acquisition_function == "ucb":
        gaps.append(f"acquisitionFunction: ucb (kappa: {utility.kappa:g})")
    elif utility.acquisition_function == "poi":
        gaps.append(f"acquisitionFunction: poi (eps: {utility.eps:g})")
    elif utility.eps:
        gaps.append(f"eps: {utility.eps:g}")
    process = utility.gaussian_process
    if process is not None:
        if process.kernel != "matern":
            gaps.append(f"kernel: {process.kernel}")
        elif float(process.nu) != _GP_SAMPLER_NU:
            gaps.append(f"nu: {float(process.nu):g}")
        if float(process.length_scale) != 1.0:
            gaps.append(f"lengthScale: {float(process.length_scale):g}")
        if process.num_restarts_optimizer:
            gaps.append(f"numRestartsOptimizer: {process.num_restarts_optimizer}")
    return gaps


def matrix_warnings(operation: Operation) -> list[Problem]:
    """The warnings of every matrix in ``operation``: its own and its DAG ops' (recursively),
    each with its path from the operation (unlocated: the loader adds file:line:col)."""
    return list(_walk(operation, ()))


def _walk(operation: Operation, prefix: Path) -> Iterator[Problem]:
    matrix = operation.matrix
    if matrix is not None:
        for problem in _pchoice_remainders(matrix):
            yield problem.prefixed((*prefix, "matrix"))
    if matrix is not None and matrix.searches_params:
        for problem in _of_matrix(matrix):
            yield problem.prefixed((*prefix, "matrix"))
    component = operation.component
    run = component.run if component is not None else None
    if isinstance(run, Dag) and isinstance(run.operations, list):
        for index, op in enumerate(run.operations):
            yield from _walk(op, (*prefix, "component", "run", "operations", index))


def _warning(message: str, path: Path, hint: str, value: object) -> Problem:
    return Problem(
        message, rule="search_approximation", path=path, value=value, hint=hint, severity="warning"
    )


def _pchoice_remainders(matrix: Matrix) -> Iterator[Problem]:
    """A ``pchoice`` whose probabilities sum to less than 1 is drawn as Polyaxon draws it (the
    last value takes the rest): legal, but rarely what its author meant, so it is said."""
    for name, hp in matrix.hp_params().items():
        if hp.kind != "pchoice" or hp.is_ref:
            continue
        spec = hp.spec
        if spec.written_sum >= 1 - PCHOICE_TOLERANCE:
            continue
        missing = 1 - spec.written_sum
        terms = " + ".join(repr(item[1]) for item in hp.value)
        yield Problem(
            f"`{name}` pchoice probabilities sum to {spec.written_sum:.6g} ({terms}), not 1: "
            f"as in Polyaxon, the last value {spec.values[-1]!r} takes the missing {missing:.6g} "
            f"and is drawn with probability {spec.probabilities[-1]:.6g}",
            rule="pchoice_sum",
            path=("params", name, "value"),
            value=[list(item) for item in hp.value],
            hint="write the probabilities so that they sum to 1 to say what is drawn",
            severity="warning",
        )


def _of_matrix(matrix: Matrix) -> Iterator[Problem]:
    gaps = utility_gaps(matrix.utility_function) if isinstance(matrix, Bayes) else []
    if gaps:
        yield _warning(
            f"`utilityFunction` asks for {', '.join(gaps)}: the search uses log expected "
            "improvement under a Matern 5/2 kernel with lengthscales fitted to the data "
            "(Optuna's GPSampler)",
            ("utilityFunction",),
            "drop these settings (or `utilityFunction`) to search with nothing approximated",
            gaps,
        )
    for name, hp in matrix.hp_params().items():
        yield from _of_param(name, hp)


def _of_param(name: str, hp: HpParam) -> Iterator[Problem]:
    path: Path = ("params", name)
    kind = hp.kind  # no `pchoice`: both searched kinds refuse it (`_pchoice_remainders`)
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
