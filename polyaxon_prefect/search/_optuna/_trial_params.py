"""A trial's params as Optuna params, so optuna-dashboard shows them for every matrix kind.

A searched kind (bayes, hyperopt) gets its params from the sampler's ``suggest_*`` calls. The
other kinds (grid, mapping, random, hyperband, iterative) choose their points themselves, so
their Optuna trials would hold no params; the sweep records them when it tells how a trial
ended, each with a distribution that stays the same for a param name across the study (Optuna
refuses a param whose distribution changes kind, or whose categorical choices differ):

- a param the matrix declares with a list of at most `MAX_CHOICES` values (``choice``,
  ``range``, ``linspace``, ``pchoice``...): the categorical of those values, the value's index
  as Optuna stores it (each trial's journal line carries the choices: a 1000-value ``range``
  would cost kilobytes a trial, and no plot reads a thousand categories);
- any other finite number: a float distribution holding that value alone (``low == high``);
  optuna-dashboard spans its range over the trials' values;
- anything else (a string or a list outside a declared choice, a mapping's dict): left out,
  the trial's ``params`` user attr still has it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution

from polyaxon_prefect.search._samplers import Dimension, optuna_space
from polyaxon_prefect.search._space import hp_values

__all__ = ["MAX_CHOICES", "OptunaParam", "declared_space", "optuna_params"]

MAX_CHOICES = 64
"""The most values a declared param may have to be recorded as a categorical."""

OptunaParam = tuple[float, BaseDistribution]
"""A param's internal value (what Optuna's storage keeps) and its distribution."""


def declared_space(params: Mapping[str, Any]) -> dict[str, Dimension]:
    """The matrix's params (``hp_params``) declared with at most `MAX_CHOICES` values, as
    Optuna categoricals (none where they cannot be read: a template, an odd value)."""
    small = {}
    for name, hp in params.items():
        try:
            values = hp_values(hp)
        except (ValueError, TypeError, AttributeError):
            continue
        if values is not None and len(values) <= MAX_CHOICES:
            small[name] = hp
    try:
        return optuna_space(small)
    except (ValueError, TypeError, AttributeError):
        return {}


def _same(a: object, b: object) -> bool:
    # 1, 1.0 and True are equal in Python but three different choices for Optuna
    return type(a) is type(b) and a == b


def _categorical(dim: Dimension, value: object) -> OptunaParam | None:
    distribution = dim.distribution
    assert isinstance(distribution, CategoricalDistribution)
    for index, choice in enumerate(distribution.choices):
        if _same(dim.decode(choice), value):
            return float(index), distribution
    return None


def optuna_params(
    space: Mapping[str, Dimension], params: Mapping[str, Any]
) -> dict[str, OptunaParam]:
    """``params`` (a trial's Polyaxon values) as Optuna params, those it can hold (module
    docstring); ``space`` is the matrix's declared params as Optuna dimensions."""
    recorded: dict[str, OptunaParam] = {}
    for name, value in params.items():
        dim = space.get(name)
        if dim is not None and isinstance(dim.distribution, CategoricalDistribution):
            found = _categorical(dim, value)
            if found is not None:
                recorded[name] = found
            continue  # outside its declared choices: a float here would change its kind
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(value):
            recorded[name] = (float(value), FloatDistribution(float(value), float(value)))
    return recorded
