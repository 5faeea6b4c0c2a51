"""The sampler of the ``bayes`` kind: Optuna's ``GPSampler``, or its TPE when torch is missing.

``GPSampler`` is a Matern 5/2 Gaussian process with ARD lengthscales fitted to the data and log
expected improvement, on torch (imported only when a bayes study is built). It is used for
every bayes matrix: what a ``utilityFunction`` asks for beyond that (``ucb`` with ``kappa``,
``poi``, ``eps`` > 0, the RBF kernel, another ``nu``, a ``lengthScale``, restarts) is
approximated, and loading says so with a located warning (``specs/_matrix_warnings``).
``numWarmup`` and ``numIterations`` set its random candidates and local searches of the
acquisition. Without torch (an optional extra, ``polyaxon-prefect[bayes]``), bayes runs on
Optuna's multivariate TPE after the same ``numInitialRuns`` random trials, and the study says so.

**Why there is no Gaussian process of our own.** A numpy/scipy Gaussian process (about 600
lines) used to honour those settings exactly, and served bayes when torch was missing. It was
measured against the alternatives on ``benchmarks/hpo_quality.py``'s problems, the same five
seeds for each (10 random trials, then the sampler): the median best value (lower is better)
and the seconds each study took (on one busy two-core machine: compare them with each other
only).

- Branin, 50 trials (optimum 0.39789): GPSampler 0.39792 (9.1 s); numpy process with log-EI
  0.39806 (12.5 s); numpy process with Polyaxon's documented ``ucb``, ``kappa: 1.2``,
  ``nu: 1.9``: 0.40075 (14.0 s); TPE 0.41957 (0.1 s); random 1.07441.
- Hartmann-6, 100 trials (optimum -3.32237): GPSampler -3.32230 (5.6 s); numpy process with
  log-EI -3.20312 (34.6 s), with ``ucb`` -3.20313 (21.1 s); TPE -3.15267 (0.2 s); random
  -1.96838.

``GPSampler`` found better optima than the numpy process on both problems, with or without
the exact settings, in less time: approximating a ``utilityFunction`` with it loses nothing
measurable. Without torch, the numpy process was ahead of TPE by 0.02 on Branin and 0.05 on
Hartmann-6 (TPE's best Hartmann-6 seed, -3.24766, beat the process's median): a small margin
for 600 lines that copy what Optuna maintains, and one ``pip install`` of the extra closes it.
So bayes without torch warns and uses TPE.
"""

from __future__ import annotations

from typing import Any

from optuna.samplers import BaseSampler, GPSampler, TPESampler
from optuna.study import Study
from optuna.trial import FrozenTrial

__all__ = ["bayes_sampler"]

NO_TORCH = (
    "Optuna's GPSampler needs torch, which is not installed: bayes uses Optuna's TPE "
    "(multivariate) after the random runs instead; install the `bayes` extra "
    "(pip install 'polyaxon-prefect[bayes]', the CPU build of torch is enough) for the "
    "Gaussian process"
)
"""The study's warning when bayes cannot have its Gaussian process."""


class _OneThreadGPSampler(GPSampler):
    """Optuna's ``GPSampler`` with torch on one thread for the whole suggestion.

    GPSampler limits torch to one thread only while it fits the kernel and optimises the
    acquisition; the many small tensor operations around them still start OpenMP threads that
    fight NumPy's for the cores, which slows every suggestion on a busy machine. The previous
    thread count is restored after each suggestion, so trials run in this process keep theirs.
    """

    def sample_relative(self, study: Study, trial: FrozenTrial, search_space: Any) -> Any:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return super().sample_relative(study, trial, search_space)
        finally:
            torch.set_num_threads(threads)


def _torch_installed() -> bool:
    """Whether GPSampler can run here. torch is imported now, when a bayes study is built, so
    that its start-up cost is paid before the first trial rather than during a suggestion."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _gp_sampler(seed: int, n_startup: int, utility: Any, deterministic: bool) -> BaseSampler:
    import warnings

    from optuna.exceptions import ExperimentalWarning

    with warnings.catch_warnings():
        # ``deterministic_objective`` is set on purpose: no need to tell the user it is new
        warnings.simplefilter("ignore", ExperimentalWarning)
        sampler = _OneThreadGPSampler(
            seed=seed,
            n_startup_trials=max(1, n_startup),
            deterministic_objective=deterministic,
            # the search space is fixed: only single-valued params are drawn independently
            warn_independent_sampling=False,
        )
    if utility is not None:
        # Polyaxon's acquisition optimiser: ``numWarmup`` random points, then local searches
        # from ``numIterations`` starts; GPSampler's two knobs mean the same
        if utility.num_warmup is not None:
            sampler._n_preliminary_samples = max(1, int(utility.num_warmup))
        if utility.num_iterations is not None:
            sampler._n_local_search = max(2, int(utility.num_iterations))
    return sampler


def bayes_sampler(matrix: Any, seed: int, deterministic: bool) -> tuple[BaseSampler, list[str]]:
    """The sampler of a ``bayes`` matrix, and what the study should say about it.

    ``deterministic`` tells the Gaussian process that a repeated point gives the same value.
    """
    n_startup = int(matrix.num_initial_runs)
    utility = matrix.utility_function
    if not _torch_installed():
        tpe = TPESampler(
            seed=seed, n_startup_trials=n_startup, multivariate=True, constant_liar=True
        )
        return tpe, [NO_TORCH]
    notes = []
    if utility is None:
        notes.append(
            "bayes without `utilityFunction`: using Optuna's GPSampler, expected improvement "
            "(log-EI) under a Matern 5/2 Gaussian process"
        )
    return _gp_sampler(seed, n_startup, utility, deterministic), notes
