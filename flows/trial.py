"""Deployable entrypoint for one trial of a matrix sweep: ``flows/trial.py:flow``.

A sweep run with ``--deployment polyaxon-trial/<deployment>`` creates one run of this flow per
trial (on the deployment's work pool: a process, a Docker container or a Kubernetes pod per
trial) with the Polyaxonfile's path and the trial's params; the flow runs the op without its
matrix and returns the trial's status, outputs and metrics (persisted, so the sweep can read
them: give the workers and the sweep shared result storage when they are on other machines).
"""

from polyaxon_prefect.prefect import trial_flow as flow

__all__ = ["flow"]
