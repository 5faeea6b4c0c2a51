"""The numpy/scipy Gaussian process that serves ``bayes`` when torch is missing: the model of
Optuna's ``GPSampler`` (a Matern 5/2 kernel with ARD lengthscales fitted by type-II maximum
likelihood, log expected improvement), its fit and the optimiser of the acquisition.

Pure array math with no Optuna in it, so it can be read (and tested) apart from the sampler, as
Optuna keeps ``optuna/_gp`` apart from ``samplers/_gp``. scipy is imported where it is used.

**Why it is kept.** torch, which ``GPSampler`` needs, is an optional extra of 700 MB and more,
so a default install has none. Measured on ``benchmarks/hpo_quality.py``'s problems (10 random
trials, then the sampler; median best value over seeds 0-9, lower is better; seconds per study
on one busy two-core machine, to compare with each other only):

- Branin, 50 trials (optimum 0.39789): this process 0.39799 (19 s), ``GPSampler`` 0.39794
  (32 s), Optuna's multivariate TPE 0.46459 (1 s);
- Hartmann-6, 100 trials (optimum -3.32237): this process -3.32223 (57 s), ``GPSampler``
  -3.32225 (10 s), TPE -3.20678 (0.4 s).

It searches as well as ``GPSampler`` and clearly better than TPE, the alternative without
torch; so it stays, as that fallback only. It no longer honours a ``utilityFunction``'s other
acquisitions and kernels (``ucb``, ``poi``, ``eps``, RBF, another ``nu``, restarts): with or
without torch, bayes searches with this one model, and loading warns about what a file asks for
beyond it (``specs/matrix/_matrix_warnings``). On five seeds, this process with Polyaxon's
documented ``ucb``, ``kappa: 1.2``, ``nu: 1.9`` found 0.40075 and -3.20313, no better than log-EI
(0.39806 and -3.20312 on the same seeds) nor than ``GPSampler`` (0.39792 and -3.32230).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["GP", "kernel", "log_ei", "log_h", "optimize_acquisition"]


def kernel(x1: np.ndarray, x2: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The unit-variance Matern 5/2 kernel matrix and ``g`` with dk/dlog(l_j) = g * diff_j**2 /
    l_j**2."""
    diff = (x1[:, None, :] - x2[None, :, :]) / lengths
    r = np.sqrt(np.maximum(np.sum(diff * diff, axis=-1), 1e-30))
    s = math.sqrt(5.0) * r
    e = np.exp(-s)
    return (1.0 + s + s * s / 3.0) * e, (5.0 / 3.0) * (1.0 + s) * e


class GP:
    """A zero-mean GP on standardised targets with ARD lengthscales, fitted by type-II ML."""

    def _nll(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        d = x.shape[1]
        lengths = np.exp(theta[:d])
        amp = math.exp(theta[d])
        noise = math.exp(theta[d + 1])
        k, g = kernel(x, x, lengths)
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
        best_theta: np.ndarray | None = None
        best_value = math.inf
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
        k, _ = kernel(x, x, self.lengths)
        cov = self.amp * k + (self.noise + 1e-9) * np.eye(len(y))
        from scipy.linalg import cho_solve

        self.chol = np.linalg.cholesky(cov)
        self.alpha = cho_solve((self.chol, True), y)

    def predict(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k, _ = kernel(xs, self.x, self.lengths)
        k = self.amp * k
        mean = k @ self.alpha
        from scipy.linalg import solve_triangular

        v = solve_triangular(self.chol, k.T, lower=True, check_finite=False)
        var = np.maximum(self.amp - np.sum(v * v, axis=0), 1e-12)
        return mean, np.sqrt(var)


def log_h(z: np.ndarray) -> np.ndarray:
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


def log_ei(gp: GP, xs: np.ndarray, best: float) -> np.ndarray:
    """The log expected improvement on ``best`` of points ``xs`` (standardised targets,
    minimised): larger is better."""
    mean, std = gp.predict(xs)
    return np.asarray(np.log(std) + log_h((best - mean) / std))


def optimize_acquisition(
    score: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    y: np.ndarray,
    rng: np.random.Generator,
    *,
    num_warmup: int,
    num_iterations: int,
) -> list[tuple[float, np.ndarray]]:
    """Candidate points, best first: local-search results, then the whole random pool.

    Polyaxon's optimiser: ``num_warmup`` uniform points (plus jitter around the five best
    observations), then vectorised random steps with a shrinking size from the
    ``num_iterations`` best of them. The caller takes the first point it has not tried yet.
    """
    width = x.shape[1]
    candidates = [rng.uniform(size=(num_warmup, width))]
    for i in np.argsort(y)[:5]:
        candidates.append(np.clip(x[i] + rng.normal(0, 0.05, size=(64, width)), 0, 1))
    pool = np.vstack(candidates)
    scores = score(pool)
    order = np.argsort(-scores)
    points = pool[order[:num_iterations]].copy()
    values = scores[order[:num_iterations]].copy()
    step, count = 0.1, 32
    for round_ in range(48):
        moves = points[:, None, :] + rng.normal(0, step, size=(len(points), count, width))
        moves = np.clip(moves, 0.0, 1.0)
        tried = score(moves.reshape(-1, width)).reshape(len(points), count)
        pick = tried.argmax(axis=1)
        gain = tried[np.arange(len(points)), pick] > values
        points[gain] = moves[np.arange(len(points)), pick][gain]
        values[gain] = tried[np.arange(len(points)), pick][gain]
        if round_ % 8 == 7:
            step /= 2
    results = [(float(v), p) for v, p in zip(values, points, strict=True)]
    results.sort(key=lambda item: -item[0])
    return results + [(float(scores[i]), pool[i]) for i in order]
