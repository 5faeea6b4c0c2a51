"""Kubeflow manifests: rendered from real Polyaxonfiles, validated strictly, pinned as golden files.

No Kubernetes API server can run on these machines, so these tests stop at the manifest: every
rendered custom resource is validated against the operator's own CRD schema
(`tests/fixtures/k8s-schemas/`, made strict: an unknown field is an error, not silently pruned)
and checked for what the operator's webhook requires (its default container name, an image, a
DNS-1035 name). ``pytest tests/unit/kubernetes --update-golden`` records the golden files.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.kubernetes import KUBEFLOW, build_manifests, templates_left
from polyaxon_prefect.loading import load_polyaxonfile

TESTS = Path(__file__).resolve().parents[2]
CORPUS = TESTS / "corpus"
SCHEMAS = TESTS / "fixtures" / "k8s-schemas"
GOLDEN = TESTS / "golden" / "manifests"
PLURALS = {
    "TFJob": "tfjobs",
    "PyTorchJob": "pytorchjobs",
    "MPIJob": "mpijobs",
    "MXJob": "mxjobs",
    "XGBoostJob": "xgboostjobs",
    "PaddleJob": "paddlejobs",
}
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _strict(schema: Any) -> Any:
    """The MANIFEST's strict pass: objects with properties accept no other field."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
            and "additionalProperties" not in out
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@cache
def _validator(kind: str) -> jsonschema.Draft4Validator:
    path = SCHEMAS / f"kubeflow.org_{PLURALS[kind]}.schema.json"
    return jsonschema.Draft4Validator(_strict(json.loads(path.read_text(encoding="utf-8"))))


def _check(manifest: dict[str, Any]) -> None:
    """Strict schema validity plus the webhook's rules."""
    errors = sorted(_validator(manifest["kind"]).iter_errors(manifest), key=str)
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    assert manifest["apiVersion"] == "kubeflow.org/v1"
    assert DNS_1035.match(manifest["metadata"]["name"])
    table = next(t for t in KUBEFLOW.values() if t.kind == manifest["kind"])
    for replica_type, spec in manifest["spec"][table.replica_specs].items():
        containers = spec["template"]["spec"]["containers"]
        main = [c for c in containers if c["name"] == table.container]
        assert len(main) == 1 and main[0]["image"], replica_type


V11 = """\
version: 1.1
kind: component
name: {name}
termination: {{maxRetries: 2, timeout: 3600, ttl: 600}}
run:
{run}
"""

INLINE = {
    "tfjob-chief-2-gpu-workers": """\
  kind: tfjob
  cleanPodPolicy: Running
  chief:
    replicas: 1
    container: {image: tensorflow/tensorflow:2.16.1, command: [python, train.py]}
  worker:
    replicas: 2
    environment:
      nodeSelector: {accelerator: nvidia-h100}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      serviceAccountName: trainer
      imagePullSecrets: [registry]
    container:
      image: tensorflow/tensorflow:2.16.1-gpu
      command: [python, train.py]
      resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}}
""",
    "pytorch-elastic": """\
  kind: pytorchjob
  nProcPerNode: 4
  elasticPolicy: {minReplicas: 1, maxReplicas: 3, rdvzBackend: c10d, maxRestarts: 10}
  schedulingPolicy: {minAvailable: 2, queue: research}
  master:
    replicas: 1
    container: {image: pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime, command: [torchrun, train.py]}
  worker:
    replicas: 2
    container: {image: pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime, command: [torchrun, train.py]}
""",
    "xgboost": """\
  kind: xgbjob
  master: {replicas: 1, container: {image: docker.io/kubeflow/xgboost-dist-iris:latest}}
  worker: {replicas: 2, container: {image: docker.io/kubeflow/xgboost-dist-iris:latest}}
""",
    "paddle": """\
  kind: paddlejob
  elasticPolicy: {minReplicas: 2, maxReplicas: 4}
  master: {replicas: 1, container: {image: registry.baidubce.com/paddlepaddle/paddle:2.4.0}}
  worker: {replicas: 2, container: {image: registry.baidubce.com/paddlepaddle/paddle:2.4.0}}
""",
}

CORPUS_FILES = {
    "tfjob-corpus": "polyaxon-examples__in_cluster__kubeflow__tfjob__component.yaml",
    "mpijob-corpus": "polyaxon-examples__in_cluster__mpijob__polyaxonfile.yaml",
    "legacy-tensorflow": "polyaxon-examples@v0.5.5__in_cluster__tensorflow__cifar10__"
    "polyaxonfile_distributed.yml",
    "legacy-mxnet": "polyaxon-examples@v0.5.5__in_cluster__mxnet__cifar10__"
    "polyaxonfile_distributed.yml",
    "pytorch-corpus": "cli__cli__tests__fixtures__plain__distributed_pytorch_file.yml",
}


def _inline(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(V11.format(name=name, run=INLINE[name]), encoding="utf-8")
    return path


def _golden(name: str, manifests: list[dict[str, Any]], update: bool) -> None:
    text = yaml.safe_dump_all(manifests, sort_keys=False, default_flow_style=False)
    path = GOLDEN / f"{name}.yaml"
    if update:
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path.name} changed"


@pytest.mark.parametrize("name", sorted(INLINE))
def test_inline_examples_are_valid_and_golden(name: str, tmp_path: Path, update_golden: bool):
    [manifest] = build_manifests(load_polyaxonfile(_inline(tmp_path, name)).operation)
    _check(manifest)
    _golden(name, [manifest], update_golden)


@pytest.mark.parametrize("name", sorted(CORPUS_FILES))
def test_corpus_files_are_valid_and_golden(name: str, update_golden: bool):
    loaded = load_polyaxonfile(CORPUS / CORPUS_FILES[name])
    [manifest] = build_manifests(loaded.operation, namespace="ml")
    _check(manifest)
    assert manifest["metadata"]["namespace"] == "ml"
    _golden(name, [manifest], update_golden)


def test_the_run_policy_and_gpu_workers_come_from_the_file(tmp_path: Path):
    [tfjob] = build_manifests(
        load_polyaxonfile(_inline(tmp_path, "tfjob-chief-2-gpu-workers")).operation
    )

    spec = tfjob["spec"]
    assert spec["runPolicy"] == {
        "backoffLimit": 2,
        "activeDeadlineSeconds": 3600,
        "ttlSecondsAfterFinished": 600,
        "cleanPodPolicy": "Running",
    }
    worker = spec["tfReplicaSpecs"]["Worker"]
    pod = worker["template"]["spec"]
    assert worker["replicas"] == 2 and worker["restartPolicy"] == "Never"
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert pod["nodeSelector"] == {"accelerator": "nvidia-h100"}
    assert pod["imagePullSecrets"] == [{"name": "registry"}]
    assert pod["serviceAccountName"] == "trainer"
    assert "nodeSelector" not in spec["tfReplicaSpecs"]["Chief"]["template"]["spec"]


def test_a_strict_schema_catches_a_typo_the_loose_one_prunes():
    """The check is real: a misspelt field fails the strict pass."""
    loaded = load_polyaxonfile(CORPUS / CORPUS_FILES["mpijob-corpus"])
    [manifest] = build_manifests(loaded.operation)
    broken = copy.deepcopy(manifest)
    broken["spec"]["runPolicy"]["backofLimit"] = 3
    assert list(_validator("MPIJob").iter_errors(broken))


def test_per_index_overrides_are_refused_with_located_problems():
    path = CORPUS / "polyaxon-schemas@v0.5__tests__fixtures__distributed_tensorflow_file.yml"
    with pytest.raises(PolyaxonfileError) as caught:
        build_manifests(load_polyaxonfile(path).operation)

    problems = caught.value.problems
    assert {p.path[:3] for p in problems} == {
        ("component", "run", "ps"),
        ("component", "run", "worker"),
    }
    assert all(p.rule == "k8s_index_overrides" and "native" in (p.hint or "") for p in problems)


def test_a_job_or_an_image_less_replica_has_no_manifest(tmp_path: Path):
    job = tmp_path / "job.yaml"
    job.write_text(V11.format(name="plain", run="  kind: job\n  container: {image: x}\n"))
    with pytest.raises(PolyaxonfileError, match="no `kubeflow` manifest for run kind `job`"):
        build_manifests(load_polyaxonfile(job).operation)
    example = TESTS.parent / "examples" / "distributed" / "pytorchjob.yaml"
    with pytest.raises(PolyaxonfileError) as caught:
        build_manifests(load_polyaxonfile(example).operation)
    assert [p.rule for p in caught.value.problems] == ["k8s_image_missing"] * 2


def test_templates_left_for_run_time_are_reported():
    loaded = load_polyaxonfile(CORPUS / CORPUS_FILES["tfjob-corpus"])
    manifests = build_manifests(loaded.operation)
    assert templates_left(manifests) == [
        "[0].spec.tfReplicaSpecs.Worker.template.spec.containers[0].workingDir"
    ]
