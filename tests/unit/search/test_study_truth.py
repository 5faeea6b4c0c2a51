"""The study holds what happened, read back by Optuna itself from a fresh replay of the journal
(what optuna-dashboard reads): succeeded is COMPLETE with its params (and the metric's value,
or the documented constant without a metric), failed FAIL, stopped PRUNED; and what a stop or
a crash left unfinished is queued again with the same params on resume."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.trial import TrialState

from polyaxon_prefect.search._optuna._storage import open_storage
from polyaxon_prefect.search._optuna._study import SweepStudy
from polyaxon_prefect.search._optuna._trial_state import NO_METRIC_VALUE

from ._matrices import matrix

GRID = {
    "kind": "grid",
    "params": {
        "lr": {"kind": "linspace", "value": "0.1:0.3:3"},
        "act": {"kind": "choice", "value": ["relu", "tanh"]},
    },
}


def _replayed(tmp_path: Path, storage: str, name: str) -> list[optuna.trial.FrozenTrial]:
    """The study's trials as a new process's Optuna reads them (a fresh journal replay)."""
    backend, _ = open_storage(storage, artifacts_root=tmp_path)
    return optuna.load_study(study_name=name, storage=backend).get_trials(deepcopy=False)


def test_a_metricless_grid_is_complete_with_its_params_in_the_study(tmp_path: Path) -> None:
    storage = str(tmp_path / "grid.journal")
    study = SweepStudy.open(
        matrix(GRID), study_name="grid", storage=storage, artifacts_root=tmp_path
    )
    first, second, third = study.ask(), study.ask(), study.ask()
    assert first and second and third
    study.tell(first.number, status="succeeded", outputs={"loss": 0.5}, metrics={"acc": 0.9})
    study.tell(second.number, status="failed", message="exit 2")
    study.tell(third.number, status="stopped", unfinished=True)

    trials = _replayed(tmp_path, storage, "grid")
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED]
    assert trials[0].values == [NO_METRIC_VALUE]
    assert [t.params for t in trials] == [
        {"lr": 0.1, "act": "relu"},
        {"lr": 0.1, "act": "tanh"},
        {"lr": 0.2, "act": "relu"},
    ]
    assert trials[0].distributions["lr"] == CategoricalDistribution((0.1, 0.2, 0.3))
    # the sweep's own view: no value (the constant is Optuna's, not the trial's), no best
    history = study.history()
    assert [r.value for r in history] == [None, None, None]
    assert study.best() is None
    assert history[0].outputs == {"loss": 0.5} and history[0].metrics == {"acc": 0.9}


def test_a_metric_sweep_holds_its_values_and_a_random_sweeps_params(tmp_path: Path) -> None:
    storage = str(tmp_path / "random.journal")
    random = matrix(
        {
            "kind": "random",
            "numRuns": 3,
            "seed": 1,
            "params": {
                "lr": {"kind": "uniform", "value": [0.0, 1.0]},
                "act": {"kind": "choice", "value": ["relu", "tanh"]},
            },
            "earlyStopping": [
                {"kind": "metric_early_stopping", "metric": "loss", "value": -1.0,
                 "optimization": "minimize"}
            ],
        }
    )  # fmt: skip
    study = SweepStudy.open(random, study_name="random", storage=storage, artifacts_root=tmp_path)
    asked = [study.ask() for _ in range(3)]
    assert all(asked)
    study.tell(asked[0].number, status="succeeded", outputs={"loss": 0.25})
    study.tell(asked[1].number, status="succeeded", outputs={"other": 1})  # no loss logged
    study.tell(asked[2].number, status="stopped", message="pruned")

    trials = _replayed(tmp_path, storage, "random")
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED]
    assert trials[0].values == [0.25]
    for trial, suggestion in zip(trials, asked, strict=True):
        assert trial.params == suggestion.params  # the values run, for every trial
        assert trial.distributions["lr"] == FloatDistribution(
            suggestion.params["lr"], suggestion.params["lr"]
        )
    assert study.best() is not None and study.best().value == 0.25


def test_resume_queues_stopped_and_crashed_points_again_with_their_params(
    tmp_path: Path,
) -> None:
    storage = str(tmp_path / "resume.journal")
    grid = matrix(GRID)
    study = SweepStudy.open(grid, study_name="resume", storage=storage, artifacts_root=tmp_path)
    done, stopped, pruned, crashed = (study.ask() for _ in range(4))
    assert done and stopped and pruned and crashed
    study.tell(done.number, status="succeeded")
    study.tell(stopped.number, status="stopped", unfinished=True)  # Ctrl-C cut it short
    study.tell(pruned.number, status="stopped")  # a policy pruned it: finished
    # `crashed` stays RUNNING: the parent was killed (kill -9)
    assert study.not_run() == 2 + 2  # cut short and running, and two points never asked

    again = SweepStudy.open(
        grid, study_name="resume", storage=storage, resume=True, artifacts_root=tmp_path
    )
    assert again.recover() == [stopped.index, crashed.index]
    rerun = [again.ask() for _ in range(4)]
    assert again.ask() is None
    assert sorted((s.index, tuple(s.params.items())) for s in rerun if s) == sorted(
        (s.index, tuple(s.params.items())) for s in (stopped, crashed, *_points(grid, 4, 5))
    )
    for suggestion in rerun:
        assert suggestion is not None
        again.tell(suggestion.number, status="succeeded")
    assert again.not_run() == 0 and again.is_finished()
    statuses = {r.index: r.status for r in again.history()}
    assert statuses == {0: "succeeded", 1: "succeeded", 2: "stopped", 3: "succeeded",
                        4: "succeeded", 5: "succeeded"}  # fmt: skip
    states = [t.state for t in _replayed(tmp_path, storage, "resume")]
    # the crashed attempt failed, the cut-short one stays pruned; each point once COMPLETE
    assert states.count(TrialState.COMPLETE) == 5 and states.count(TrialState.FAIL) == 1


def _points(grid: object, *indexes: int) -> list[object]:
    from types import SimpleNamespace

    from polyaxon_prefect.search import grid_points

    points = grid_points(grid)
    return [SimpleNamespace(index=i, params=points[i]) for i in indexes]


def test_a_long_declared_range_is_recorded_as_numbers_not_a_thousand_choices() -> None:
    from polyaxon_prefect.search._optuna._trial_params import declared_space, optuna_params

    grid = matrix(
        {
            "kind": "grid",
            "params": {
                "x": {"kind": "range", "value": "0:1000:1"},
                "act": {"kind": "choice", "value": ["relu", [1, 2]]},
            },
        }
    )
    space = declared_space(grid.hp_params())
    assert list(space) == ["act"]  # x has 1000 values: each trial's line would carry them
    recorded = optuna_params(space, {"x": 7, "act": [1, 2], "note": "free text"})
    assert recorded == {
        "x": (7.0, FloatDistribution(7.0, 7.0)),
        "act": (1.0, space["act"].distribution),
    }
