"""The registry of matrix kinds: ``KINDS[matrix.kind]`` plans, counts and drives a sweep.

One module per kind implements the ``MatrixKind`` protocol (``_kind_protocol``); ``get_kind`` is the
only lookup, so a kind missing here fails with one error that names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.search._kinds._bayes import BayesKind
from polyaxon_prefect.search._kinds._grid import Grid
from polyaxon_prefect.search._kinds._hyperband import HyperbandKind
from polyaxon_prefect.search._kinds._hyperopt import HyperoptKind
from polyaxon_prefect.search._kinds._iterative import IterativeKind
from polyaxon_prefect.search._kinds._kind_protocol import (
    BaseKind,
    IndexedKind,
    MatrixKind,
    SearchedKind,
    StudyHandle,
    TemplateError,
    TunedKind,
)
from polyaxon_prefect.search._kinds._mapping import MappingKind
from polyaxon_prefect.search._kinds._random import Random
from polyaxon_prefect.specs import Matrix

if TYPE_CHECKING:
    from optuna.samplers import BaseSampler

    from polyaxon_prefect.search._samplers import Dimension

__all__ = [
    "KINDS",
    "BaseKind",
    "IndexedKind",
    "MatrixKind",
    "SearchedKind",
    "StudyHandle",
    "TemplateError",
    "TunedKind",
    "UnknownMatrixKindError",
    "build_sampler",
    "get_kind",
]


class UnknownMatrixKindError(PolyaxonPrefectError, LookupError):
    """A matrix kind with no entry in ``KINDS``: the search does not know how to run it."""


_ALL: tuple[MatrixKind[Any], ...] = (
    Grid(),
    MappingKind(),
    Random(),
    HyperbandKind(),
    BayesKind(),
    HyperoptKind(),
    IterativeKind(),
)

KINDS: dict[str, MatrixKind[Any]] = {kind.name: kind for kind in _ALL}
"""Every matrix kind the search runs, by its ``kind`` string."""


def get_kind(name: str) -> MatrixKind[Any]:
    """The registry entry of matrix kind ``name``.

    Raises:
        UnknownMatrixKindError: ``name`` has no entry.
    """
    try:
        return KINDS[name]
    except KeyError:
        known = ", ".join(sorted(KINDS))
        raise UnknownMatrixKindError(
            f"the search has no matrix kind `{name}` (known: {known})"
        ) from None


def build_sampler(
    matrix: Matrix, space: Mapping[str, Dimension], *, seed: int, deterministic: bool = True
) -> tuple[BaseSampler, list[str]]:
    """The sampler for a searching matrix (``bayes``, ``hyperopt``), and what it could not honour.

    The matrix kind's registry entry builds it. ``deterministic`` tells the Gaussian process
    that a repeated point gives the same value (Polyaxon has no such setting; pass False for a
    noisy metric).

    Raises:
        ValueError: the matrix's kind is not searched by a sampler (grid, random, ...).
    """
    kind = get_kind(matrix.kind)
    if not kind.searched:
        raise ValueError(f"the {matrix.kind} matrix is not searched by a sampler")
    return kind.sampler(matrix, space, seed=seed, deterministic=deterministic)
