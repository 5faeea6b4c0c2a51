"""Optuna samplers for the searching matrix kinds (``bayes``, ``hyperopt``) and their space.

Polyaxon's hyper-parameters become Optuna distributions (``optuna_space``); each distribution comes
with a decoder back to the Polyaxon value, so laws Optuna cannot express are still honoured where
it matters: ``normal``-family params are searched through their quantile (a uniform ``u`` that
decodes to ``loc + scale * inverse_cdf(u)``, so a random draw has exactly the normal law), the
``q`` kinds floor after drawing, ``loguniform`` bounds are natural logs.

Samplers:

- ``bayes``: Optuna's ``GPSampler`` (a Matern 5/2 Gaussian process with ARD lengthscales and
  log expected improvement, on torch, imported only when a bayes study is built) whenever it
  can honour the matrix's ``utilityFunction``: none given, or ``ei`` with ``eps: 0`` and, when a
  ``gaussianProcess`` is given, the Matern 5/2 kernel with the default ``lengthScale`` and
  ``numRestartsOptimizer``. ``numWarmup`` and ``numIterations`` set its random candidates and
  local searches of the acquisition. Anything else (``ucb`` with ``kappa``, ``poi``, ``eps`` > 0,
  the RBF kernel, another ``nu``, restarts) goes to ``GaussianProcessSampler``, a Gaussian
  process on numpy/scipy that honours every setting exactly; it is also the fallback, with a
  warning, when torch is not installed.
- ``hyperopt``: ``tpe`` is Optuna's ``TPESampler`` with ``multivariate`` and ``constant_liar``
  spelled out (their defaults changed in Optuna 5), ``rand`` its ``RandomSampler``, and
  ``anneal`` the small ``AnnealSampler`` below, after hyperopt's ``anneal.suggest``.

The samplers of this module draw from a generator seeded by ``(seed, trial number)``, so a sweep
shared by two processes, or resumed, makes the same choices as one that ran in one go. Optuna's
samplers are seeded once: a sweep run in one go is reproducible from its seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from statistics import NormalDist
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution
from optuna.samplers import BaseSampler, GPSampler, RandomSampler, TPESampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from polyaxon_prefect.search._space import hp_values

__all__ = [
    "AnnealSampler",
    "Dimension",
    "GaussianProcessSampler",
    "build_sampler",
    "optuna_space",
]

_QUANTILE_EPS = 1e-6
"""How far from 0 and 1 the quantile of a normal-family param stays (about +-4.75 sigma)."""

_OPTUNA_SCALARS = (type(None), bool, int, float, str)


@dataclass(frozen=True)
class Dimension:
    """One searched param: its Optuna distribution and how a drawn value becomes Polyaxon's."""

    name: str
    kind: str
    distribution: BaseDistribution
    decode: Callable[[Any], Any]


def _floor(q: float) -> Callable[[float], float]:
    return lambda x: float(f"{math.floor(x / q) * q:.12g}")


def _dimension(name: str, hp: Any, warnings: list[str]) -> Dimension:
    kind = hp.kind
    values = hp_values(hp)
    if values is not None:
        if kind == "pchoice":
            warnings.append(
                f"`{name}` is a pchoice: its weights only shape random draws; the search treats "
                "it as a plain categorical"
            )
        scalar = all(isinstance(v, _OPTUNA_SCALARS) and not isinstance(v, date) for v in values)
        if scalar and len({(type(v), v) for v in values}) == len(values):
            return Dimension(name, kind, CategoricalDistribution(tuple(values)), lambda v: v)
        table = list(values)
        return Dimension(
            name, kind, CategoricalDistribution(tuple(range(len(table)))), lambda i: table[i]
        )
    spec = hp.spec
    if kind in ("uniform", "quniform"):
        decode = _floor(spec.q) if spec.q is not None else float
        return Dimension(name, kind, FloatDistribution(spec.low, spec.high), decode)
    if kind in ("loguniform", "qloguniform"):
        dist = FloatDistribution(math.exp(spec.low), math.exp(spec.high), log=True)
        return Dimension(name, kind, dist, _floor(spec.q) if spec.q is not None else float)
    # normal family: searched through the quantile u of the normal law.
    warnings.append(
        f"`{name}` is a {kind}: Optuna has no normal prior, so the search works on its quantile "
        f"u in ({_QUANTILE_EPS:g}, 1 - {_QUANTILE_EPS:g}) and decodes loc + scale * "
        "inverse_cdf(u) (random draws keep the exact law, within about 4.75 sigma)"
    )
    normal = NormalDist(spec.loc, spec.scale)
    log = kind in ("lognormal", "qlognormal")
    q = spec.q

    def decode(u: float) -> float:
        x = normal.inv_cdf(min(max(u, _QUANTILE_EPS), 1 - _QUANTILE_EPS))
        if log:
            x = math.exp(x)
        return _floor(q)(x) if q is not None else float(x)

    return Dimension(name, kind, FloatDistribution(_QUANTILE_EPS, 1 - _QUANTILE_EPS), decode)


def optuna_space(params: Mapping[str, Any]) -> tuple[dict[str, Dimension], list[str]]:
    """The Optuna search space of a matrix's params, in file order, and what it approximates."""
    warnings: list[str] = []
    space = {name: _dimension(name, hp, warnings) for name, hp in params.items()}
    for name, dim in space.items():
        if isinstance(dim.distribution, CategoricalDistribution):
            first = dim.decode(dim.distribution.choices[0])
            if isinstance(first, date | datetime):
                warnings.append(f"`{name}` lists dates: the search treats them as categories")
    return space, warnings


# ---------------------------------------------------------------------------------------------
# Encoding of a search space into the unit cube (shared by the GP and anneal samplers)


class _Encoder:
    """Maps params to ``[0, 1]^D`` and back: floats (log-aware), numeric categories as one
    ordinal axis snapped to the nearest value, other categories one-hot (decoded by argmax)."""

    def __init__(self, space: Mapping[str, BaseDistribution]) -> None:
        self.space = dict(space)
        self.slots: list[tuple[str, str, Any]] = []  # (name, how, extra)
        width = 0
        for name, dist in self.space.items():
            if isinstance(dist, CategoricalDistribution):
                choices = dist.choices
                numeric = all(
                    isinstance(c, int | float) and not isinstance(c, bool) for c in choices
                )
                if len(choices) == 1:
                    self.slots.append((name, "const", (width, width)))
                elif numeric:
                    self.slots.append((name, "ordinal", (width, width + 1)))
                    width += 1
                else:
                    self.slots.append((name, "onehot", (width, width + len(choices))))
                    width += len(choices)
            else:
                self.slots.append((name, "float", (width, width + 1)))
                width += 1
        self.width = width

    def _float_bounds(self, dist: Any) -> tuple[float, float, bool]:
        if dist.log:
            return math.log(dist.low), math.log(dist.high), True
        return float(dist.low), float(dist.high), False

    def encode(self, params: Mapping[str, Any]) -> np.ndarray:
        x = np.zeros(self.width)
        for name, how, (start, _stop) in self.slots:
            dist = self.space[name]
            value = params[name]
            if how == "float":
                low, high, log = self._float_bounds(dist)
                v = math.log(value) if log else float(value)
                x[start] = 0.0 if high == low else (v - low) / (high - low)
            elif how == "ordinal":
                lo, hi = min(dist.choices), max(dist.choices)
                x[start] = 0.0 if hi == lo else (value - lo) / (hi - lo)
            elif how == "onehot":
                x[start + dist.choices.index(value)] = 1.0
        return x

    def decode(self, x: np.ndarray) -> dict[str, Any]:
        params: dict[str, Any] = {}
        for name, how, (start, stop) in self.slots:
            dist = self.space[name]
            if how == "const":
                params[name] = dist.choices[0]
            elif how == "float":
                low, high, log = self._float_bounds(dist)
                v = low + float(np.clip(x[start], 0.0, 1.0)) * (high - low)
                v = math.exp(v) if log else v
                v = min(max(v, dist.low), dist.high)
                if isinstance(dist, optuna.distributions.IntDistribution):
                    v = round(v)
                params[name] = v
            elif how == "ordinal":
                lo, hi = min(dist.choices), max(dist.choices)
                target = lo + float(x[start]) * (hi - lo)
                params[name] = min(dist.choices, key=lambda c, t=target: abs(c - t))
            else:
                params[name] = dist.choices[int(np.argmax(x[start:stop]))]
        return params

    def random(self, rng: np.random.Generator) -> dict[str, Any]:
        """A uniform draw over the space (categories uniform, floats uniform in their scale)."""
        params: dict[str, Any] = {}
        for name, _how, _slot in self.slots:
            dist = self.space[name]
            if isinstance(dist, CategoricalDistribution):
                params[name] = dist.choices[int(rng.integers(len(dist.choices)))]
            else:
                params[name] = self.decode_one(name, rng.uniform())
        return params

    def decode_one(self, name: str, u: float) -> Any:
        """The value of one float or ordinal param at unit coordinate ``u``."""
        dist = self.space[name]
        if isinstance(dist, CategoricalDistribution):
            lo, hi = min(dist.choices), max(dist.choices)
            target = lo + u * (hi - lo)
            return min(dist.choices, key=lambda c: abs(c - target))
        low, high, log = self._float_bounds(dist)
        v = low + u * (high - low)
        v = math.exp(v) if log else v
        return min(max(v, dist.low), dist.high)


def _trial_rng(seed: int | None, number: int) -> np.random.Generator:
    return np.random.default_rng([seed if seed is not None else 0, number])


def _observations(
    study: Study, space: Mapping[str, BaseDistribution]
) -> tuple[list[dict[str, Any]], list[float], list[dict[str, Any]]]:
    """Completed params and values (signed so that smaller is better), and running params."""
    sign = -1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0
    done, values, running = [], [], []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING)):
        if not all(name in trial.params for name in space):
            continue
        params = {name: trial.params[name] for name in space}
        if trial.state == TrialState.COMPLETE and trial.value is not None:
            if math.isfinite(trial.value):
                done.append(params)
                values.append(sign * float(trial.value))
        elif trial.state == TrialState.RUNNING:
            running.append(params)
    return done, values, running


class _SpaceSampler(BaseSampler):
    """A sampler over a search space fixed up front; params outside it are drawn at random."""

    def __init__(self, space: Mapping[str, BaseDistribution], seed: int | None) -> None:
        self._space = dict(space)
        self._seed = seed
        self._encoder = _Encoder(self._space)
        self._fallback = RandomSampler(seed=seed)

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return dict(self._space)

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)

    def reseed_rng(self) -> None:
        self._fallback.reseed_rng()


# ---------------------------------------------------------------------------------------------
# Gaussian process


def _kernel(
    x1: np.ndarray, x2: np.ndarray, lengths: np.ndarray, kind: str, nu: float
) -> tuple[np.ndarray, np.ndarray]:
    """The unit-variance kernel matrix and ``g`` with dk/dlog(l_j) = g * diff_j**2 / l_j**2."""
    diff = (x1[:, None, :] - x2[None, :, :]) / lengths
    r2 = np.sum(diff * diff, axis=-1)
    if kind == "rbf":
        k = np.exp(-0.5 * r2)
        return k, k
    r = np.sqrt(np.maximum(r2, 1e-30))
    if nu == 0.5:
        e = np.exp(-r)
        return e, e / r
    if nu == 1.5:
        s = math.sqrt(3.0) * r
        e = np.exp(-s)
        return (1.0 + s) * e, 3.0 * e
    s = math.sqrt(5.0) * r
    e = np.exp(-s)
    return (1.0 + s + s * s / 3.0) * e, (5.0 / 3.0) * (1.0 + s) * e


class _GP:
    """A zero-mean GP on standardised targets with ARD lengthscales, fitted by type-II ML."""

    def __init__(self, kind: str, nu: float) -> None:
        self.kind = kind
        self.nu = nu

    def _nll(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        d = x.shape[1]
        lengths = np.exp(theta[:d])
        amp = math.exp(theta[d])
        noise = math.exp(theta[d + 1])
        k, g = _kernel(x, x, lengths, self.kind, self.nu)
        n = len(y)
        cov = amp * k + (noise + 1e-9) * np.eye(n)
        from scipy.linalg import cho_solve

        try:
            chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            return 1e10, np.zeros_like(theta)
        alpha = cho_solve((chol, True), y)
        nll = 0.5 * y @ alpha + np.log(np.diag(chol)).sum() + 0.5 * n * math.log(2 * math.pi)
        inv = cho_solve((chol, True), np.eye(n))
        w = np.outer(alpha, alpha) - inv
        grad = np.empty_like(theta)
        sq = (x[:, None, :] - x[None, :, :]) ** 2 / lengths**2
        grad[:d] = 0.5 * np.einsum("ab,abj->j", w * (amp * g), sq)
        grad[d] = 0.5 * np.sum(w * (amp * k))
        grad[d + 1] = 0.5 * noise * np.trace(w)
        # weak priors (the shapes Optuna's GPSampler uses): inverse squared lengthscales near
        # 1, a gamma(2, 1) signal variance and a gamma(1.1, 30) noise, all in log coordinates
        up, down = np.exp(2 * theta[:d]), np.exp(-2 * theta[:d])
        nll += 0.1 * np.sum(up + down) - theta[d] + amp - 0.1 * theta[d + 1] + 30 * noise
        grad_prior = np.concatenate([0.2 * (up - down), [amp - 1.0, 30 * noise - 0.1]])
        return float(nll), -grad + grad_prior

    def fit(
        self,
        x: np.ndarray,
        y: np.ndarray,
        starts: Sequence[np.ndarray],
        noise_floor: float,
    ) -> np.ndarray:
        from scipy.optimize import minimize

        d = x.shape[1]
        bounds = [(math.log(0.01), math.log(20.0))] * d
        bounds += [(math.log(0.05), math.log(20.0)), (math.log(noise_floor), math.log(1.0))]
        best_theta, best_value = None, math.inf
        for start in starts:
            start = np.clip(start, [b[0] for b in bounds], [b[1] for b in bounds])
            result = minimize(
                self._nll, start, args=(x, y), jac=True, method="L-BFGS-B", bounds=bounds,
                options={"maxiter": 80},
            )  # fmt: skip
            if result.fun < best_value:
                best_theta, best_value = result.x, float(result.fun)
        assert best_theta is not None
        self.set(best_theta, x, y)
        return best_theta

    def set(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        d = x.shape[1]
        self.theta = theta
        self.lengths = np.exp(theta[:d])
        self.amp = math.exp(theta[d])
        self.noise = math.exp(theta[d + 1])
        self.x = x
        k, _ = _kernel(x, x, self.lengths, self.kind, self.nu)
        cov = self.amp * k + (self.noise + 1e-9) * np.eye(len(y))
        from scipy.linalg import cho_solve

        self.chol = np.linalg.cholesky(cov)
        self.alpha = cho_solve((self.chol, True), y)

    def predict(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k, _ = _kernel(xs, self.x, self.lengths, self.kind, self.nu)
        k = self.amp * k
        mean = k @ self.alpha
        from scipy.linalg import solve_triangular

        v = solve_triangular(self.chol, k.T, lower=True, check_finite=False)
        var = np.maximum(self.amp - np.sum(v * v, axis=0), 1e-12)
        return mean, np.sqrt(var)


def _log_h(z: np.ndarray) -> np.ndarray:
    """``log(phi(z) + z * Phi(z))``, stable for very negative ``z`` (the log of EI / sigma)."""
    from scipy.special import erfcx

    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    log_phi = -0.5 * z * z - 0.5 * math.log(2 * math.pi)
    big = z > -5.0
    zb = z[big]
    out[big] = log_phi[big] + np.log1p(zb * math.sqrt(math.pi / 2) * erfcx(-zb / math.sqrt(2)))
    zs = z[~big]
    out[~big] = log_phi[~big] - 2 * np.log(-zs) + np.log1p(-3 / zs**2 + 15 / zs**4)
    return out


class GaussianProcessSampler(_SpaceSampler):
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
        rng = _trial_rng(self._seed, trial.number)
        if not search_space:
            return {}
        done, values, running = _observations(study, self._space)
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

    def _acquisition(self, gp: _GP, xs: np.ndarray, best: float, scale: float) -> np.ndarray:
        from scipy.special import log_ndtr

        mean, std = gp.predict(xs)
        if self.acquisition == "ucb":
            return -(mean - self.kappa * std)
        z = (best - mean - self.eps / scale) / std
        if self.acquisition == "poi":
            return log_ndtr(z)
        return np.log(std) + _log_h(z)

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
        gp = _GP(self.kernel, self.nu)
        self._theta = gp.fit(x, y, self._starts(x.shape[1], rng), self.noise_floor)
        best = float(y.min())
        if running:
            xp = np.array([self._encoder.encode(p) for p in running])
            believed, _ = gp.predict(xp)
            gp.set(self._theta, np.vstack([x, xp]), np.concatenate([y, believed]))

        width = self._encoder.width
        candidates = [rng.uniform(size=(self.num_warmup, width))]
        for i in np.argsort(y)[:5]:
            candidates.append(np.clip(x[i] + rng.normal(0, 0.05, size=(64, width)), 0, 1))
        pool = np.vstack(candidates)
        scores = self._acquisition(gp, pool, best, scale)
        order = np.argsort(-scores)
        # local search from the best candidates: vectorised random steps with a shrinking size
        points = pool[order[: self.num_iterations]].copy()
        values = scores[order[: self.num_iterations]].copy()
        step, count = 0.1, 32
        for round_ in range(48):
            moves = points[:, None, :] + rng.normal(0, step, size=(len(points), count, width))
            moves = np.clip(moves, 0.0, 1.0)
            tried = self._acquisition(gp, moves.reshape(-1, width), best, scale)
            tried = tried.reshape(len(points), count)
            pick = tried.argmax(axis=1)
            gain = tried[np.arange(len(points)), pick] > values
            points[gain] = moves[np.arange(len(points)), pick][gain]
            values[gain] = tried[np.arange(len(points)), pick][gain]
            if round_ % 8 == 7:
                step /= 2
        results = [(float(v), p) for v, p in zip(values, points, strict=True)]
        results.sort(key=lambda item: -item[0])
        seen = {tuple(sorted(_hashable(p).items())) for p in done + running}
        for _score, point in results + [(float(scores[i]), pool[i]) for i in order]:
            params = self._encoder.decode(point)
            if tuple(sorted(_hashable(params).items())) not in seen:
                return params
        return self._encoder.decode(results[0][1])


def _hashable(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, _OPTUNA_SCALARS) else repr(v) for k, v in params.items()}


# ---------------------------------------------------------------------------------------------
# Anneal


class AnnealSampler(_SpaceSampler):
    """hyperopt's ``anneal``: start from one of the best trials so far (rank drawn from a
    geometric law of mean ``avg_best_idx``) and sample around it in a window that shrinks as
    ``1 / (1 + n * shrink_coef)`` with the number ``n`` of completed trials; a categorical keeps
    the chosen trial's value with a probability that grows the same way."""

    def __init__(
        self,
        space: Mapping[str, BaseDistribution],
        *,
        seed: int | None = None,
        n_startup: int = 1,
        avg_best_idx: float = 2.0,
        shrink_coef: float = 0.1,
    ) -> None:
        super().__init__(space, seed)
        self.n_startup = n_startup
        self.avg_best_idx = avg_best_idx
        self.shrink_coef = shrink_coef

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        rng = _trial_rng(self._seed, trial.number)
        if not search_space:
            return {}
        done, values, _running = _observations(study, self._space)
        if len(done) < max(1, self.n_startup):
            return self._encoder.random(rng)
        ranked = [done[i] for i in np.argsort(values, kind="stable")]
        rank = min(int(rng.geometric(1.0 / (1.0 + self.avg_best_idx))) - 1, len(ranked) - 1)
        base = ranked[rank]
        width = 1.0 / (1.0 + len(done) * self.shrink_coef)
        params: dict[str, Any] = {}
        for name, how, (start, _stop) in self._encoder.slots:
            dist = self._space[name]
            if how in ("onehot", "const") or (how == "ordinal" and len(dist.choices) <= 2):
                keep = rng.uniform() > width
                params[name] = base[name] if keep else dist.choices[rng.integers(len(dist.choices))]
                continue
            centre = self._encoder.encode(base)[start]
            low, high = max(0.0, centre - width / 2), min(1.0, centre + width / 2)
            params[name] = self._encoder.decode_one(name, rng.uniform(low, high))
        return params


# ---------------------------------------------------------------------------------------------
# Per kind


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
    """

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
    import warnings as _warnings

    from optuna.exceptions import ExperimentalWarning

    with _warnings.catch_warnings():
        # ``deterministic_objective`` is set on purpose: no need to tell the user it is new
        _warnings.simplefilter("ignore", ExperimentalWarning)
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


def _bayes_sampler(
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
            nu = float(process.nu)
            if process.kernel == "matern" and nu not in (0.5, 1.5, 2.5):
                nearest = min((0.5, 1.5, 2.5), key=lambda v: abs(v - nu))
                warnings.append(
                    f"gaussianProcess.nu={nu:g}: only 0.5, 1.5 and 2.5 have closed forms; "
                    f"using {nearest:g} instead"
                )
                nu = nearest
            options.update(
                kernel=process.kernel,
                nu=nu,
                length_scale=float(process.length_scale),
                num_restarts=int(process.num_restarts_optimizer),
            )
    return GaussianProcessSampler(distributions, seed=seed, **options), warnings


def build_sampler(
    matrix: Any, space: Mapping[str, Dimension], *, seed: int, deterministic: bool = True
) -> tuple[BaseSampler, list[str]]:
    """The sampler for a ``bayes`` or ``hyperopt`` matrix, and what it could not honour.

    ``deterministic`` tells the Gaussian process that a repeated point gives the same value
    (Polyaxon has no such setting; pass False for a noisy metric).
    """
    distributions = {name: dim.distribution for name, dim in space.items()}
    if matrix.kind == "bayes":
        return _bayes_sampler(matrix, distributions, seed, deterministic)
    warnings: list[str] = []
    if matrix.kind == "hyperopt":
        if matrix.algorithm == "tpe":
            sampler: BaseSampler = TPESampler(
                seed=seed,
                n_startup_trials=10,
                multivariate=True,
                constant_liar=True,
            )
            return sampler, warnings
        if matrix.algorithm == "rand":
            return RandomSampler(seed=seed), warnings
        return AnnealSampler(distributions, seed=seed), warnings
    raise ValueError(f"the {matrix.kind} matrix is not searched by a sampler")
