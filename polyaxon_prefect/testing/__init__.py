"""Test helpers shipped with the package, for code that extends it (like ``optuna.testing``).

One conformance suite per registry, each a class whose ``run_all()`` any test runner can call:

* ``matrix_kinds.MatrixKindTestCase``: every entry of the search's matrix kind registry;
* ``executors.ExecutorTestCase``: every executor of the run kind registry (``executor_for``);
* ``init_handlers.InitHandlerTestCase``: every handler of the init source registry.

Importing this package imports nothing heavy: Optuna loads when a check opens a study, the
runtime when a check prepares a job.
"""

from polyaxon_prefect.testing.executors import ExecutorTestCase
from polyaxon_prefect.testing.init_handlers import InitHandlerTestCase
from polyaxon_prefect.testing.matrix_kinds import MatrixKindTestCase, toy_objective

__all__ = ["ExecutorTestCase", "InitHandlerTestCase", "MatrixKindTestCase", "toy_objective"]
