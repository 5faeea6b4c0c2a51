"""The architecture report's checks catch a rule however it is spelled.

Each probe is a small source snippet fed to the checker; the five kind switches are the
equivalent spellings a reviewer used to get past the first version of the check.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

from architecture_report import (  # noqa: E402
    CYCLE_PENDING,
    PACKAGE,
    kinds_and_shapes,
    modules,
    repeated_base_names,
)
from import_rules import module_cycles, private_module_imports  # noqa: E402
from kind_switches import kind_switches  # noqa: E402
from layer_table import layer_mismatches  # noqa: E402

KINDS, SHAPES = kinds_and_shapes()

SWITCHES = {
    "constant": """
        JOB = "job"

        def run(kind):
            if kind == JOB:
                return 1
    """,
    "tuple": """
        def run(kind):
            return kind in ("job", "service")
    """,
    "match": """
        def run(kind):
            match kind:
                case "job":
                    return 1
    """,
    "dict": """
        def run(kind):
            return {"job": 1, "service": 2}.get(kind)
    """,
    "isinstance": """
        from polyaxon_prefect.specs import Dag

        def run(op):
            return isinstance(op.component.run, Dag)
    """,
    "matrix shape": """
        def hook(operation):
            return op_kind(operation) != "matrix"
    """,
    "imported kind set": """
        from polyaxon_prefect.specs import KUBEFLOW_KINDS

        def local(kind):
            return kind not in KUBEFLOW_KINDS
    """,
    "spelled in pieces": """
        def run(kind):
            return kind == "jo" + "b"
    """,
    "local table": """
        def run(kind):
            runners = {"job": 1, "dag": 2}
            return runners[kind]
    """,
    "class constant": """
        class Runner:
            SHAPES = ("dag", "matrix")

            def many(self, shape):
                return shape in self.SHAPES
    """,
    "attribute spelling of a model": """
        from polyaxon_prefect import specs

        def run(op):
            return isinstance(op.component.run, specs.Dag)
    """,
    "match on a model": """
        from polyaxon_prefect.specs import Dag

        def run(run):
            match run:
                case Dag():
                    return 1
    """,
}


def _switches(source: str, constants: frozenset[str] = frozenset()) -> list[int]:
    found = kind_switches(textwrap.dedent(source), KINDS, SHAPES, constants)
    return [switch.line for switch in found]


def test_kinds_come_from_the_models() -> None:
    assert {"job", "service", "dag", "tfjob", "grid", "mapping", "matrix"} <= KINDS
    assert {"Dag", "Job", "GridSearch", "Mapping"} <= SHAPES


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_each_spelling_of_a_kind_switch_is_flagged(name: str) -> None:
    constants = frozenset({"KUBEFLOW_KINDS"})  # found in ``specs`` when the whole package is read
    assert _switches(SWITCHES[name], constants)


def test_code_that_does_not_switch_on_kinds_is_not_flagged() -> None:
    clean = """
        from collections.abc import Mapping

        RESERVED = ("job", "name", "uuid")

        def read(value, kind):
            if isinstance(value, Mapping):  # the abc, not the ``mapping`` matrix model
                return value
            if kind.is_distributed:
                return kind
            return value == "jobs" or value in ("a", "b")

        def copy(op):
            changes = {"matrix": None}
            return op.model_copy(update=changes)
    """
    assert _switches(clean) == []


def test_a_private_module_of_another_package_is_counted(tmp_path: Path) -> None:
    package = tmp_path / "polyaxon_prefect"
    (package / "prefect").mkdir(parents=True)
    (package / "runtime").mkdir()
    importer = package / "prefect" / "_flow.py"
    importer.write_text(
        "from polyaxon_prefect.runtime._one_process import run\n"
        "from polyaxon_prefect.runtime import execute\n"
        "from polyaxon_prefect.prefect._states import state\n",
        encoding="utf-8",
    )
    places = private_module_imports([importer], tmp_path, "polyaxon_prefect")
    assert places == ["polyaxon_prefect/prefect/_flow.py:1 polyaxon_prefect.runtime._one_process"]


def test_the_package_has_no_module_cycle_but_those_pending() -> None:
    cycles = {frozenset(group) for group in module_cycles("polyaxon_prefect")}
    assert cycles <= set(CYCLE_PENDING)


def test_the_layer_table_agrees_with_the_layers_contract() -> None:
    assert (
        layer_mismatches(REPO / ".importlinter", REPO / "ARCHITECTURE.md", "polyaxon_prefect") == []
    )


def test_a_layer_table_out_of_order_is_reported(tmp_path: Path) -> None:
    contract = tmp_path / ".importlinter"
    contract.write_text(
        "[importlinter:contract:layers]\nname = layers\ntype = layers\nlayers =\n"
        "    pkg.high\n    pkg.middle\n    pkg.low\n",
        encoding="utf-8",
    )
    doc = tmp_path / "ARCHITECTURE.md"
    doc.write_text(
        "| layer | package | job |\n|---|---|---|\n"
        "| 0 | `low` | a |\n| 1 | `high` | b |\n| 2 | `middle` | c |\n",
        encoding="utf-8",
    )
    assert layer_mismatches(contract, doc, "pkg")
    doc.write_text(
        "| layer | package | job |\n|---|---|---|\n"
        "| 0 | `low` | a |\n| 1 | `middle` | b |\n| 2 | `high` | c |\n",
        encoding="utf-8",
    )
    assert layer_mismatches(contract, doc, "pkg") == []


def test_a_base_name_two_modules_share_is_reported_with_both_paths(tmp_path: Path) -> None:
    files = ["a/_job.py", "b/_job.py", "a/__init__.py", "b/__init__.py", "a/_plan.py"]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    assert repeated_base_names((tmp_path / f for f in files), tmp_path) == [
        "_job.py: a/_job.py, b/_job.py"
    ]


def test_the_compat_mirrors_keep_polyaxons_names_and_no_other_base_name_repeats() -> None:
    assert repeated_base_names(modules(), PACKAGE) == []
    mirrors = [p for p in modules() if "_compat" in p.parts and p.name == "keras.py"]
    assert len(mirrors) == 2
