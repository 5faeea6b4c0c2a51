"""Random search: every hp kind is sampled with Polyaxon's law (checked statistically), seeded
draws are reproducible, and suggestions are distinct and capped at the size of the space.

Continuous kinds are checked with a Kolmogorov-Smirnov test against the exact distribution;
discrete kinds, ``pchoice`` and the quantised ``q`` kinds with a chi-square test against the exact
probability of each value. Seeds are fixed, so each test is deterministic; 2000 draws give the
tests the power to tell a wrong law (e.g. bounds read as values, rounding instead of flooring),
which the ``_detects_`` tests show.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter
from scipy import stats

from polyaxon_prefect.search import random_suggestions, sample_hp
from polyaxon_prefect.specs.matrix._hyperparams import HpParam
from polyaxon_prefect.specs.matrix._matrix import Matrix

HP = TypeAdapter(HpParam)
MATRIX = TypeAdapter(Matrix)
N = 2000
ALPHA = 0.001


def hp(kind: str, value: Any) -> Any:
    return HP.validate_python({"kind": kind, "value": value})


def draw(kind: str, value: Any, seed: int = 20240) -> list[Any]:
    return sample_hp(hp(kind, value), np.random.default_rng(seed), N)


def random_matrix(params: dict[str, Any], **extra: Any) -> Any:
    return MATRIX.validate_python({"kind": "random", "params": params, **extra})


# -- continuous kinds: Kolmogorov-Smirnov ------------------------------------------------------

CONTINUOUS = [
    ("uniform", [-2, 3], stats.uniform(loc=-2, scale=5)),
    ("uniform", "0:1", stats.uniform(loc=0, scale=1)),
    # loguniform bounds are natural logs: exp(U(low, high))
    ("loguniform", [-6.9, -2.3], stats.loguniform(math.exp(-6.9), math.exp(-2.3))),
    ("loguniform", {"low": 0, "high": 2}, stats.loguniform(1, math.exp(2))),
    ("normal", [1.5, 0.5], stats.norm(loc=1.5, scale=0.5)),
    ("normal", "0:2", stats.norm(loc=0, scale=2)),
    # lognormal(mean=loc, sigma=scale) = exp(N(loc, scale))
    ("lognormal", [0.5, 0.8], stats.lognorm(s=0.8, scale=math.exp(0.5))),
]


@pytest.mark.parametrize(("kind", "value", "law"), CONTINUOUS)
def test_continuous_kind_follows_its_law(kind: str, value: Any, law: Any) -> None:
    samples = draw(kind, value)
    assert stats.kstest(samples, law.cdf).pvalue > ALPHA


def test_ks_detects_loguniform_bounds_read_as_values() -> None:
    samples = draw("loguniform", [1, 3])
    assert stats.kstest(samples, stats.uniform(loc=1, scale=2).cdf).pvalue < 1e-6
    assert stats.kstest(samples, stats.loguniform(math.e, math.e**3).cdf).pvalue > ALPHA


def test_uniform_stays_in_bounds_and_lognormal_positive() -> None:
    assert all(-2 <= v < 3 for v in draw("uniform", [-2, 3]))
    assert all(v > 0 for v in draw("lognormal", [0, 3]))


# -- quantised kinds: chi-square on floor(x / q) * q --------------------------------------------


def chi_square_pvalue(observed: Counter[Any], expected: dict[Any, float], total: int) -> float:
    """Chi-square over ``expected`` (value -> probability); rare neighbouring cells merged so
    every cell expects at least 5 draws; anything outside ``expected`` fails the test."""
    assert set(observed) <= set(expected), sorted(set(observed) - set(expected), key=str)[:5]
    cells_obs: list[float] = []
    cells_exp: list[float] = []
    acc_obs = acc_exp = 0.0
    for value in expected:
        acc_obs += observed.get(value, 0)
        acc_exp += expected[value] * total
        if acc_exp >= 5:
            cells_obs.append(acc_obs)
            cells_exp.append(acc_exp)
            acc_obs = acc_exp = 0.0
    if acc_exp and cells_exp:
        cells_obs[-1] += acc_obs
        cells_exp[-1] += acc_exp
    scale = sum(cells_obs) / sum(cells_exp)
    return float(stats.chisquare(cells_obs, [e * scale for e in cells_exp]).pvalue)


def floor_law(cdf: Callable[[float], float], q: float, k_low: int, k_high: int) -> dict[int, float]:
    """P(floor(X / q) = k) for k in [k_low, k_high], the tails folded into the end cells."""
    law = {k: cdf((k + 1) * q) - cdf(k * q) for k in range(k_low, k_high + 1)}
    law[k_low] += cdf(k_low * q)
    law[k_high] += 1 - cdf((k_high + 1) * q)
    return law


def steps(samples: list[float], q: float, k_low: int, k_high: int) -> Counter[int]:
    ks = [round(v / q) for v in samples]
    for v, k in zip(samples, ks, strict=True):
        assert v == pytest.approx(k * q, abs=1e-9), "not a multiple of q"
    return Counter(min(max(k, k_low), k_high) for k in ks)


QUANTISED = [
    ("quniform", [0, 1, 0.25], stats.uniform(0, 1).cdf, 0.25, 0, 3),
    ("quniform", [-1, 2, 0.5], stats.uniform(-1, 3).cdf, 0.5, -2, 3),
    ("qloguniform", [0, 3, 2], stats.loguniform(1, math.exp(3)).cdf, 2, 0, 10),
    ("qnormal", [0, 1, 0.5], stats.norm(0, 1).cdf, 0.5, -6, 5),
    ("qnormal", [10, 3, 1], stats.norm(10, 3).cdf, 1, 0, 19),
    ("qlognormal", [1, 0.5, 0.5], stats.lognorm(s=0.5, scale=math.e).cdf, 0.5, 0, 20),
]


@pytest.mark.parametrize(("kind", "value", "cdf", "q", "k_low", "k_high"), QUANTISED)
def test_quantised_kind_floors(
    kind: str, value: Any, cdf: Callable[[float], float], q: float, k_low: int, k_high: int
) -> None:
    samples = draw(kind, value)
    observed = steps(samples, q, k_low, k_high)
    assert chi_square_pvalue(observed, floor_law(cdf, q, k_low, k_high), N) > ALPHA


def test_quniform_support_is_floored() -> None:
    # Polyaxon floors: on (0, 1, 0.25) the values are 0, .25, .5, .75 (never 1.0), equally likely
    assert set(draw("quniform", [0, 1, 0.25])) == {0.0, 0.25, 0.5, 0.75}


def test_chi_square_detects_rounding_instead_of_flooring() -> None:
    observed = Counter(round(v / 0.5) for v in draw("qnormal", [0, 1, 0.5]))
    cdf = stats.norm(0, 1).cdf
    rounded = {k: cdf((k + 0.5) * 0.5) - cdf((k - 0.5) * 0.5) for k in range(-8, 9)}
    assert chi_square_pvalue(observed, rounded, N) < 1e-6


# -- discrete kinds and pchoice: chi-square ----------------------------------------------------

DISCRETE = [
    ("choice", ["relu", "sigmoid", "tanh"]),
    ("choice", [0.25, 0.3, 0.5, 0.75, 1.0]),
    ("range", [1, 10, 2]),
    ("linspace", "0.001:0.1:5"),
    ("logspace", "0:3:4"),
    ("geomspace", [1, 64, 7]),
    ("daterange", ["2020-01-01", "2020-01-09", 2]),
    ("datetimerange", ["2021-01-01 00:00", "2021-01-01 00:10", 120]),
]


@pytest.mark.parametrize(("kind", "value"), DISCRETE)
def test_discrete_kind_is_uniform_over_its_values(kind: str, value: Any) -> None:
    param = hp(kind, value)
    values = param.to_values()
    observed = Counter(draw(kind, value))
    expected = {v: 1 / len(values) for v in values}
    assert chi_square_pvalue(observed, expected, N) > ALPHA
    assert set(observed) == set(values)


@pytest.mark.parametrize(
    "value",
    [
        [["relu", 0.2], ["sigmoid", 0.8]],
        [[1, 0.1], [2, 0.6], [3, 0.3]],
        [["a", 0.05], ["b", 0.05], ["c", 0.9], ["never", 0.0]],
    ],
)
def test_pchoice_follows_its_weights(value: list[list[Any]]) -> None:
    observed = Counter(draw("pchoice", value))
    expected = {v: p for v, p in value}
    assert chi_square_pvalue(observed, expected, N) > ALPHA
    assert "never" not in observed


def test_chi_square_detects_ignored_pchoice_weights() -> None:
    observed = Counter(draw("pchoice", [["a", 0.3], ["b", 0.7]]))
    assert chi_square_pvalue(observed, {"a": 0.5, "b": 0.5}, N) < 1e-6


# -- random suggestions: seeds, dedup and cap ---------------------------------------------------

SPACE = {
    "lr": {"kind": "loguniform", "value": [-6.9, -2.3]},
    "dropout": {"kind": "quniform", "value": [0, 0.5, 0.05]},
    "units": {"kind": "choice", "value": [16, 32, 64]},
    "act": {"kind": "pchoice", "value": [["relu", 0.7], ["tanh", 0.3]]},
    "day": {"kind": "daterange", "value": ["2020-01-01", "2020-01-05", 1]},
}


def test_same_seed_same_suggestions() -> None:
    spec = random_matrix(SPACE, numRuns=30, seed=42)
    first = random_suggestions(spec)
    assert len(first) == 30
    assert random_suggestions(spec) == first
    assert random_suggestions(spec, seed=42) == first
    assert random_suggestions(spec, seed=43) != first
    assert random_suggestions(random_matrix(SPACE, numRuns=30), seed=42) == first
    assert list(first[0]) == list(SPACE)


def test_seed_zero_is_a_seed() -> None:
    spec = random_matrix(SPACE, numRuns=5, seed=0)
    assert random_suggestions(spec) == random_suggestions(spec)


def test_unseeded_draws_differ() -> None:
    spec = random_matrix({"x": {"kind": "uniform", "value": [0, 1]}}, numRuns=5)
    assert random_suggestions(spec) != random_suggestions(spec)


def test_suggestion_values_keep_each_kind_and_law() -> None:
    suggestions = random_suggestions(random_matrix(SPACE, numRuns=N, seed=5))
    lrs = [s["lr"] for s in suggestions]
    law = stats.loguniform(math.exp(-6.9), math.exp(-2.3))
    assert stats.kstest(lrs, law.cdf).pvalue > ALPHA
    units = Counter(s["units"] for s in suggestions)
    assert chi_square_pvalue(units, {16: 1 / 3, 32: 1 / 3, 64: 1 / 3}, N) > ALPHA


def test_discrete_space_caps_num_runs() -> None:
    # hypertune's anchors: a 2x2 space gives 4 suggestions for numRuns=10, pchoice or choice
    for first in (
        {"kind": "choice", "value": [1, 2]},
        {"kind": "pchoice", "value": [[1, 0.3], [2, 0.7]]},
    ):
        spec = random_matrix({"a": first, "b": {"kind": "range", "value": [1, 3, 1]}}, numRuns=10)
        suggestions = random_suggestions(spec, seed=1)
        assert sorted((s["a"], s["b"]) for s in suggestions) == [(1, 1), (1, 2), (2, 1), (2, 2)]


def test_larger_discrete_space_gives_num_runs_distinct() -> None:
    spec = random_matrix(
        {
            "a": {"kind": "choice", "value": [1, 2, 3]},
            "b": {"kind": "linspace", "value": [1, 2, 5]},
            "c": {"kind": "range", "value": [1, 5, 1]},
        },
        numRuns=10,
    )
    suggestions = random_suggestions(spec, seed=1)
    assert len(suggestions) == 10
    assert len({tuple(s.values()) for s in suggestions}) == 10


def test_suggestions_are_distinct_even_with_unhashable_values() -> None:
    spec = random_matrix(
        {"layers": {"kind": "choice", "value": [[1, 2], [3], {"deep": True}]}}, numRuns=9
    )
    suggestions = random_suggestions(spec, seed=2)
    assert len(suggestions) == 3
    assert sorted(map(str, (s["layers"] for s in suggestions))) == [
        "[1, 2]",
        "[3]",
        "{'deep': True}",
    ]


def test_zero_weight_pchoice_value_is_never_waited_for() -> None:
    spec = random_matrix(
        {
            "act": {"kind": "pchoice", "value": [["x", 0.0], ["relu", 0.5], ["tanh", 0.5]]},
            "units": {"kind": "choice", "value": [1, 2]},
        },
        numRuns=10,
    )
    suggestions = random_suggestions(spec, seed=3)
    assert len(suggestions) == 4
    assert all(s["act"] != "x" for s in suggestions)


def test_coarse_quantised_space_gives_fewer_rather_than_hanging() -> None:
    spec = random_matrix({"q": {"kind": "quniform", "value": [0, 1, 0.25]}}, numRuns=10)
    assert sorted(s["q"] for s in random_suggestions(spec, seed=4)) == [0, 0.25, 0.5, 0.75]


def test_small_space_is_drawn_without_replacement_by_weight() -> None:
    # the first suggestion follows the weights; the second the weights among the rest
    spec = random_matrix(
        {"v": {"kind": "pchoice", "value": [["a", 0.7], ["b", 0.2], ["c", 0.1]]}}, numRuns=3
    )
    runs = [random_suggestions(spec, seed=seed) for seed in range(N)]
    assert all(sorted(s["v"] for s in run) == ["a", "b", "c"] for run in runs)
    first = Counter(run[0]["v"] for run in runs)
    assert chi_square_pvalue(first, {"a": 0.7, "b": 0.2, "c": 0.1}, N) > ALPHA
    second = Counter(run[1]["v"] for run in runs)
    p_b = 0.7 * 0.2 / 0.3 + 0.1 * 0.2 / 0.9
    p_c = 0.7 * 0.1 / 0.3 + 0.2 * 0.1 / 0.8
    expected = {"a": 1 - p_b - p_c, "b": p_b, "c": p_c}
    assert chi_square_pvalue(second, expected, N) > ALPHA


def test_num_runs_override_serves_other_kinds() -> None:
    spec = MATRIX.validate_python(
        {
            "kind": "hyperband",
            "maxIterations": 81,
            "eta": 3,
            "resource": {"name": "epochs", "type": "int"},
            "metric": {"name": "loss", "optimization": "minimize"},
            "seed": 9,
            "params": {"lr": {"kind": "uniform", "value": [0, 1]}},
        }
    )
    suggestions = random_suggestions(spec, num_runs=34)
    assert len(suggestions) == 34
    assert random_suggestions(spec, num_runs=34) == suggestions
    with pytest.raises(ValueError, match="need a number of runs"):
        random_suggestions(spec)


def test_templates_are_refused() -> None:
    params = {"x": {"kind": "uniform", "value": [0, 1]}}
    with pytest.raises(ValueError, match="`numRuns` of the random matrix is a template"):
        random_suggestions(random_matrix(params, numRuns="{{ n }}"))
    with pytest.raises(ValueError, match="`seed` of the random matrix is a template"):
        random_suggestions(random_matrix(params, numRuns=2, seed="{{ s }}"))


def test_a_count_past_the_sweep_limit_is_refused_before_a_draw() -> None:
    """A ``numRuns`` only a template gives is known at run time: `check` could not refuse it,
    and 10**9 draws up front was a numpy MemoryError."""
    matrix = MATRIX.validate_python(
        {
            "kind": "random",
            "numRuns": "{{ n }}",
            "params": {"lr": {"kind": "uniform", "value": [0, 1]}},
        }
    )
    with pytest.raises(ValueError, match=r"asks for 1,000,000,000 trials, more than the limit"):
        random_suggestions(matrix, num_runs=10**9)
