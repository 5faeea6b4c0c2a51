"""``polyaxon-prefect compile --target kubernetes``: manifests for ``kubectl apply -f -``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from polyaxon_prefect.cli import main

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "tests" / "golden" / "manifests" / "sources"
TFJOB = SOURCES / "tfjob_chief_2gpu_workers.yaml"
LEGACY_TF = SOURCES / "legacy_tensorflow_master_7_workers_3_ps.yml"

OVERRIDES = """\
version: 1.1
kind: component
run:
  kind: tfjob
  worker:
    replicas: 3
    container: {image: img, command: [python, train.py]}
    indexOverrides:
      2:
        resources: {limits: {cpu: 4}}
"""


def _documents(text: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def test_kubeflow_by_default_for_v11(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "-f", str(TFJOB), "--target", "kubernetes"]) == 0
    docs = _documents(capsys.readouterr().out)
    assert [(d["apiVersion"], d["kind"]) for d in docs] == [("kubeflow.org/v1", "TFJob")]
    assert docs[0]["metadata"]["name"] == "dist-mnist"


def test_native_by_default_for_legacy_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "-f", str(LEGACY_TF), "--target", "kubernetes"]) == 0
    docs = _documents(capsys.readouterr().out)
    assert docs[0]["kind"] == "Service"
    assert {d["kind"] for d in docs[1:]} == {"Job"}


def test_backend_and_namespace(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compile", "-f", str(TFJOB), "--target", "kubernetes"]
    assert main([*argv, "--backend", "native", "--namespace", "ml"]) == 0
    docs = _documents(capsys.readouterr().out)
    assert [d["kind"] for d in docs] == ["Service", "Job", "Job"]
    assert {d["metadata"]["namespace"] for d in docs} == {"ml"}


def test_index_overrides_on_kubeflow_are_refused_with_a_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tf.yaml"
    path.write_text(OVERRIDES)
    argv = ["compile", "-f", str(path), "--target", "kubernetes"]
    assert main([*argv, "--backend", "kubeflow"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:9:7: component.run.worker.indexOverrides[2]:" in err
    assert "--backend native" in err
    assert main([*argv, "--backend", "native"]) == 0


def test_connections_file_is_mounted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tf.yaml"
    path.write_text(
        OVERRIDES.replace(
            "    indexOverrides:\n      2:\n        resources: {limits: {cpu: 4}}\n", ""
        )
        + "    connections: [data]\n"
    )
    conns = tmp_path / "connections.yaml"
    conns.write_text(
        "connections:\n"
        "  - {name: data, kind: volume_claim, schema: {volumeClaim: train, mountPath: /data}}\n"
    )
    argv = ["compile", "-f", str(path), "--target", "kubernetes"]
    assert main(argv) == 1
    assert "connection `data` is not in the connections catalog" in capsys.readouterr().err
    assert main([*argv, "--connections", str(conns)]) == 0
    pod = _documents(capsys.readouterr().out)[0]["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    assert pod["spec"]["volumes"] == [
        {"name": "conn-data", "persistentVolumeClaim": {"claimName": "train", "readOnly": False}}
    ]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "conn-data", "mountPath": "/data"}
    ]


def test_a_single_pod_job_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "examples" / "quick-start" / "dag.yaml"
    assert main(["compile", "-f", str(path), "--target", "kubernetes"]) == 1
    assert "only services and distributed runs" in capsys.readouterr().err


def test_default_compile_output_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "-f", str(TFJOB)]) == 0
    default = capsys.readouterr().out
    assert main(["compile", "-f", str(TFJOB), "--target", "polyaxonfile"]) == 0
    assert capsys.readouterr().out == default
    assert yaml.safe_load(default)["kind"] == "operation"


@pytest.mark.process
def test_compile_kubernetes_does_not_import_prefect() -> None:
    code = (
        "import sys; from polyaxon_prefect.cli import main; "
        f"rc = main(['compile', '-f', {str(TFJOB)!r}, '--target', 'kubernetes']); "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('prefect', 'prefect_kubernetes', 'optuna', 'kubernetes', 'kubernetes_asyncio')); "
        "print(heavy); sys.exit(rc)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_templates_left_in_manifests_are_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tf.yaml"
    plain = OVERRIDES.split("    indexOverrides:")[0]
    path.write_text(
        plain.replace("image: img", 'image: img, workingDir: "{{ globals.run_outputs_path }}"')
    )
    assert main(["compile", "-f", str(path), "--target", "kubernetes"]) == 0
    captured = capsys.readouterr()
    assert "still hold `{{ templates }}`" in captured.err
    assert "{{ globals.run_outputs_path }}" in captured.out
