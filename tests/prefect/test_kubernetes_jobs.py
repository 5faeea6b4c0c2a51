"""``--backend native`` for ``kind: job`` ops, through Prefect, against a FAKE cluster whose
FAKE KUBELET really runs each pod's containers as local processes.

The API server is kmock's emulator (tests/process/kubernetes/fake_cluster.py), the Job
controller and the garbage collector are played by its fake operator, and its fake kubelet
runs a pod's init containers and main command locally, the pod's ``/plx-context`` mapped to a
directory of its own: so the sh wrapper, the init steps and the outputs handed back on the log
are really executed. Every manifest the run created is checked by the API server's rules
(tests/process/kubernetes/api_rules.py) and the strict schemas.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import polyaxon_prefect
from polyaxon_prefect.prefect.kubernetes._kubernetes import POLL_ENV
from tests.prefect.test_kubernetes_run import cluster_in_background
from tests.process.kubernetes.api_rules import check_manifest
from tests.process.kubernetes.fake_cluster import FakeKubelet, ever, kubeconfig, live

pytestmark = [pytest.mark.cluster]

ROOT = Path(__file__).resolve().parents[2]
QUICK_START = ROOT / "examples" / "quick-start"
DAG = ROOT / "tests" / "fixtures" / "k8s" / "quick-start-dag.yaml"


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The fake cluster with a kubelet whose "image" WORKDIR is examples/quick-start."""
    with cluster_in_background(kubelet=FakeKubelet(QUICK_START)) as k:
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(str(k.url))))
        monkeypatch.setenv("KUBECONFIG", str(path))
        monkeypatch.setenv(POLL_ENV, "0.05")
        yield k


def _created(k: Any, plural: str) -> list[dict[str, Any]]:
    return [json.loads(json.dumps(k.objects[key].history[0].raw)) for key in ever(k, plural)]


def _nothing_left(k: Any) -> None:
    for _ in range(100):
        if not live(k, "jobs") and not live(k, "pods"):
            return
        time.sleep(0.02)
    raise AssertionError(f"left behind: {live(k, 'jobs')} {live(k, 'pods')}")


def _ops(result: Any) -> dict[str, Any]:
    return {name: (op["status"], op.get("outputs")) for name, op in (result.ops or {}).items()}


def test_the_quick_start_dag_on_native_ends_as_it_does_locally(
    cluster: Any, tmp_path: Path
) -> None:
    """experiment -> condition on its loss -> tune (4 trials) -> best_model: each op its own
    Job; the condition and the sweep read outputs that came back on the pods' logs."""
    for source in [*DAG.parent.glob("*.yaml"), *QUICK_START.glob("*.py")]:
        (tmp_path / source.name).write_text(source.read_text())
    dag = tmp_path / DAG.name
    local = polyaxon_prefect.run(dag)
    remote = polyaxon_prefect.run(dag, backend="native")
    assert remote.status == local.status == "succeeded", remote.message
    assert _ops(remote) == _ops(local)
    assert remote.ops["experiment"]["outputs"]["loss"] > 0.01  # so `tune` ran
    jobs = _created(cluster, "jobs")
    assert len(jobs) == 1 + 4 + 1, "experiment, four trials, best_model: one Job each"
    for job in jobs:
        check_manifest(job)
        assert job["spec"]["template"]["spec"]["containers"][0]["image"]
    _nothing_left(cluster)


GPU_JOB = """\
version: 1.1
kind: component
name: gpu-train
termination: {maxRetries: 2, timeout: 600, ttl: 60}
outputs: [{name: loss, type: float}]
run:
  kind: job
  environment:
    nodeSelector: {pool: gpu}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    serviceAccountName: trainer
    imagePullSecrets: [registry]
  init:
  - git: {url: "REPO"}
  container:
    image: pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime
    command: [sh, -c]
    args:
    - >-
      cat {{ globals.artifacts_path }}/repo/README &&
      python -c 'from polyaxon_prefect import tracking; tracking.log_outputs(loss=0.5)'
    resources: {requests: {nvidia.com/gpu: 1}}
"""


def test_a_gpu_job_clones_its_git_init_and_hands_its_outputs_back(
    cluster: Any, tmp_path: Path
) -> None:
    repo = tmp_path / "repo.git"
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    subprocess.run(["git", "clone", "-q", str(repo), str(work)], check=True)
    (work / "README").write_text("cloned from the bare repo\n")
    git = ["git", "-C", str(work), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-qm", "readme"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    path = tmp_path / "gpu.yaml"
    path.write_text(GPU_JOB.replace("REPO", f"file://{repo}"))
    result = polyaxon_prefect.run(path, backend="native")
    assert result.status == "succeeded", result.message
    assert result.outputs == {"loss": 0.5}
    (job,) = _created(cluster, "jobs")
    check_manifest(job)
    spec = job["spec"]
    assert (
        spec["backoffLimit"],
        spec["activeDeadlineSeconds"],
        spec["ttlSecondsAfterFinished"],
    ) == (2, 600, 60)
    pod = spec["template"]["spec"]
    main = pod["containers"][0]
    assert main["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert main["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert pod["nodeSelector"] == {"pool": "gpu"} and pod["serviceAccountName"] == "trainer"
    assert pod["imagePullSecrets"] == [{"name": "registry"}]
    assert pod["initContainers"][0]["image"].startswith("alpine/git")
    outputs = Path(result.artifacts_path or "") / "outputs" / "outputs.json"
    assert json.loads(outputs.read_text()) == {"loss": 0.5}, "written into the local run"
    _nothing_left(cluster)


FAILING = """\
version: 1.1
kind: component
name: failing
run:
  kind: job
  container:
    image: busybox:1.36
    command: [sh, -c, "echo about to fail; exit 3"]
"""


def test_a_failing_pod_fails_the_op_with_its_diagnosis_and_leaves_nothing(
    cluster: Any, tmp_path: Path
) -> None:
    path = tmp_path / "failing.yaml"
    path.write_text(FAILING)
    result = polyaxon_prefect.run(path, backend="native")
    assert result.status == "failed"
    assert "exited with code 3" in result.message
    assert "BackoffLimitExceeded" in result.message or "backoff limit" in result.message
    _nothing_left(cluster)


OK_JOB = FAILING.replace("echo about to fail; exit 3", "echo fine").replace("failing", "fine")


def test_a_deployed_job_follows_the_backend_job_variable(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``deploy --backend native`` sets POLYAXON_PREFECT_BACKEND: the flow a worker runs sends
    its job to the cluster as a Job."""
    path = tmp_path / "fine.yaml"
    path.write_text(OK_JOB)
    monkeypatch.setenv("POLYAXON_PREFECT_BACKEND", "native")
    state = polyaxon_prefect.to_flow(path)(return_state=True)
    assert state.is_completed(), state.message
    (job,) = _created(cluster, "jobs")
    assert job["metadata"]["name"].startswith("fine-")
    _nothing_left(cluster)
