"""The samplers of the ``bayes`` kind: Optuna's ``GPSampler``, or the same model on numpy.

``GPSampler`` is a Matern 5/2 Gaussian process with ARD lengthscales fitted to the data and log
expected improvement, on torch (imported only when a bayes study is built). It serves every
bayes matrix when torch is installed (the ``bayes`` extra). Without torch,
``GaussianProcessSampler`` runs the same model on numpy/scipy (``_gp``, which says why it is
kept, with the measurements), and the study says so. What a ``utilityFunction`` asks for beyond
that model (``ucb`` with ``kappa``, ``poi``, ``eps`` > 0, the RBF kernel, another ``nu``, a
``lengthScale``, restarts) is approximated by both, and loading says so with a located warning
(``specs/matrix/_matrix_warnings``). ``numWarmup`` and ``numIterations`` set the random candidates
and local searches of the acquisition in both.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, GPSampler
from optuna.study import Study
from optuna.trial import FrozenTrial

from polyaxon_prefect.search._samplers._encoder import Observations, SpaceSampler
from polyaxon_prefect.search._samplers._gp import GP, log_ei, optimize_acquisition
from polyaxon_prefect.search._samplers._optuna_space import OPTUNA_SCALARS
from polyaxon_prefect.specs import Bayes, UtilityFunction

__all__ = ["GaussianProcessSampler", "bayes_sampler"]

NO_TORCH = (
    "Optuna's GPSampler needs torch, which is not installed: using the built-in numpy "
    "Gaussian process instead (the same model: log-EI under a Matern 5/2 kernel), which is "
    "slower in more than a few dimensions; install the `bayes` extra "
    "(pip install 'polyaxon-prefect[bayes]', the CPU build of torch is enough) to use it"
)
"""The study's warning when bayes runs on ``GaussianProcessSampler``."""


class GaussianProcessSampler(SpaceSampler):
    """Bayesian optimisation without torch: ``n_startup`` random trials, then the maximiser of
    the log expected improvement under a GP (``_gp``) fitted to every completed trial.

    Running trials enter the fit at their predicted mean (the "kriging believer"), so parallel
    asks spread out instead of proposing the same point.
    """

    def __init__(
        self,
        space: Mapping[str, BaseDistribution],
        *,
        seed: int | None = None,
        n_startup: int = 10,
        num_warmup: int | None = None,
        num_iterations: int | None = None,
        deterministic: bool = False,
    ) -> None:
        super().__init__(space, seed)
        self.n_startup = n_startup
        self.num_warmup = 2048 if num_warmup is None else max(1, num_warmup)
        self.num_iterations = 5 if num_iterations is None else max(1, num_iterations)
        self.noise_floor = 1e-6 if deterministic else 1e-4
        self._theta: np.ndarray | None = None

    def _draws_at_random(self, number: int, completed: int) -> bool:
        return number < self.n_startup or completed < 2 or self._encoder.width == 0

    def _starts(self, dims: int) -> list[np.ndarray]:
        """Where the fit starts: unit lengthscales, and the previous fit when there is one."""
        starts = [np.concatenate([np.zeros(dims), [0.0, -6.0]])]
        if self._theta is not None and len(self._theta) == dims + 2:
            starts.append(self._theta)
        return starts

    def _suggest(self, observed: Observations, rng: np.random.Generator) -> dict[str, Any]:
        done, values, running = observed
        x = np.array([self._encoder.encode(p) for p in done])
        raw = np.asarray(values)
        y = (raw - float(raw.mean())) / (float(raw.std()) or 1.0)
        gp = GP()
        self._theta = gp.fit(x, y, self._starts(x.shape[1]), self.noise_floor)
        best = float(y.min())
        if running:
            xp = np.array([self._encoder.encode(p) for p in running])
            believed, _ = gp.predict(xp)
            gp.set(self._theta, np.vstack([x, xp]), np.concatenate([y, believed]))
        ranked = optimize_acquisition(
            lambda xs: log_ei(gp, xs, best),
            x,
            y,
            rng,
            num_warmup=self.num_warmup,
            num_iterations=self.num_iterations,
        )
        seen = {tuple(sorted(_hashable(p).items())) for p in done + running}
        for _score, point in ranked:
            params = self._encoder.decode(point)
            if tuple(sorted(_hashable(params).items())) not in seen:
                return params
        return self._encoder.decode(ranked[0][1])


def _hashable(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, OPTUNA_SCALARS) else repr(v) for k, v in params.items()}


class _OneThreadGPSampler(GPSampler):
    """Optuna's ``GPSampler`` with torch on one thread for the whole suggestion.

    GPSampler limits torch to one thread only while it fits the kernel and optimises the
    acquisition; the many small tensor operations around them still start OpenMP threads that
    fight NumPy's for the cores, which slows every suggestion on a busy machine. The previous
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
            with warnings.catch_warnings():
                # Polyaxon's ``numWarmup`` is any count; GPSampler draws that many Sobol points
                # and warns at every suggestion when it is not a power of 2: the draw is still
                # valid, so the user is not told a hundred times
                warnings.filterwarnings("ignore", "The balance properties of Sobol", UserWarning)
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


def _gp_sampler(
    seed: int, n_startup: int, utility: UtilityFunction | None, deterministic: bool
) -> BaseSampler:
    """Optuna's GPSampler, with Polyaxon's ``numWarmup``/``numIterations`` where given."""
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
    matrix: Bayes, distributions: Mapping[str, BaseDistribution], seed: int, deterministic: bool
) -> tuple[BaseSampler, list[str]]:
    """The sampler of a ``bayes`` matrix, and what the study should say about it.

    ``deterministic`` tells the Gaussian process that a repeated point gives the same value.
    """
    n_startup = int(matrix.num_initial_runs)
    utility = matrix.utility_function
    if not _torch_installed():
        sampler = GaussianProcessSampler(
            distributions,
            seed=seed,
            n_startup=n_startup,
            num_warmup=None if utility is None else utility.num_warmup,
            num_iterations=None if utility is None else utility.num_iterations,
            deterministic=deterministic,
        )
        return sampler, [NO_TORCH]
    notes = []
    if utility is None:
        notes.append(
            "bayes without `utilityFunction`: using Optuna's GPSampler, expected improvement "
            "(log-EI) under a Matern 5/2 Gaussian process"
        )
    return _gp_sampler(seed, n_startup, utility, deterministic), notes
