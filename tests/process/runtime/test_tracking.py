"""`polyaxon_prefect.tracking`: the client side of the outputs/metrics contract."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from polyaxon_prefect import tracking
from polyaxon_prefect.runtime import new_run_context, read_metrics, read_outputs, run_process
from tests.unit.runtime.test_tracking import (  # _fresh_tracking: autouse here too
    _RUN_ENV,
    _fresh_tracking,  # noqa: F401
)

pytestmark = pytest.mark.process


PY = sys.executable


def _child_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _RUN_ENV}
    # the child imports this checkout, wherever pytest runs from
    root = str(Path(tracking.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return {**env, **extra}


def test_round_trip_through_a_real_process(tmp_path: Path) -> None:
    ctx = new_run_context("train", "mnist", artifacts_root=tmp_path / "store").make_dirs()
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
    ctx = new_run_context("train", "mnist", artifacts_root=tmp_path / "store").make_dirs()
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
