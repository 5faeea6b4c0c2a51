"""A run's metrics.jsonl mirrored into TensorBoard event files, read back with TensorBoard's
own reader; its history as `metrics --json` shows it."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect import tracking
from polyaxon_prefect.runtime import (
    events_path,
    jsonable_history,
    metric_events,
    run_metric_history,
)
from polyaxon_prefect.runtime.metrics._tensorboard import MetricEvents

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import (
    EventAccumulator,
)


def _log(outputs: Path, **kwargs: Any) -> None:
    tracking.init(outputs_path=str(outputs))
    tracking.log_metrics(**kwargs)


def _scalars(outputs: Path, tag: str) -> list[tuple[int, float]]:
    events = EventAccumulator(str(events_path(outputs)))
    events.Reload()
    return [(event.step, event.value) for event in events.Scalars(tag)]


@pytest.fixture(autouse=True)
def _own_tracking_state() -> Any:
    saved = dict(tracking._state)
    yield
    tracking._state.update(saved)


def test_three_steps_become_three_scalars_and_a_history(tmp_path: Path) -> None:
    outputs = tmp_path / "run" / "outputs"
    for step in range(3):
        _log(outputs, step=step, loss=1.0 / (step + 1), accuracy=0.5 + step / 10)
    mirror = MetricEvents(outputs)
    mirror.reset()
    assert mirror.sync() == 6
    mirror.close()
    loss = _scalars(outputs, "loss")
    assert [step for step, _ in loss] == [0, 1, 2]
    assert [value for _, value in loss] == pytest.approx([1.0, 0.5, 1 / 3])  # float32 in TB
    assert [step for step, _ in _scalars(outputs, "accuracy")] == [0, 1, 2]

    history = run_metric_history(outputs.parent)
    assert list(history) == ["loss", "accuracy"]
    assert [(p["step"], p["value"]) for p in history["loss"]] == [(0, 1.0), (1, 0.5), (2, 1 / 3)]
    assert all(p["timestamp"].endswith("+00:00") for p in history["loss"])
    assert list(run_metric_history(outputs.parent, {"accuracy"})) == ["accuracy"]


def test_values_without_a_step_take_the_next_one_and_non_finite_values_stay_json(
    tmp_path: Path,
) -> None:
    outputs = tmp_path / "outputs"
    _log(outputs, loss=2.0)
    _log(outputs, loss=math.nan)
    _log(outputs, step=10, loss=1.0)
    mirror = MetricEvents(outputs)
    mirror.sync()
    mirror.close()
    steps = [step for step, _ in _scalars(outputs, "loss")]
    assert steps == [0, 1, 10]
    shown = jsonable_history(run_metric_history(outputs.parent))
    assert [p["value"] for p in shown["loss"]] == [2.0, "nan", 1.0]
    json.dumps(shown, allow_nan=False)  # strict JSON


def test_a_line_being_written_waits_and_a_new_attempt_starts_the_events_again(
    tmp_path: Path,
) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    source = outputs / tracking.METRICS_FILE
    source.write_text('{"step": 0, "loss": 3.0}\n{"step": 1, "lo', encoding="utf-8")
    mirror = MetricEvents(outputs)
    mirror.reset()
    assert mirror.sync() == 1
    with source.open("a", encoding="utf-8") as handle:
        handle.write('ss": 2.0}\n')
    assert mirror.sync() == 1
    mirror.close()
    assert _scalars(outputs, "loss") == [(0, 3.0), (1, 2.0)]

    # a retry: the executor drops the old file, the process writes a new one
    with metric_events([outputs], say=pytest.fail):
        source.unlink()
        _log(outputs, step=0, loss=9.0)
    assert _scalars(outputs, "loss") == [(0, 9.0)]
    assert len(list(events_path(outputs).iterdir())) == 1


def test_events_are_written_while_the_run_goes_on(tmp_path: Path, monkeypatch: Any) -> None:
    from polyaxon_prefect.runtime.metrics import _tensorboard

    monkeypatch.setattr(_tensorboard, "_POLL_SECONDS", 0.05)
    outputs = tmp_path / "outputs"
    seen: list[int] = []
    with metric_events([outputs], say=pytest.fail):
        _log(outputs, step=0, loss=1.0)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not seen:
            folder = events_path(outputs)
            if folder.is_dir() and any(folder.iterdir()):
                seen = [step for step, _ in _scalars(outputs, "loss")] if _tags(outputs) else []
            time.sleep(0.05)
    assert seen == [0], "the first step is readable before the run ends"


def test_one_ticker_follows_every_open_run_and_stops_with_the_last(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # opening a run's mirror hands no work to a thread (one ticker syncs them all), yet each
    # run's events are written while it goes on, and a closed run's never again
    from polyaxon_prefect.runtime.metrics import _tensorboard

    monkeypatch.setattr(_tensorboard, "_POLL_SECONDS", 0.05)
    first, second = tmp_path / "first", tmp_path / "second"

    def written(outputs: Path) -> bool:
        folder = events_path(outputs)
        return folder.is_dir() and any(folder.iterdir()) and _tags(outputs)

    with metric_events([first], say=pytest.fail), metric_events([second], say=pytest.fail):
        assert len(_tensorboard._TICKER.mirrors) == 2
        _log(first, step=0, loss=1.0)
        _log(second, step=0, loss=2.0)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (written(first) and written(second)):
            time.sleep(0.05)
        assert written(first) and written(second), "both runs are followed while they run"
    assert not _tensorboard._TICKER.mirrors
    _log(first, step=1, loss=0.5)  # after its end: never mirrored
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _tensorboard._TICKER.running:
        time.sleep(0.05)
    assert not _tensorboard._TICKER.running, "the ticker ends once no run is open"
    assert _scalars(first, "loss") == [(0, 1.0)]
    assert _scalars(second, "loss") == [(0, 2.0)]


def _tags(outputs: Path) -> bool:
    events = EventAccumulator(str(events_path(outputs)))
    events.Reload()
    return "loss" in events.Tags()["scalars"]


def test_without_tensorboard_the_run_goes_on_and_one_line_says_so(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from polyaxon_prefect.runtime.metrics import _tensorboard

    monkeypatch.setattr(_tensorboard, "tensorboard_installed", lambda: False)
    said: list[str] = []
    quiet = tmp_path / "quiet"
    with metric_events([quiet], said.append):
        pass  # logged nothing: nothing to say
    assert said == []
    outputs = tmp_path / "outputs"
    with metric_events([outputs], said.append):
        _log(outputs, step=0, loss=1.0)
    assert said == [
        "TensorBoard event files were not written (tensorboard is not installed: "
        "pip install 'polyaxon-prefect[tensorboard]')"
    ]
    assert not events_path(outputs).exists()


def test_turned_off_writes_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("POLYAXON_PREFECT_TENSORBOARD", "false")
    outputs = tmp_path / "outputs"
    with metric_events([outputs], say=pytest.fail):
        _log(outputs, step=0, loss=1.0)
    assert not events_path(outputs).exists()


def test_a_mirror_that_cannot_write_says_so_once_and_never_fails_the_run(
    tmp_path: Path,
) -> None:
    outputs = tmp_path / "outputs"
    said: list[str] = []
    with metric_events([outputs], said.append):
        _log(outputs, step=0, loss=1.0)
        events_path(outputs).parent.mkdir(parents=True, exist_ok=True)
        events_path(outputs).write_text("a file where the folder goes")
        _log(outputs, step=1, loss=0.5)
    assert len(said) == 1 and said[0].startswith("TensorBoard event files are not written")
    assert threading.active_count() >= 1


def test_the_record_checksum_is_tensorboards() -> None:
    import os as _os

    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as theirs

    from polyaxon_prefect.runtime.metrics._tensorboard import masked_crc32c

    for size in (0, 1, 8, 31, 200, 4096):
        data = _os.urandom(size)
        assert masked_crc32c(data) == theirs(data)
