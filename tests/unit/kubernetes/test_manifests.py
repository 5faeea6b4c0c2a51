"""Golden manifests of distributed runs, each validated strictly (CRD schemas, Kubernetes API).

``pytest tests/unit/kubernetes --update-golden`` rewrites ``tests/golden/manifests/*.yaml``;
review the diff.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect.kubernetes import build_manifests
from polyaxon_prefect.loading import load_polyaxonfile

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "manifests"
SOURCES = GOLDEN / "sources"
CORPUS = ROOT / "tests" / "corpus"
MXNET = CORPUS / (
    "polyaxon-examples@v0.5.5__in_cluster__mxnet__cifar10__polyaxonfile_distributed.yml"
)

CASES: dict[str, tuple[Path, str | None]] = {
    "tfjob-chief-2-gpu-workers": (SOURCES / "tfjob_chief_2gpu_workers.yaml", None),
    "legacy-tensorflow-master-7-workers-3-ps-native": (
        SOURCES / "legacy_tensorflow_master_7_workers_3_ps.yml",
        None,
    ),
    "legacy-mxnet-cifar10-kubeflow": (MXNET, "kubeflow"),
    "legacy-mxnet-cifar10-native": (MXNET, None),
    "pytorchjob-master-2-workers": (SOURCES / "pytorchjob_master_2_workers.yaml", None),
    "pytorchjob-master-2-workers-native": (
        SOURCES / "pytorchjob_master_2_workers.yaml",
        "native",
    ),
    "mpijob-horovod": (CORPUS / "polyaxon-examples__in_cluster__mpijob__polyaxonfile.yaml", None),
}
"""Golden name -> (Polyaxonfile, backend or None for the default)."""


def render(path: Path, backend: str | None, **kwargs: Any) -> list[dict[str, Any]]:
    return build_manifests(load_polyaxonfile(path), backend=backend, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_manifests(
    name: str, update_golden: bool, validate: Callable[[dict[str, Any]], None]
) -> None:
    path, backend = CASES[name]
    manifests = render(path, backend)
    for manifest in manifests:
        validate(manifest)
    text = yaml.safe_dump_all(manifests, sort_keys=False, default_flow_style=False)
    expected = GOLDEN / f"{name}.yaml"
    if update_golden or not expected.exists():
        expected.write_text(text)
        if not update_golden:
            pytest.fail(f"recorded a new golden file {expected.name}; review and commit it")
    assert text == expected.read_text()
