"""`polyaxon_prefect.tracking`: the client side of the outputs/metrics contract."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from polyaxon_prefect import tracking
from polyaxon_prefect.runtime import create_run_context, read_metrics, read_outputs, run_process

PY = sys.executable
_RUN_ENV = [
    tracking.ENV_RUN_UUID,
    tracking.ENV_RUN_NAME,
    tracking.ENV_PROJECT,
    tracking.ENV_ARTIFACTS_PATH,
    tracking.ENV_OUTPUTS_PATH,
    tracking.ENV_PARAMS,
    tracking.POLYAXON_ENV_OUTPUTS_PATH,
    tracking.POLYAXON_ENV_PARAMS,
    tracking.POLYAXON_ENV_RUN_INSTANCE,
]


@pytest.fixture(autouse=True)
def _fresh_tracking(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in _RUN_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tracking, "_state", {"artifacts": None, "outputs": None, "warned": False})
    yield


def _child_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _RUN_ENV}
    # the child imports this checkout, wherever pytest runs from
    root = str(Path(tracking.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return {**env, **extra}


def test_round_trip_through_a_real_process(tmp_path: Path) -> None:
    ctx = create_run_context("train", "mnist", artifacts_root=tmp_path / "store")
    script = textwrap.dedent("""
        from polyaxon_prefect import tracking
        tracking.init()
        params = tracking.get_params()
        print("lr", params["learning_rate"])
        tracking.log_metrics(step=0, loss=1.0)
        tracking.log_metrics(step=1, loss=0.5, accuracy=0.8)
        tracking.log_metric("loss", float("nan"), step=2)
        tracking.log_outputs(lr_used=params["learning_rate"], layers=[1, 2])
        tracking.log_outputs(accuracy=0.8)
        with open(tracking.get_artifacts_path() + "/model.txt", "w") as f:
            f.write("weights")
    """)
    result = run_process(
        [PY, "-c", script],
        env=_child_env(ctx.env_vars({"learning_rate": 0.01})),
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr_tail
    assert result.stdout_tail == ["lr 0.01"]
    assert read_outputs(ctx.run_outputs_path) == {
        "lr_used": 0.01,
        "layers": [1, 2],
        "accuracy": 0.8,
    }
    metrics = read_metrics(ctx.run_outputs_path)
    assert [m["step"] for m in metrics] == [0, 1, 2]
    assert metrics[1]["accuracy"] == 0.8
    assert math.isnan(metrics[2]["loss"])
    assert all("timestamp" in m for m in metrics)
    last = tracking.get_last_metrics(metrics)
    assert last["accuracy"] == 0.8 and math.isnan(last["loss"])
    assert (ctx.run_artifacts_path / "model.txt").read_text() == "weights"
    assert not (tmp_path / tracking.LOCAL_RUN_DIR).exists()  # nothing fell back to local


def test_a_script_written_for_polyaxon_finds_its_env(tmp_path: Path) -> None:
    ctx = create_run_context("train", "mnist", artifacts_root=tmp_path / "store")
    script = textwrap.dedent("""
        import json, os
        params = json.loads(os.environ["POLYAXON_PARAMS"])
        out = os.environ["POLYAXON_RUN_OUTPUTS_PATH"]
        open(os.path.join(out, "preds.csv"), "w").write(str(params["n"]))
    """)
    result = run_process(
        [PY, "-c", script], env=_child_env(ctx.env_vars({"n": 5})), cwd=tmp_path, timeout=60
    )
    assert result.returncode == 0, result.stderr_tail
    assert (ctx.run_outputs_path / "preds.csv").read_text() == "5"


def test_importing_tracking_loads_nothing_heavy(tmp_path: Path) -> None:
    code = (
        "import sys; import polyaxon_prefect.tracking; "
        "print(sorted(m for m in ('pydantic', 'yaml', 'prefect', 'optuna', 'numpy', 'jinja2') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [PY, "-c", code], env=_child_env({}), cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_log_outputs_merges_and_leaves_no_temp_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tracking.ENV_OUTPUTS_PATH, str(tmp_path))
    tracking.log_outputs(a=1, b="x")
    tracking.log_outputs(b="y", c={"k": [1.5]})
    assert json.loads((tmp_path / "outputs.json").read_text()) == {
        "a": 1,
        "b": "y",
        "c": {"k": [1.5]},
    }
    assert tracking.get_outputs()["b"] == "y"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".outputs.lock") == [
        "outputs.json"
    ]


def test_non_json_output_is_a_clear_type_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tracking.ENV_OUTPUTS_PATH, str(tmp_path))
    with pytest.raises(TypeError, match=r"output `model` must be JSON serialisable.*object"):
        tracking.log_outputs(ok=1, model=object())
    with pytest.raises(TypeError, match="output `loss` must be JSON serialisable"):
        tracking.log_outputs(loss=float("nan"))
    assert not (tmp_path / "outputs.json").exists()  # nothing half-written


def test_scalar_like_objects_are_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Scalar:  # the shape of a numpy scalar / 0-d tensor
        def item(self) -> float:
            return 0.25

        def __float__(self) -> float:
            return 0.25

    monkeypatch.setenv(tracking.ENV_OUTPUTS_PATH, str(tmp_path))
    tracking.log_outputs(score=Scalar())
    tracking.log_metrics(step=1, score=Scalar())
    assert tracking.get_outputs() == {"score": 0.25}
    assert tracking.get_last_metrics() == {"score": 0.25}


@pytest.mark.parametrize("bad", ["0.5", True, None, [1.0]])
def test_metrics_must_be_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad) -> None:
    monkeypatch.setenv(tracking.ENV_OUTPUTS_PATH, str(tmp_path))
    with pytest.raises(TypeError, match="metric `loss` must be a number"):
        tracking.log_metrics(step=0, loss=bad)


def test_step_must_be_an_int(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tracking.ENV_OUTPUTS_PATH, str(tmp_path))
    with pytest.raises(TypeError, match="step must be an int"):
        tracking.log_metrics(step=1.5, loss=1.0)


def test_metrics_file_is_json_lines_any_language_can_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tracking.ENV_OUTPUTS_PATH, str(tmp_path))
    tracking.log_metrics(step=3, loss=0.1, inf_metric=float("inf"))
    line = (tmp_path / "metrics.jsonl").read_text().splitlines()[0]
    record = json.loads(line)  # strict JSON: no NaN/Infinity tokens
    assert record["step"] == 3 and record["loss"] == 0.1 and record["inf_metric"] == "inf"
    assert record["timestamp"].endswith("+00:00")


def test_truncated_last_metrics_line_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text('{"step": 0, "loss": 1.0}\n{"step": 1, "lo')
    assert read_metrics(tmp_path) == [{"step": 0, "loss": 1.0}]


def test_run_by_hand_writes_locally_and_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert tracking.get_params() == {}
        tracking.log_outputs(a=1)
        tracking.log_metrics(step=0, loss=1.0)
    assert len([w for w in caught if "not running under polyaxon-prefect" in str(w.message)]) == 1
    local = tmp_path / tracking.LOCAL_RUN_DIR / "outputs"
    assert json.loads((local / "outputs.json").read_text()) == {"a": 1}
    assert (local / "metrics.jsonl").exists()


def test_init_paths_override_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tracking.ENV_OUTPUTS_PATH, str(tmp_path / "env"))
    tracking.init(artifacts_path=tmp_path / "mine")
    tracking.log_outputs(a=1)
    assert (tmp_path / "mine" / "outputs" / "outputs.json").exists()
    assert tracking.get_artifacts_path() == str(tmp_path / "mine")


def test_concurrent_writers_do_not_lose_outputs(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import sys
        from polyaxon_prefect import tracking
        for i in range(15):
            tracking.log_outputs(**{f"w{sys.argv[1]}_{i}": i})
            tracking.log_metrics(step=i, **{f"w{sys.argv[1]}": i})
    """)
    env = _child_env({tracking.ENV_OUTPUTS_PATH: str(tmp_path)})
    procs = [subprocess.Popen([PY, "-c", script, str(n)], env=env, cwd=tmp_path) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    assert len(read_outputs(tmp_path)) == 4 * 15
    assert len(read_metrics(tmp_path)) == 4 * 15


def test_params_must_be_a_json_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tracking.ENV_PARAMS, "[1, 2]")
    with pytest.raises(ValueError, match="must hold a JSON object"):
        tracking.get_params()
