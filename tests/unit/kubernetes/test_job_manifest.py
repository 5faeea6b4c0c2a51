"""A ``kind: job`` as a ``batch/v1`` Job (pure): termination, GPUs, environment, init steps
and connections, validated strictly and by the API server's own rules."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.kubernetes import PodHandback, build_manifests
from polyaxon_prefect.loading import load_polyaxonfile
from tests.process.kubernetes.api_rules import api_problems, check_manifest

JOB = {
    "version": 1.1,
    "kind": "component",
    "name": "Train_Model",
    "termination": {"maxRetries": 3, "timeout": 120, "ttl": 30},
    "run": {
        "kind": "job",
        "connections": ["data"],
        "environment": {
            "nodeSelector": {"pool": "gpu"},
            "affinity": {"nodeAffinity": {}},
            "serviceAccountName": "trainer",
            "imagePullSecrets": ["registry"],
        },
        "init": [{"git": {"url": "https://github.com/org/repo.git"}}],
        "container": {
            "image": "img:1",
            "command": ["python", "train.py"],
            "args": ["--epochs=1"],
            "resources": {"requests": {"nvidia.com/gpu": 1, "memory": "1Gi"}},
        },
    },
}
CATALOG = {
    "data": {
        "name": "data",
        "kind": "volume_claim",
        "schema": {"volumeClaim": "train", "mountPath": "/data"},
    }
}


def _loaded(tmp_path: Path, doc: dict[str, object]) -> object:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_polyaxonfile(path)


def test_a_job_is_one_valid_job_with_its_pod_settings(tmp_path: Path) -> None:
    handback = PodHandback("/plx-context/artifacts/p/u/outputs", "u", "abc")
    (job,) = build_manifests(
        _loaded(tmp_path, JOB),  # type: ignore[arg-type]
        connections=CATALOG,
        env={"POLYAXON_PREFECT_RUN_OUTPUTS_PATH": "/plx-context/artifacts/p/u/outputs"},
        handback=handback,
        init_root="/plx-context/artifacts/p/u/context/artifacts",
    )
    check_manifest(job)
    spec = job["spec"]
    assert job["metadata"]["name"] == "train-model"
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (3, 120)
    assert spec["ttlSecondsAfterFinished"] == 30
    pod = spec["template"]["spec"]
    main = pod["containers"][0]
    assert main["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert main["command"][:2] == ["sh", "-c"] and main["command"][-3:] == [
        "python",
        "train.py",
        "--epochs=1",
    ]
    assert "args" not in main
    assert {"name": "plx-context", "mountPath": "/plx-context"} in main["volumeMounts"]
    assert {"name": "conn-data", "mountPath": "/data"} in main["volumeMounts"]
    clone = pod["initContainers"][0]["command"]
    assert clone[-1] == "/plx-context/artifacts/p/u/context/artifacts/repo"
    assert pod["serviceAccountName"] == "trainer" and pod["restartPolicy"] == "Never"


def test_the_api_rules_catch_what_schemas_miss() -> None:
    bad = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "Bad_Name", "labels": {"x": "y" * 64}},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "env": [{"name": "1BAD", "value": "v"}],
                            "ports": [{"containerPort": 70000}],
                        }
                    ]
                }
            }
        },
    }
    found = " | ".join(api_problems(bad))
    for expected in ("DNS-1123", "invalid label value", "image is required", "1BAD", "70000"):
        assert expected in found


def test_a_missing_connection_is_located(tmp_path: Path) -> None:
    with pytest.raises(PolyaxonfileError, match="connection `data` is not in the connections"):
        build_manifests(_loaded(tmp_path, JOB))  # type: ignore[arg-type]
