"""`polyaxon_prefect.tracking`: the client side of the outputs/metrics contract."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from polyaxon_prefect import tracking
from polyaxon_prefect.runtime import read_metrics

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


def test_params_must_be_a_json_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tracking.ENV_PARAMS, "[1, 2]")
    with pytest.raises(ValueError, match="must hold a JSON object"):
        tracking.get_params()
