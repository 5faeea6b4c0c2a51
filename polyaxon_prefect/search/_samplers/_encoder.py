"""A fixed search space encoded into the unit cube, and the sampler base built on it.

The Gaussian-process and anneal samplers both work on ``[0, 1]^D``: floats (log-aware) are one
axis each, numeric categories one ordinal axis snapped to the nearest value, other categories
one-hot. Their per-trial generator is seeded by ``(seed, trial number)``, so a sweep shared by
two processes, or resumed, makes the same choices as one that ran in one go.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.samplers import BaseSampler, RandomSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

__all__ = ["Encoder", "Observations", "SpaceSampler", "observations", "trial_rng"]

_Slot = tuple[str, str, tuple[int, int]]
"""``(name, how, (start, stop))``: how is ``float``, ``ordinal``, ``onehot`` or ``const``."""


def _numeric(name: str, dist: BaseDistribution) -> FloatDistribution | IntDistribution:
    if isinstance(dist, FloatDistribution | IntDistribution):
        return dist
    raise TypeError(f"`{name}`: the unit cube has no encoding for {type(dist).__name__}")


def _nearest(choices: tuple[Any, ...], target: float) -> Any:
    """The first of the numeric ``choices`` closest to ``target``."""
    return min(choices, key=lambda c: abs(c - target))


class Encoder:
    """Maps params to ``[0, 1]^D`` and back: floats (log-aware), numeric categories as one
    ordinal axis snapped to the nearest value, other categories one-hot (decoded by argmax)."""

    def __init__(self, space: Mapping[str, BaseDistribution]) -> None:
        self.space = dict(space)
        self.slots: list[_Slot] = []
        self._choices: dict[str, tuple[Any, ...]] = {}
        self._ranges: dict[str, FloatDistribution | IntDistribution] = {}
        width = 0
        for name, dist in self.space.items():
            if isinstance(dist, CategoricalDistribution):
                choices = self._choices[name] = tuple(dist.choices)
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
                self._ranges[name] = _numeric(name, dist)
                self.slots.append((name, "float", (width, width + 1)))
                width += 1
        self.width = width

    def choices(self, name: str) -> tuple[Any, ...]:
        """The choices of a categorical param."""
        return self._choices[name]

    def _float_bounds(self, name: str) -> tuple[float, float, bool]:
        dist = self._ranges[name]
        if dist.log:
            return math.log(dist.low), math.log(dist.high), True
        return float(dist.low), float(dist.high), False

    def encode(self, params: Mapping[str, Any]) -> np.ndarray:
        """The point of the cube for ``params`` (one value per param of the space)."""
        x = np.zeros(self.width)
        for name, how, (start, _stop) in self.slots:
            value = params[name]
            if how == "float":
                low, high, log = self._float_bounds(name)
                v = math.log(value) if log else float(value)
                x[start] = 0.0 if high == low else (v - low) / (high - low)
            elif how == "ordinal":
                choices = self._choices[name]
                lo, hi = min(choices), max(choices)
                x[start] = 0.0 if hi == lo else (value - lo) / (hi - lo)
            elif how == "onehot":
                x[start + self._choices[name].index(value)] = 1.0
        return x

    def decode(self, x: np.ndarray) -> dict[str, Any]:
        """The params at point ``x`` (clipped to the cube, snapped to the nearest choice)."""
        params: dict[str, Any] = {}
        for name, how, (start, stop) in self.slots:
            if how == "const":
                params[name] = self._choices[name][0]
            elif how == "float":
                dist = self._ranges[name]
                low, high, log = self._float_bounds(name)
                v = low + float(np.clip(x[start], 0.0, 1.0)) * (high - low)
                v = math.exp(v) if log else v
                v = min(max(v, dist.low), dist.high)
                if isinstance(dist, IntDistribution):
                    v = round(v)
                params[name] = v
            elif how == "ordinal":
                choices = self._choices[name]
                lo, hi = min(choices), max(choices)
                target = lo + float(x[start]) * (hi - lo)
                params[name] = _nearest(choices, target)
            else:
                params[name] = self._choices[name][int(np.argmax(x[start:stop]))]
        return params

    def random(self, rng: np.random.Generator) -> dict[str, Any]:
        """A uniform draw over the space (categories uniform, floats uniform in their scale)."""
        params: dict[str, Any] = {}
        for name, _how, _slot in self.slots:
            if name in self._choices:
                choices = self._choices[name]
                params[name] = choices[int(rng.integers(len(choices)))]
            else:
                params[name] = self.decode_one(name, rng.uniform())
        return params

    def decode_one(self, name: str, u: float) -> Any:
        """The value of one float or ordinal param at unit coordinate ``u``."""
        if name in self._choices:
            choices = self._choices[name]
            lo, hi = min(choices), max(choices)
            target = lo + u * (hi - lo)
            return _nearest(choices, target)
        dist = self._ranges[name]
        low, high, log = self._float_bounds(name)
        v = low + u * (high - low)
        v = math.exp(v) if log else v
        return min(max(v, dist.low), dist.high)


def trial_rng(seed: int | None, number: int) -> np.random.Generator:
    """The generator of one trial: the same ``(seed, number)`` draws the same, in any process."""
    return np.random.default_rng([seed if seed is not None else 0, number])


class Observations(NamedTuple):
    """What a sampler learns from the study's trials over its space."""

    done: list[dict[str, Any]]
    """The completed trials' params."""
    values: list[float]
    """Their values, signed so that smaller is better."""
    running: list[dict[str, Any]]
    """The running trials' params."""


def observations(study: Study, space: Mapping[str, BaseDistribution]) -> Observations:
    """Completed params and values (signed so that smaller is better), and running params."""
    sign = -1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0
    done: list[dict[str, Any]] = []
    values: list[float] = []
    running: list[dict[str, Any]] = []
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
    return Observations(done, values, running)


class SpaceSampler(BaseSampler):
    """A sampler over a search space fixed up front; params outside it are drawn at random."""

    def __init__(self, space: Mapping[str, BaseDistribution], seed: int | None) -> None:
        self._space = dict(space)
        self._seed = seed
        self._encoder = Encoder(self._space)
        self._fallback = RandomSampler(seed=seed)

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return dict(self._space)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        """The trial's params: drawn at random while `_draws_at_random`, else `_suggest`ed
        from what the study's trials say (`Observations`)."""
        rng = trial_rng(self._seed, trial.number)
        if not search_space:
            return {}
        observed = observations(study, self._space)
        if self._draws_at_random(trial.number, len(observed.done)):
            return self._encoder.random(rng)
        return self._suggest(observed, rng)

    def _draws_at_random(self, number: int, completed: int) -> bool:
        """Whether trial ``number`` is drawn at random (a startup trial), ``completed``
        trials having ended."""
        raise NotImplementedError

    def _suggest(self, observed: Observations, rng: np.random.Generator) -> dict[str, Any]:
        raise NotImplementedError

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
