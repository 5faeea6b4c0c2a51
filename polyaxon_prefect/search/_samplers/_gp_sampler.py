"""The Gaussian-process samplers of the ``bayes`` kind.

Optuna's ``GPSampler`` (a Matern 5/2 Gaussian process with ARD lengthscales and log expected
improvement, on torch, imported only when a bayes study is built) whenever it can honour the
matrix's ``utilityFunction``: none given, or ``ei`` with ``eps: 0`` and, when a
``gaussianProcess`` is given, the Matern 5/2 kernel with the default ``lengthScale`` and
``numRestartsOptimizer``. ``numWarmup`` and ``numIterations`` set its random candidates and local
searches of the acquisition. Anything else (``ucb`` with ``kappa``, ``poi``, ``eps`` > 0, the RBF
kernel, another ``nu``, restarts) goes to ``GaussianProcessSampler``, a Gaussian process on
numpy/scipy (``_gp``) that honours every setting exactly; it is also the fallback, with a
warning, when torch is not installed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, GPSampler
from optuna.study import Study
from optuna.trial import FrozenTrial

from polyaxon_prefect.search._samplers._encoder import SpaceSampler, observations, trial_rng
from polyaxon_prefect.search._samplers._gp import GP, acquisition, optimize_acquisition
from polyaxon_prefect.search._samplers._space import OPTUNA_SCALARS
from polyaxon_prefect.specs._matrix_warnings import nearest_nu

__all__ = ["GaussianProcessSampler", "bayes_sampler"]


class GaussianProcessSampler(SpaceSampler):
    """Bayesian optimisation as Polyaxon's ``bayes``: ``n_startup`` random trials, then the
    maximiser of the acquisition function under a GP fitted to every completed trial.

    Running trials enter the fit at their predicted mean (the "kriging believer"), so parallel
    asks spread out instead of proposing the same point.
    """

    def __init__(
        self,
        space: Mapping[str, BaseDistribution],
        *,
        seed: int | None = None,
        n_startup: int = 10,
        acquisition: str = "ei",
        kappa: float = 2.576,
        eps: float = 0.0,
        kernel: str = "matern",
        nu: float = 2.5,
        length_scale: float = 1.0,
        num_restarts: int = 0,
        num_warmup: int | None = None,
        num_iterations: int | None = None,
        deterministic: bool = False,
    ) -> None:
        super().__init__(space, seed)
        self.n_startup = n_startup
        self.acquisition = acquisition
        self.kappa = kappa
        self.eps = eps
        self.kernel = kernel
        self.nu = nu
        self.length_scale = length_scale
        self.num_restarts = num_restarts
        self.num_warmup = 2048 if num_warmup is None else max(1, num_warmup)
        self.num_iterations = 5 if num_iterations is None else max(1, num_iterations)
        self.noise_floor = 1e-6 if deterministic else 1e-4
        self._theta: np.ndarray | None = None

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        rng = trial_rng(self._seed, trial.number)
        if not search_space:
            return {}
        done, values, running = observations(study, self._space)
        if trial.number < self.n_startup or len(done) < 2 or self._encoder.width == 0:
            return self._encoder.random(rng)
        return self._suggest(done, values, running, rng)

    def _starts(self, dims: int, rng: np.random.Generator) -> list[np.ndarray]:
        default = np.concatenate([np.full(dims, math.log(self.length_scale)), [0.0, -6.0]])
        starts = [default]
        if self._theta is not None and len(self._theta) == dims + 2:
            starts.append(self._theta)
        for _ in range(self.num_restarts):
            starts.append(
                np.concatenate(
                    [rng.uniform(math.log(0.05), math.log(2.0), dims), [0.0, rng.uniform(-9, -2)]]
                )
            )
        return starts

    def _suggest(
        self,
        done: list[dict[str, Any]],
        values: list[float],
        running: list[dict[str, Any]],
        rng: np.random.Generator,
    ) -> dict[str, Any]:
        x = np.array([self._encoder.encode(p) for p in done])
        raw = np.asarray(values)
        center, scale = float(raw.mean()), float(raw.std()) or 1.0
        y = (raw - center) / scale
        gp = GP(self.kernel, self.nu)
        self._theta = gp.fit(x, y, self._starts(x.shape[1], rng), self.noise_floor)
        best = float(y.min())
        if running:
            xp = np.array([self._encoder.encode(p) for p in running])
            believed, _ = gp.predict(xp)
            gp.set(self._theta, np.vstack([x, xp]), np.concatenate([y, believed]))

        def score(xs: np.ndarray) -> np.ndarray:
            return acquisition(
                gp, xs, best, scale, kind=self.acquisition, kappa=self.kappa, eps=self.eps
            )

        ranked = optimize_acquisition(
            score, x, y, rng, num_warmup=self.num_warmup, num_iterations=self.num_iterations
        )
        seen = {tuple(sorted(_hashable(p).items())) for p in done + running}
        for _score, point in ranked:
            params = self._encoder.decode(point)
            if tuple(sorted(_hashable(params).items())) not in seen:
                return params
        return self._encoder.decode(ranked[0][1])


def _hashable(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, OPTUNA_SCALARS) else repr(v) for k, v in params.items()}


# ---------------------------------------------------------------------------------------------
# Which sampler a bayes matrix gets

_GP_SAMPLER_NU = 2.5
"""The only Matern smoothness Optuna's ``GPSampler`` has."""


def _gp_sampler_gaps(utility: Any) -> list[str]:
    """The ``utilityFunction`` settings Optuna's ``GPSampler`` cannot honour (empty: it can)."""
    if utility is None:
        return []
    gaps = []
    if utility.acquisition_function == "ucb":
        gaps.append(f"acquisitionFunction=ucb (kappa={utility.kappa:g})")
    elif utility.acquisition_function == "poi":
        gaps.append(f"acquisitionFunction=poi (eps={utility.eps:g})")
    elif utility.eps:
        gaps.append(f"ei with eps={utility.eps:g}")
    process = utility.gaussian_process
    if process is not None:
        if process.kernel != "matern":
            gaps.append(f"kernel={process.kernel}")
        elif float(process.nu) != _GP_SAMPLER_NU:
            gaps.append(f"nu={float(process.nu):g}")
        if float(process.length_scale) != 1.0:
            gaps.append(f"lengthScale={float(process.length_scale):g}")
        if process.num_restarts_optimizer:
            gaps.append(f"numRestartsOptimizer={process.num_restarts_optimizer}")
    return gaps


class _OneThreadGPSampler(GPSampler):
    """Optuna's ``GPSampler`` with torch on one thread for the whole suggestion.

    GPSampler limits torch to one thread only while it fits the kernel and optimises the
    acquisition; the many small tensor operations around them still start OpenMP threads that
    fight NumPy's for the cores (three times slower on a busy 2-core machine). The previous
    thread count is restored after each suggestion, so trials run in this process keep theirs.

    It keeps the settings it was built from as public attributes, as ``GaussianProcessSampler``
    does: ``n_startup``, ``deterministic``, ``num_warmup`` and ``num_iterations`` (None: GPSampler's
    own number).
    """

    def __init__(
        self,
        *,
        seed: int,
        n_startup: int,
        deterministic: bool,
        num_warmup: int | None = None,
        num_iterations: int | None = None,
    ) -> None:
        import warnings as _warnings

        from optuna.exceptions import ExperimentalWarning

        with _warnings.catch_warnings():
            # ``deterministic_objective`` is set on purpose: no need to tell the user it is new
            _warnings.simplefilter("ignore", ExperimentalWarning)
            super().__init__(
                seed=seed,
                n_startup_trials=n_startup,
                deterministic_objective=deterministic,
                # the search space is fixed: only single-valued params are drawn independently
                warn_independent_sampling=False,
            )
        self.n_startup = n_startup
        self.deterministic = deterministic
        self.num_warmup = num_warmup
        self.num_iterations = num_iterations
        # Polyaxon's acquisition optimiser: ``numWarmup`` random points, then local searches
        # from ``numIterations`` starts; GPSampler's two knobs mean the same
        if num_warmup is not None:
            self._n_preliminary_samples = num_warmup
        if num_iterations is not None:
            self._n_local_search = num_iterations

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return super().sample_relative(study, trial, search_space)
        finally:
            torch.set_num_threads(threads)


def _optuna_gp_sampler(
    seed: int, n_startup: int, utility: Any, deterministic: bool
) -> BaseSampler | None:
    """Optuna's ``GPSampler``, or None when torch (which it needs) cannot be imported."""
    try:
        import torch  # noqa: F401  (GPSampler imports it lazily, at its first use)
    except ImportError:
        return None
    num_warmup = num_iterations = None
    if utility is not None:
        if utility.num_warmup is not None:
            num_warmup = max(1, int(utility.num_warmup))
        if utility.num_iterations is not None:
            num_iterations = max(2, int(utility.num_iterations))
    return _OneThreadGPSampler(
        seed=seed,
        n_startup=max(1, n_startup),
        deterministic=deterministic,
        num_warmup=num_warmup,
        num_iterations=num_iterations,
    )


def bayes_sampler(
    matrix: Any, distributions: Mapping[str, BaseDistribution], seed: int, deterministic: bool
) -> tuple[BaseSampler, list[str]]:
    n_startup = int(matrix.num_initial_runs)
    utility = matrix.utility_function
    warnings: list[str] = []
    if not _gp_sampler_gaps(utility):
        sampler = _optuna_gp_sampler(seed, n_startup, utility, deterministic)
        if sampler is not None:
            if utility is None:
                warnings.append(
                    "bayes without `utilityFunction`: using Optuna's GPSampler, expected "
                    "improvement (log-EI) under a Matern 5/2 Gaussian process"
                )
            return sampler, warnings
        warnings.append(
            "Optuna's GPSampler needs torch, which is not installed: using the built-in "
            "numpy Gaussian process instead (log-EI under a Matern 5/2 kernel), which searches "
            "less well in more than a few dimensions; install torch (the CPU build) to use it"
        )
    options: dict[str, Any] = {"n_startup": n_startup, "deterministic": deterministic}
    if utility is None:
        options.update(kernel="matern", nu=_GP_SAMPLER_NU)
    else:
        options.update(
            acquisition=utility.acquisition_function,
            num_warmup=utility.num_warmup,
            num_iterations=utility.num_iterations,
        )
        if utility.kappa is not None:
            options["kappa"] = float(utility.kappa)
        if utility.eps is not None:
            options["eps"] = float(utility.eps)
        process = utility.gaussian_process
        if process is None:
            options.update(kernel="matern", nu=_GP_SAMPLER_NU)
        else:
            # another `nu` has no closed form: the nearest one (loading warns about it)
            options.update(
                kernel=process.kernel,
                nu=nearest_nu(float(process.nu)),
                length_scale=float(process.length_scale),
                num_restarts=int(process.num_restarts_optimizer),
            )
    return GaussianProcessSampler(distributions, seed=seed, **options), warnings
