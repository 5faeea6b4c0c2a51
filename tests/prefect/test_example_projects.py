"""Public Polyaxon example projects (``tests/projects``, see its README) run end to end through
``polyaxon-prefect run`` on the test server, their training code's tracking calls untouched:
v1.1 components whose ``init: git`` clones polyaxon-examples (served here from a local copy of
the same files, through git's own ``url.<x>.insteadOf``, so the Polyaxonfile is unchanged) and
legacy v0 experiments with ``polyaxon_client``. Each run's outputs and metrics are read back with
``get --json``, as Polyaxon's run page shows them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# each run is a CLI process on the server plus a training script: 5-25 s each
pytestmark = [pytest.mark.process, pytest.mark.server, pytest.mark.slow]

PROJECTS = Path(__file__).parent.parent / "projects"
UPSTREAM = "https://github.com/polyaxon/polyaxon-examples"
# where each v1 project sits in polyaxon-examples (its Polyaxonfile clones the repo and runs
# the script from there)
IN_REPO = {
    "v1_sklearn_iris": "in_cluster/sklearn/iris",
    "v1_sklearn_random_forest": "in_cluster/sklearn/random_forest",
    "v1_sklearn_sgd_classifier": "in_cluster/sklearn/sgd_classifier",
    "v1_kubeflow_pytorchjob": "in_cluster/kubeflow/pytorchjob",
}


@pytest.fixture(scope="module")
def examples_repo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A local git repository laid out as polyaxon-examples, and the git settings that make a
    clone of the upstream URL read it (no network)."""
    repo = tmp_path_factory.mktemp("examples") / "polyaxon-examples"
    for name, where in IN_REPO.items():
        shutil.copytree(PROJECTS / name, repo / where)
    git = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    git["GIT_COMMITTER_EMAIL"] = "t@t"
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "examples"]):
        subprocess.run(["git", *args], cwd=repo, env={**os.environ, **git}, check=True)
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{repo.as_uri()}.insteadOf",
        "GIT_CONFIG_VALUE_0": UPSTREAM,
    }


def run_project(api: str, env: dict[str, str], path: Path, *params: str) -> dict[str, Any]:
    """``run -f path --json`` then ``get <run> --json`` (what is returned), both as a user's
    terminal would."""
    args = [a for p in params for a in ("-P", p)]
    full = {**os.environ, **env, "PREFECT_API_URL": api}
    done = subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", "run", "-f", str(path), *args, "--json"],
        capture_output=True,
        text=True,
        env=full,
        timeout=300,
        check=False,
        cwd=path.parent,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    ran = json.loads(done.stdout)
    got = subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", "get", ran["uuid"], "--json"],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
        check=True,
    )
    return json.loads(got.stdout)


def lineage(run: dict[str, Any]) -> list[dict[str, Any]]:
    text = (Path(run["artifacts_path"]) / "lineage.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_v1_sklearn_iris(prefect_server: str, examples_repo: dict[str, str]) -> None:
    """``tracking.init``, ``log_metrics(**metrics)``, ``log_model(path, name, framework)``."""
    got = run_project(prefect_server, examples_repo, PROJECTS / "v1_sklearn_iris/polyaxonfile.yml")
    assert got["status"] == "succeeded" and got["kind"] == "job"
    assert set(got["metrics"]) == {"accuracy", "recall", "f1"}
    assert 0.8 < got["metrics"]["accuracy"] <= 1.0
    assert got["params"]["n_neighbors"] == 3  # its declared type, int (issue 33: one record shape)
    model = Path(got["artifacts_path"]) / "assets/model/iris-model.joblib"
    assert model.stat().st_size > 0
    assert lineage(got)[-1]["framework"] == "scikit-learn"


def test_v1_sklearn_random_forest_run_object(
    prefect_server: str, examples_repo: dict[str, str]
) -> None:
    """``from polyaxon.tracking import Run``: ``Run().log_data_ref``, ``log_metrics``."""
    path = PROJECTS / "v1_sklearn_random_forest/polyaxonfile.yml"
    got = run_project(prefect_server, examples_repo, path, "n_estimators=5")
    assert got["status"] == "succeeded" and got["params"]["n_estimators"] == 5
    assert set(got["metrics"]) == {"accuracy_mean", "accuracy_std"}
    assert 0 < got["metrics"]["accuracy_mean"] <= 1
    assert [r["name"] for r in lineage(got)] == ["dataset_X", "dataset_y"]


def test_v1_sklearn_sgd_classifier(prefect_server: str, examples_repo: dict[str, str]) -> None:
    """The script runs from the clone by absolute path (``globals.artifacts_path``). Its
    default ``loss: log`` was renamed ``log_loss`` by scikit-learn 1.3: given with ``-P``."""
    path = PROJECTS / "v1_sklearn_sgd_classifier/polyaxonfile.yml"
    got = run_project(prefect_server, examples_repo, path, "loss=log_loss")
    assert got["status"] == "succeeded"
    assert set(got["metrics"]) == {"accuracy_mean", "accuracy_std"}


def test_v0_sklearn_random_forest(prefect_server: str) -> None:
    """Legacy ``kind: experiment`` + ``polyaxon_client.tracking.Experiment``."""
    got = run_project(prefect_server, {}, PROJECTS / "v0_sklearn_random_forest/polyaxonfile.yml")
    assert got["status"] == "succeeded"
    assert set(got["metrics"]) == {"accuracy_mean", "accuracy_std"}
    assert got["params"] == {"n_estimators": 3, "max_features": 3, "min_samples_leaf": 80}
    assert [r["name"] for r in lineage(got)] == ["dataset_X", "dataset_y"]


def test_v0_pytorch_mnist(prefect_server: str) -> None:
    """Legacy PyTorch: ``Experiment``, ``get_data_paths()`` (the artifacts root's ``data``),
    a test-set ``log_metrics(loss=..., accuracy=...)`` per epoch (synthetic MNIST)."""
    got = run_project(prefect_server, {}, PROJECTS / "v0_pytorch_mnist/polyaxonfile.yml")
    assert got["status"] == "succeeded"
    assert set(got["metrics"]) == {"loss", "accuracy"}
    metrics = Path(got["artifacts_path"]) / "outputs/metrics.jsonl"
    assert len(metrics.read_text().splitlines()) == 5, "one line per epoch (epochs: 5)"


def test_v1_kubeflow_pytorchjob_distributed_gloo(
    prefect_server: str, examples_repo: dict[str, str], tmp_path: Path
) -> None:
    """A ``pytorchjob`` (master + 1 worker) on gloo, TensorBoard through tensorboardX (no
    Polyaxon tracking calls: the operator's env, ``WORLD_SIZE``/``RANK``/``MASTER_ADDR``, is
    its whole contract). The file
    says ``version: 1`` (the v1.0 header polyaxon 2.x ignores; read as 1.1 with a warning): the
    test runs an unchanged copy in a temporary directory, where the script writes its logs. Each
    replica requests one ``nvidia.com/gpu``: ``CUDA_VISIBLE_DEVICES=0,1`` stands for the two
    GPUs (the CPU-only torch sees none, so the script takes its gloo/CPU path)."""
    pytest.importorskip("tensorboardX")
    source = (PROJECTS / "v1_kubeflow_pytorchjob/polyaxonfile.yaml").read_text()
    assert source.startswith("version: 1\n")
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(source)
    env = {**examples_repo, "CUDA_VISIBLE_DEVICES": "0,1"}
    got = run_project(prefect_server, env, path)
    assert got["status"] == "succeeded", got
    # `--dir logs` (the script's default) is relative to the working directory: the file's
    # directory (two replicas starting in the same second share one file name: 1 or 2 files)
    assert list((tmp_path / "logs").glob("events.out.tfevents.*"))
    logs = "".join(p.read_text() for p in Path(got["artifacts_path"]).rglob("*.log"))
    assert logs.count("Using distributed PyTorch with gloo backend") == 2, logs[-2000:]
    assert logs.count("accuracy=") == 2
