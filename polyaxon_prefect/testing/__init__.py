"""Test helpers shipped with the package, for code that extends it (like ``optuna.testing``).

``matrix_kinds.MatrixKindTestCase`` is the conformance suite every entry of the search's matrix
kind registry must pass. Importing this package imports nothing heavy: Optuna loads when a check
opens a study.
"""

from polyaxon_prefect.testing.matrix_kinds import MatrixKindTestCase, toy_objective

__all__ = ["MatrixKindTestCase", "toy_objective"]
