"""Polyaxon's framework integrations on the compat packages, with the real frameworks (CPU):
Keras 3 on the torch backend (``PolyaxonCallback``, v0 ``PolyaxonKeras``), Lightning's logger,
and TensorBoard events under the run's outputs, as the ``tensorboard`` hub component reads them
(its ``--logdir`` is the run's ``outputs``). Each script runs as a job through the runtime."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime import RunContext, new_run_context
from polyaxon_prefect.runtime._one_process import execute_job, prepare_job
from polyaxon_prefect.tracking import read_metrics_file

pytestmark = [pytest.mark.process, pytest.mark.slow]

SCRIPTS = Path(__file__).parent / "frameworks"


def run(tmp_path: Path, script: str, env: dict[str, str] | None = None) -> RunContext:
    if (SCRIPTS / script).exists():
        shutil.copy(SCRIPTS / script, tmp_path / script)
    env_yaml = "".join(f"\n      - {{name: {k}, value: {v}}}" for k, v in (env or {}).items())
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nrun:\n  kind: job\n  container:\n"
        f"    command: [python, {script}]\n    env: {'[]' if not env else ''}{env_yaml}\n"
    )
    ctx = new_run_context("t", "proj", artifacts_root=tmp_path / "artifacts")
    job = prepare_job(load_polyaxonfile(path), connections={}, run_context=ctx)
    lines: list[str] = []
    result = execute_job(job, on_line=lambda stream, line: lines.append(line))
    assert str(result.status) == "succeeded", (result.message, lines[-20:])
    return ctx


def test_keras_callbacks(tmp_path: Path) -> None:
    if importlib.util.find_spec("keras") is None:  # importing it here needs a backend
        pytest.skip("keras is not installed")
    ctx = run(tmp_path, "keras_train.py", {"KERAS_BACKEND": "torch"})
    records = read_metrics_file(ctx.run_outputs_path / "metrics.jsonl")
    v1 = [r for r in records if "val_loss" in r]
    assert [r["step"] for r in v1] == [0, 1, 2]
    assert {"loss", "accuracy", "val_accuracy"} <= set(v1[0])
    best = [r["best_val_loss"] for r in v1 if "best_val_loss" in r]
    assert best and best[-1] == min(r["val_loss"] for r in v1)
    v0 = [r for r in records if set(r) == {"step", "timestamp", "loss"}]
    assert [r["step"] for r in v0] == [0, 1, 2]
    assert (ctx.run_outputs_path / "model" / "model.keras").stat().st_size > 0
    inputs = (ctx.run_outputs_path / "logged_inputs.json").read_text()
    assert '"epochs": 3' in inputs


def test_lightning_logger(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    ctx = run(tmp_path, "lightning_train.py")
    records = read_metrics_file(ctx.run_outputs_path / "metrics.jsonl")
    losses = [r for r in records if "train_loss" in r]
    assert len(losses) >= 4 and all(isinstance(r["step"], int) for r in losses)
    assert losses[-1]["step"] > losses[0]["step"]
    assert '"lr": 0.1' in (ctx.run_outputs_path / "logged_inputs.json").read_text()


def test_tensorboard_events_are_the_runs_artifacts(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    ctx = run(tmp_path, "tensorboard_train.py")
    # what `tensorboard --logdir <run>/outputs` (the hub component) loads
    events = EventMultiplexer().AddRunsFromDirectory(str(ctx.run_outputs_path)).Reload()
    assert sorted(events.Runs()) == ["eval", "tensorboard"]
    loss = events.Scalars("tensorboard", "loss")
    assert [(e.step, round(e.value, 3)) for e in loss] == [(0, 1.0), (1, 0.5), (2, 0.333)]
    assert events.Scalars("eval", "accuracy")[0].value == 0.5


def test_scikit_log_classifier_and_log_regressor(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    (tmp_path / "sk.py").write_text(
        "from sklearn.datasets import load_iris, load_diabetes\n"
        "from sklearn.linear_model import LogisticRegression, Ridge\n"
        "from polyaxon.tracking.contrib.scikit import log_classifier, log_regressor\n"
        "X, y = load_iris(return_X_y=True)\n"
        "log_classifier(LogisticRegression(max_iter=500).fit(X, y), X, y)\n"
        "X, y = load_diabetes(return_X_y=True)\n"
        "log_regressor(Ridge().fit(X, y), X, y)\n"
    )
    ctx = run(tmp_path, "sk.py")
    classifier, regressor = read_metrics_file(ctx.run_outputs_path / "metrics.jsonl")
    assert {"accuracy", "f1", "precision_class_0_test", "support_class_2_test"} <= set(classifier)
    assert classifier["support_class_2_test"] == 50 and classifier["accuracy"] > 0.9
    assert {"evs", "me", "mae", "r2"} <= set(regressor) and 0 < regressor["r2"] < 1
