"""The Prefect layer: the only package of polyaxon_prefect that imports Prefect.

Importing this package does not import Prefect (the CLI imports ``_cli`` to build its parser,
and ``check`` must stay fast); it only sets quiet defaults in the environment, which must happen
before Prefect is first imported. The public names load Prefect on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyaxon_prefect._lazy import lazy_attributes
from polyaxon_prefect.prefect._settings import apply_env_defaults

apply_env_defaults()

if TYPE_CHECKING:
    from polyaxon_prefect.prefect._api import RunResult, run, to_flow
    from polyaxon_prefect.prefect._job_flow import job_flow, job_task, run_op_in_flow
    from polyaxon_prefect.prefect.deployments._deploy import deploy, polyaxonfile_flow
    from polyaxon_prefect.prefect.sweep._trial_flow import trial_flow

__all__ = [
    "RunResult",
    "deploy",
    "job_flow",
    "job_task",
    "polyaxonfile_flow",
    "run",
    "run_op_in_flow",
    "to_flow",
    "trial_flow",
]

_LAZY = {
    "deploy": "polyaxon_prefect.prefect.deployments._deploy",
    "polyaxonfile_flow": "polyaxon_prefect.prefect.deployments._deploy",
    "RunResult": "polyaxon_prefect.prefect._api",
    "run": "polyaxon_prefect.prefect._api",
    "to_flow": "polyaxon_prefect.prefect._api",
    "job_flow": "polyaxon_prefect.prefect._job_flow",
    "job_task": "polyaxon_prefect.prefect._job_flow",
    "run_op_in_flow": "polyaxon_prefect.prefect._job_flow",
    "trial_flow": "polyaxon_prefect.prefect.sweep._trial_flow",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
