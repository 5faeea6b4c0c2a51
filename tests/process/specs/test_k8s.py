"""The generated Kubernetes models reject what a cluster would reject, with precise locations,
and accept what Polyaxon accepts (snake_case keys, templates, its command/env leniency)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.specs.kubernetes import _k8s

pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[3]


def test_import_is_light() -> None:
    code = (
        "import sys, polyaxon_prefect.specs.kubernetes._k8s\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('kubernetes', 'kubernetes_asyncio', 'kubernetes_validate', 'prefect', 'optuna'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def _load_generator() -> Any:
    path = REPO / "scripts" / "gen_k8s_models.py"
    spec = importlib.util.spec_from_file_location("gen_k8s_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_module_is_up_to_date(tmp_path: Path) -> None:
    if importlib.util.find_spec("kubernetes_validate") is None:
        pytest.skip("kubernetes-validate (the generator's schema source) is not installed")
    if shutil.which("ruff", path=str(Path(sys.executable).parent)) is None and not shutil.which(
        "ruff"
    ):
        pytest.skip("ruff (used to format the generated module) is not installed")
    generator = _load_generator()
    target = tmp_path / "_k8s.py"
    assert generator.main(["--output", str(target)]) == 0
    assert target.read_text() == Path(_k8s.__file__).read_text(), (
        "polyaxon_prefect/specs/kubernetes/_k8s.py is stale: run scripts/gen_k8s_models.py"
    )
    for name in ("_k8s_objects.py", "_k8s_values.py"):
        written = Path(_k8s.__file__).with_name(name)
        assert target.with_name(name).read_text() == written.read_text(), (
            f"polyaxon_prefect/specs/kubernetes/{name} is stale: run scripts/gen_k8s_models.py"
        )


def test_nested_objects_are_imported_only_when_a_file_writes_one(tmp_path: Path) -> None:
    """``check`` of a container with an image and a command creates none of the ~100 nested
    object models; one with ``env`` imports them."""
    plain = tmp_path / "plain.yaml"
    plain.write_text("version: 1.1\nkind: component\nrun: {kind: job, container: {image: x}}\n")
    with_env = tmp_path / "env.yaml"
    with_env.write_text(
        "version: 1.1\nkind: component\n"
        "run: {kind: job, container: {image: x, env: [{name: A, value: b}]}}\n"
    )
    code = (
        "import sys\n"
        "from polyaxon_prefect.cli import main\n"
        "assert main(['check', '-f', sys.argv[1]]) == 0\n"
        "print('polyaxon_prefect.specs.kubernetes._k8s_objects' in sys.modules)\n"
    )
    for path, imported in ((plain, "False"), (with_env, "True")):
        result = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        assert result.stdout.splitlines()[-1] == imported, result.stdout
