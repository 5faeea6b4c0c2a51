"""A sweep's study names its objective after the metric, so optuna-dashboard (and
``trials_dataframe``) say ``loss`` instead of "Objective 0" (``no metric (0)`` without one);
read back through Optuna itself."""

from __future__ import annotations

import warnings
from pathlib import Path

import optuna
from optuna.exceptions import ExperimentalWarning

from polyaxon_prefect.search._optuna._storage import open_storage
from polyaxon_prefect.search._optuna._study import SweepStudy
from polyaxon_prefect.search._optuna._trial_state import NO_METRIC_NAME

from ._matrices import matrix

PARAMS = {"lr": {"kind": "uniform", "value": [0.0, 1.0]}}


def test_the_objective_is_named_after_the_metric_in_the_storage(tmp_path: Path) -> None:
    storage = str(tmp_path / "sweeps.journal")
    tuned = matrix(
        {
            "kind": "hyperopt",
            "algorithm": "tpe",
            "numRuns": 2,
            "metric": {"name": "accuracy", "optimization": "maximize"},
            "params": PARAMS,
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExperimentalWarning)  # no noise from naming it
        SweepStudy.open(tuned, study_name="named", storage=storage, artifacts_root=tmp_path)
    backend, _url = open_storage(storage, artifacts_root=tmp_path)
    read_back = optuna.load_study(study_name="named", storage=backend)
    assert read_back.metric_names == ["accuracy"]
    assert read_back.direction == optuna.study.StudyDirection.MAXIMIZE


def test_a_sweep_without_a_metric_names_its_constant_objective() -> None:
    # issue 33 changes this: a metric-less study's succeeded trials are COMPLETE with the
    # constant 0 (Optuna requires a value), and the objective says so in the dashboard
    grid = matrix({"kind": "grid", "params": {"lr": {"kind": "choice", "value": [1, 2]}}})
    study = SweepStudy.open(grid, study_name="grid", storage=":memory:")
    assert study.metric_name is None
    assert optuna.load_study(study_name="grid", storage=study._storage).metric_names == [
        NO_METRIC_NAME
    ]
