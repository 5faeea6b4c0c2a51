"""Polyaxon's tracking APIs (v1/v2 ``polyaxon``, v0 ``polyaxon_client``) as the compat packages
give them: each call in a real Python subprocess whose path holds *only* the compat directories
(``polyaxon_prefect`` itself is not importable there, as in a job's foreign interpreter), then
the run's files are read back."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.runtime.render._compat_path import COMPAT_DIR, PACKAGES
from polyaxon_prefect.tracking import read_metrics_file

pytestmark = pytest.mark.process

UUID = "0123456789abcdef0123456789abcdef"


def run_script(
    tmp_path: Path, code: str, env: dict[str, str] | None = None
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Run ``code`` as a job would (the tracking env of a run under ``tmp_path``), without
    site-packages: only the standard library and the compat directories can be imported."""
    run_dir = tmp_path / "artifacts" / "proj" / UUID
    outputs = run_dir / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    full_env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": ":".join([str(COMPAT_DIR), *(str(p) for p in PACKAGES.values())]),
        "POLYAXON_PREFECT_RUN_UUID": UUID,
        "POLYAXON_PREFECT_RUN_NAME": "demo",
        "POLYAXON_PREFECT_PROJECT": "proj",
        "POLYAXON_PREFECT_RUN_ARTIFACTS_PATH": str(run_dir),
        "POLYAXON_PREFECT_RUN_OUTPUTS_PATH": str(outputs),
        "POLYAXON_PREFECT_PARAMS": json.dumps({"lr": 0.1, "epochs": 2}),
        "POLYAXON_PREFECT_DECLARED_OUTPUTS": json.dumps(["accuracy", "loss"]),
        **(env or {}),
    }
    done = subprocess.run(
        [sys.executable, "-S", "-c", textwrap.dedent(code)],  # -S: no site-packages
        env=full_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return run_dir, done


def metrics(run_dir: Path) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in r.items() if k != "timestamp"}
        for r in read_metrics_file(run_dir / "outputs" / "metrics.jsonl")
    ]


def outputs(run_dir: Path, name: str = "outputs.json") -> dict[str, Any]:
    return json.loads((run_dir / "outputs" / name).read_text())


def lineage(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "lineage.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


# --------------------------------------------------------------------------------------------------
# v1/v2: from polyaxon import tracking


def test_compat_is_what_imports_and_polyaxon_prefect_is_not_needed(tmp_path: Path) -> None:
    _, done = run_script(
        tmp_path,
        """
        import importlib.util, sys
        import polyaxon, polyaxon_client
        from polyaxon import tracking
        assert polyaxon.POLYAXON_PREFECT_COMPAT and polyaxon_client.POLYAXON_PREFECT_COMPAT
        assert importlib.util.find_spec("polyaxon_prefect") is None
        assert not [m for m in sys.modules if m.split(".")[0] in ("prefect", "optuna")]
        print(polyaxon.__file__)
        """,
    )
    assert done.stdout.strip().startswith(str(COMPAT_DIR))


def test_init_sets_the_tracking_run(tmp_path: Path) -> None:
    _, done = run_script(
        tmp_path,
        """
        from polyaxon import tracking
        run = tracking.init()
        assert tracking.TRACKING_RUN is run and tracking.get_or_create_run() is run
        print(run.run_uuid, run.project, run.get_inputs())
        """,
    )
    assert done.stdout.split(" ", 2)[:2] == [UUID, "proj"]
    assert "'lr': 0.1" in done.stdout


def test_log_metrics_and_log_metric(tmp_path: Path) -> None:
    run_dir, _ = run_script(
        tmp_path,
        """
        from polyaxon import tracking
        tracking.init()
        tracking.log_metrics(step=1, loss=0.5, accuracy=0.75)
        tracking.log_metric("loss", 0.25, step=2)
        tracking.log_metric(name="lr", value=0.1)
        """,
    )
    assert metrics(run_dir) == [
        {"step": 1, "loss": 0.5, "accuracy": 0.75},
        {"step": 2, "loss": 0.25},
        {"step": None, "lr": 0.1},
    ]


def test_log_outputs_declared_go_to_outputs_others_set_aside(tmp_path: Path) -> None:
    run_dir, done = run_script(
        tmp_path,
        """
        from polyaxon import tracking
        tracking.log_outputs(accuracy=0.9, notes="fine")
        tracking.log_outputs(loss=0.1, more=2)
        """,
    )
    assert outputs(run_dir) == {"accuracy": 0.9, "loss": 0.1}
    assert outputs(run_dir, "logged_outputs.json") == {"notes": "fine", "more": 2}
    assert done.stderr.count("RuntimeWarning") == 1
    assert "does not declare" in done.stderr


def test_log_inputs_are_kept_beside_the_outputs(tmp_path: Path) -> None:
    run_dir, done = run_script(
        tmp_path, "from polyaxon import tracking\ntracking.log_inputs(batch_size=32, opt='adam')\n"
    )
    assert outputs(run_dir, "logged_inputs.json") == {"batch_size": 32, "opt": "adam"}
    assert not (run_dir / "outputs" / "outputs.json").exists()
    assert "Warning" not in done.stderr


def test_paths(tmp_path: Path) -> None:
    run_dir, done = run_script(
        tmp_path,
        """
        from polyaxon import tracking
        print(tracking.get_artifacts_path())
        print(tracking.get_outputs_path())
        print(tracking.get_outputs_path("plots"))
        print(tracking.get_tensorboard_path())
        print(tracking.get_log_level())
        """,
        env={"POLYAXON_LOG_LEVEL": "DEBUG"},
    )
    out = done.stdout.split()
    assert out == [
        str(run_dir),
        str(run_dir / "outputs"),
        str(run_dir / "outputs" / "plots"),
        str(run_dir / "outputs" / "tensorboard"),
        "DEBUG",
    ]
    assert (run_dir / "outputs" / "tensorboard").is_dir()


def test_log_model_and_log_artifact_copy_into_the_run(tmp_path: Path) -> None:
    run_dir, _ = run_script(
        tmp_path,
        """
        import os
        from polyaxon import tracking
        open("model.joblib", "w").write("weights")
        os.makedirs("ckpt", exist_ok=True); open("ckpt/a.pt", "w").write("a")
        open("report.csv", "w").write("x,y")
        tracking.log_model("model.joblib", name="iris-model", framework="scikit-learn")
        tracking.log_model("ckpt", name="ckpt", step=3)
        tracking.log_artifact("report.csv", name="report", kind="csv")
        tracking.log_artifact("report.csv", rel_path="tables")
        """,
    )
    assert (run_dir / "assets/model/iris-model.joblib").read_text() == "weights"
    assert (run_dir / "assets/model/ckpt_3/a.pt").read_text() == "a"
    assert (run_dir / "assets/csv/report.csv").read_text() == "x,y"
    assert (run_dir / "outputs/tables/report.csv").read_text() == "x,y"
    first = lineage(run_dir)[0]
    assert first["kind"] == "model" and first["framework"] == "scikit-learn"
    assert first["path"] == "assets/model/iris-model.joblib"


def test_log_text_html_dataframe(tmp_path: Path) -> None:
    run_dir, _ = run_script(
        tmp_path,
        """
        from polyaxon import tracking
        tracking.log_text(name="notes", text="hello", step=1)
        tracking.log_html(name="page", html="<b>x</b>")
        class Frame:
            def to_csv(self, path): open(path, "w").write("a,b\\n1,2\\n")
        tracking.log_dataframe(Frame(), name="table")
        """,
    )
    assert (run_dir / "assets/text/notes_1.txt").read_text() == "hello"
    assert (run_dir / "assets/html/page.html").read_text() == "<b>x</b>"
    assert (run_dir / "assets/dataframe/table.csv").read_text() == "a,b\n1,2\n"


def test_refs_tags_and_meta_go_to_lineage(tmp_path: Path) -> None:
    run_dir, _ = run_script(
        tmp_path,
        """
        from polyaxon import tracking
        tracking.log_data_ref(content=[1, 2, 3], name="x_train")
        tracking.log_file_ref(path="/data/a.csv", name="a")
        tracking.log_dir_ref(path="/data")
        tracking.log_model_ref(path="/m", name="m", framework="keras")
        tracking.log_artifact_ref(path="/r", kind="csv", name="r")
        tracking.log_tags(["a", "b"])
        tracking.log_meta(owner="me")
        """,
    )
    kinds = [(r["kind"], r.get("name")) for r in lineage(run_dir)]
    assert kinds == [
        ("data", "x_train"),
        ("file", "a"),
        ("dir", None),
        ("model", "m"),
        ("csv", "r"),
        ("tags", None),
        ("meta", None),
    ]
    assert len(lineage(run_dir)[0]["hash"]) == 32


NOOPS_V1 = [
    "log_code_ref()",
    "log_env()",
    "set_name('x')",
    "set_description('x')",
    "log_status('running')",
    "log_succeeded()",
    "log_stopped()",
    "log_failed(reason='x')",
    "log_image(None, name='x')",
    "log_audio(None, name='x')",
    "log_video(None, name='x')",
    "log_histogram('h', [1, 2], bins=2)",
    "log_np_histogram('h', [1], [1])",
    "log_roc_auc_curve('c', [0], [1], 0.5)",
    "log_pr_curve('c', [0], [1], 0.5)",
    "log_curve('c', [0], [1])",
    "log_mpl_image(None)",
    "log_plotly_chart('c', None)",
    "log_bokeh_chart('c', None)",
    "log_altair_chart('c', None)",
    "log_mpl_plotly_chart('c', None)",
    "set_readme('x')",
    "promote_to_model_version('v1')",
    "push_offline_run()",
]


@pytest.mark.parametrize("call", NOOPS_V1)
def test_calls_without_meaning_warn_once_and_go_on(tmp_path: Path, call: str) -> None:
    _, done = run_script(
        tmp_path,
        f"""
        from polyaxon import tracking
        tracking.init()
        assert tracking.{call} is None
        assert tracking.{call} is None
        print("went on")
        """,
    )
    assert done.stdout.strip() == "went on"
    name = call.split("(")[0]
    assert done.stderr.count(f"`{name}`") == 1, done.stderr


def test_log_progress_records_how_far_the_job_is(tmp_path: Path) -> None:
    run_dir, done = run_script(
        tmp_path,
        """
        from polyaxon import tracking
        tracking.init()
        tracking.log_progress(0.25)
        tracking.get_or_create_run().log_progress(0.5)
        """,
    )
    assert "log_progress" not in done.stderr  # no longer a no-op: nothing to warn about
    written = json.loads((run_dir / "outputs" / "progress.json").read_text())
    assert written["progress"] == 0.5 and written["timestamp"]


def test_warnings_as_errors_still_never_fail_the_run(tmp_path: Path) -> None:
    _, done = run_script(
        tmp_path,
        "from polyaxon import tracking\ntracking.log_code_ref()\nprint('went on')\n",
        env={"PYTHONWARNINGS": "error"},
    )
    assert done.stdout.strip() == "went on"
    assert done.stderr.count("`log_code_ref`") == 1


def test_run_client_and_run_class(tmp_path: Path) -> None:
    run_dir, done = run_script(
        tmp_path,
        """
        from polyaxon.client import RunClient
        from polyaxon.tracking.run import Run
        client = RunClient()
        client.log_metrics(step=0, loss=1.0)
        client.log_outputs(accuracy=0.5)
        print(client.run_uuid, client.get_outputs(), Run().run_data["name"])
        """,
    )
    assert metrics(run_dir) == [{"step": 0, "loss": 1.0}]
    assert done.stdout.split(" ", 1) == [UUID, "{'accuracy': 0.5} demo\n"]


# --------------------------------------------------------------------------------------------------
# v0: from polyaxon_client.tracking import Experiment, ...


def test_v0_experiment_logging(tmp_path: Path) -> None:
    run_dir, done = run_script(
        tmp_path,
        """
        from polyaxon_client.tracking import Experiment
        experiment = Experiment()
        experiment.log_metrics(loss=0.5, accuracy=0.8)
        experiment.log_params(lr=0.1)
        experiment.log_tags(["v0"])
        experiment.log_data_ref(data=[1, 2], data_name="dataset_X")
        open("w.h5", "w").write("w")
        experiment.log_artifact("w.h5")
        experiment.log_output("w.h5")
        print(experiment.get_params(), experiment.get_declarations() == experiment.get_params())
        print(experiment.get_outputs_path(), experiment.experiment_id)
        """,
    )
    assert metrics(run_dir) == [{"step": None, "loss": 0.5, "accuracy": 0.8}]
    assert outputs(run_dir, "logged_inputs.json") == {"lr": 0.1}
    assert (run_dir / "outputs" / "w.h5").read_text() == "w"
    assert [r["kind"] for r in lineage(run_dir)] == ["tags", "data"]
    lines = done.stdout.splitlines()
    assert lines[0] == "{'lr': 0.1, 'epochs': 2} True"
    assert lines[1] == f"{run_dir / 'outputs'} {UUID}"


def test_v0_log_artifacts_copies_a_directory(tmp_path: Path) -> None:
    run_dir, _ = run_script(
        tmp_path,
        """
        import os
        from polyaxon_client.tracking import Experiment
        os.makedirs("ckpts"); open("ckpts/1.pt", "w").write("1")
        Experiment().log_artifacts("ckpts")
        Experiment().log_outputs("ckpts")
        """,
    )
    assert (run_dir / "outputs/ckpts/1.pt").read_text() == "1"


def test_v0_paths_and_info(tmp_path: Path) -> None:
    run_dir, done = run_script(
        tmp_path,
        """
        import json
        from polyaxon_client.tracking import (
            Experiment, get_data_paths, get_outputs_path, get_log_level, get_base_outputs_path
        )
        print(json.dumps([get_data_paths(), get_outputs_path(), get_log_level(),
                          get_base_outputs_path(), Experiment.get_experiment_info()]))
        """,
    )
    data, out, level, base, info = json.loads(done.stdout)
    root = tmp_path / "artifacts"
    assert data == {"data": str(root / "data")}
    assert out == str(run_dir / "outputs") and level is None and base == str(root)
    assert info["experiment_uuid"] == UUID and info["project_name"] == "proj"
    _, done = run_script(
        tmp_path,
        "from polyaxon_client.tracking import get_data_paths\nprint(get_data_paths())\n",
        env={"POLYAXON_RUN_DATA_PATHS": '{"mnist": "/mnt/mnist"}'},
    )
    assert done.stdout.strip() == "{'mnist': '/mnt/mnist'}"


PRINT_CLUSTER = """
import json
from polyaxon_client.tracking import Experiment, get_cluster_def, get_task_info, is_master
print(json.dumps([get_cluster_def(), get_task_info(), is_master()]))
print(json.dumps(Experiment.get_tf_config()))
"""


def test_v0_distributed_facts_from_tf_config(tmp_path: Path) -> None:
    tf = {
        "cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]},
        "task": {"type": "worker", "index": 1},
    }
    run_dir, done = run_script(tmp_path, PRINT_CLUSTER, env={"TF_CONFIG": json.dumps(tf)})
    first, second = done.stdout.splitlines()
    assert json.loads(first) == [tf["cluster"], {"type": "worker", "index": 1}, False]
    config = json.loads(second)
    assert config["cluster"] == tf["cluster"] and config["model_dir"] == str(run_dir / "outputs")


@pytest.mark.parametrize(
    ("rank", "task", "master"), [("0", "master", True), ("2", "worker", False)]
)
def test_v0_distributed_facts_from_pytorch_env(
    tmp_path: Path, rank: str, task: str, master: bool
) -> None:
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "WORLD_SIZE": "3", "RANK": rank}
    _, done = run_script(tmp_path, PRINT_CLUSTER, env=env)
    cluster, info, is_master = json.loads(done.stdout.splitlines()[0])
    assert cluster == {"master": ["127.0.0.1:29500"], "worker": ["127.0.0.1:29500"] * 2}
    assert info == {"type": task, "index": 0 if master else int(rank) - 1}
    assert is_master is master


def test_v0_single_process_is_master_with_no_cluster(tmp_path: Path) -> None:
    _, done = run_script(tmp_path, PRINT_CLUSTER)
    assert json.loads(done.stdout.splitlines()[0]) == [None, None, True]


@pytest.mark.parametrize(
    "call", ["log_code_ref()", "log_run_env()", "log_framework('x')", "log_status('x')", "end()"]
)
def test_v0_calls_without_meaning_warn_once(tmp_path: Path, call: str) -> None:
    _, done = run_script(
        tmp_path,
        f"""
        from polyaxon_client.tracking import Experiment
        e = Experiment()
        e.{call}; e.{call}
        print("went on")
        """,
    )
    assert done.stdout.strip() == "went on"
    assert done.stderr.count(f"`{call.split('(')[0]}`") == 1
