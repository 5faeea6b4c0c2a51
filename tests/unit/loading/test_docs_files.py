"""The docs' own files get Polyaxon's verdict: a ``pchoice`` summing to less than 1 (a warning,
sampled as Polyaxon samples it), a component's top-level ``environment`` (Polyaxon 2.18's
shortcut), a legacy ``build: {ref: 1}`` with no image (polyaxon-schemas 0.5's build-job
reference), and a component checked without values for its required inputs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from pydantic import TypeAdapter

from polyaxon_prefect.cli import main
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.search._space import sample_hp
from polyaxon_prefect.specs import HpParam

DOCS = Path(__file__).resolve().parents[2] / "fixtures" / "docs"
DOCS_URL = "https://raw.githubusercontent.com/polyaxon/polyaxon-quick-start/master/experimentation/typed.yml"


def _write(tmp_path: Path, text: str, name: str = "polyaxonfile.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def _offline_quick_start(
    tmp_path: Path, *, build_ref: str | None = None, top_literal: bool = False
) -> Path:
    """The docs' DAG with its urlRef served from the vendored file (the same text, no network);
    ``build_ref`` names a component for the `build` op, which the page leaves without one;
    ``top_literal`` writes a value where the page's `--top={{ dag.inputs.top }}` names what an
    op's run section does not see (`check` reports it)."""
    text = (DOCS / "quick-start-dag.yml").read_text()
    if top_literal:
        text = text.replace("--top={{ dag.inputs.top }}", "--top=5")
    assert text.count(DOCS_URL) == 2
    text = text.replace(DOCS_URL, (DOCS / "typed.yml").as_uri())
    if build_ref is not None:
        text = text.replace("  - name: build\n", f"  - name: build\n    hubRef: {build_ref}\n")
    return _write(tmp_path, text, "dag.yml")


# --- pchoice ------------------------------------------------------------------------------------


def test_the_docs_quick_start_dag_gets_one_located_pchoice_warning(tmp_path: Path) -> None:
    loaded = load_polyaxonfile(_offline_quick_start(tmp_path, build_ref="kaniko", top_literal=True))
    (warning,) = loaded.warnings
    assert (warning.line, warning.column) == (55 + 1, 11)  # line 55, after the added hubRef
    assert warning.path == ("run", "operations", 2, "matrix", "params", "conv_activation", "value")
    assert warning.rule == "pchoice_sum"
    assert "sum to 0.9 (0.1 + 0.8)" in warning.message
    assert "'sigmoid' takes the missing 0.1 and is drawn with probability 0.9" in warning.message
    tune = loaded.component.run.operations[2]
    spec = tune.matrix.hp_params()["conv_activation"].spec
    assert spec.probabilities == (0.1, 0.9)


def test_check_of_the_docs_quick_start_dag_is_valid_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _offline_quick_start(tmp_path, build_ref="kaniko", top_literal=True)
    assert main(["check", "-f", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "valid (dag `automated-process`)" in out
    warnings = [line for line in (out + err).splitlines() if ": warning: " in line]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{path}:56:11: ")


def test_check_of_the_docs_quick_start_dag_reports_the_dag_input_its_job_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's report op renders `--top={{ dag.inputs.top }}` in its container: a job's run
    section sees its params, ``globals`` and ``connections``, not ``dag`` (Polyaxon renders it
    empty), so the run would fail there; `check` says so first, with the same warning."""
    path = _offline_quick_start(tmp_path, build_ref="kaniko")
    assert main(["check", "-f", str(path)]) == 1
    out, err = capsys.readouterr()
    lines = (out + err).splitlines()
    errors = [line for line in lines if line.startswith(f"{path}:") and ": warning: " not in line]
    assert len(errors) == 1
    assert errors[0].startswith(f"{path}:71:58: run.operations[3].component.run.container.args[1]")
    assert "undefined name `dag`" in errors[0] and "ref: dag" in errors[0]
    assert len([line for line in lines if ": warning: " in line]) == 1


def test_the_docs_quick_start_dag_as_printed_lacks_only_its_build_reference(
    tmp_path: Path,
) -> None:
    # the page's `build` op names no component (its repository's file has `hubRef`); Polyaxon
    # 2.18 refuses it too ("runPatch requires a resolved runtime")
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(_offline_quick_start(tmp_path, top_literal=True))
    (problem,) = info.value.problems
    assert problem.rule == "operation_reference"
    assert (problem.line, problem.column) == (15, 5)


def test_pchoice_is_sampled_as_numpy_multinomial_samples_it() -> None:
    # Polyaxon draws `rand_generator.multinomial(1, [0.1, 0.8])`: numpy ignores the last
    # probability and gives it the rest, so sigmoid comes 90 % of the time
    hp = TypeAdapter(HpParam).validate_python(
        {"kind": "pchoice", "value": [["relu", 0.1], ["sigmoid", 0.8]]}
    )
    draws = sample_hp(hp, np.random.default_rng(7), 20_000)
    ours = draws.count("sigmoid") / len(draws)
    theirs = np.random.default_rng(8).multinomial(1, [0.1, 0.8], size=20_000)[:, 1].mean()
    assert ours == pytest.approx(0.9, abs=0.01)
    assert theirs == pytest.approx(0.9, abs=0.01)


def test_pchoice_over_one_stays_a_located_error(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
        version: 1.1
        kind: operation
        matrix:
          kind: random
          numRuns: 2
          params:
            act:
              kind: pchoice
              value: [[relu, 0.5], [tanh, 0.6]]
        component:
          inputs: [{name: act, type: str}]
          run: {kind: job, container: {image: python, command: [echo, "{{ act }}"]}}
        """,
    )
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(path)
    (problem,) = info.value.problems
    assert "must sum to at most 1, got 1.1" in problem.message
    assert problem.line == 9


# --- a component's top-level environment (Polyaxon 2.18) --------------------------------------


def test_a_top_level_environment_patches_the_run_as_polyaxon_2_18_does(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
        version: 1.1
        kind: component
        name: trainer
        environment:
          nodeSelector: {gpu: "true"}
          labels: {team: ml}
        run:
          kind: job
          environment: {labels: {tier: batch}}
          container: {image: python:3.11, command: [python, -c, "print(1)"]}
        """,
    )
    environment = load_polyaxonfile(path).component.run.environment
    assert environment.node_selector == {"gpu": "true"}
    assert environment.labels == {"tier": "batch", "team": "ml"}  # post_merge: both kept


def test_a_top_level_environment_reaches_every_replica_and_is_located(tmp_path: Path) -> None:
    text = """
        version: 1.1
        kind: component
        environment:
          nodeSelector: {gpu: "true"}
          restartPolicy: {restart_policy}
        run:
          kind: tfjob
          chief:
            replicas: 1
            environment: {labels: {a: b}}
            container: {image: python:3.11, command: [python, -c, "print(1)"]}
          worker:
            replicas: 2
            container: {image: python:3.11, command: [python, -c, "print(1)"]}
        """
    run = load_polyaxonfile(
        _write(tmp_path, text.replace("{restart_policy}", "Never"))
    ).component.run
    assert run.chief.environment.labels == {"a": "b"}
    for replica in (run.chief, run.worker):
        assert replica.environment.node_selector == {"gpu": "true"}
        assert replica.environment.restart_policy == "Never"
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(_write(tmp_path, text.replace("{restart_policy}", "12"), "bad.yaml"))
    problems = info.value.problems
    assert {(p.line, p.column) for p in problems} == {(5, 3)}
    assert all("restartPolicy" in str(p.path) for p in problems)


# --- legacy build ref ---------------------------------------------------------------------------


def test_a_legacy_build_ref_with_no_image_loads_as_schemas_0_5_loads_it(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
        version: 1
        kind: experiment
        build:
          ref: 1
        run:
          cmd: python -c "print(1)"
        """,
    )
    loaded = load_polyaxonfile(path)
    assert loaded.component.run.container.image is None
    (note,) = [n for n in loaded.legacy_notes if n.startswith("build.ref:")]
    assert "earlier build job" in note


def test_a_legacy_build_with_nothing_to_build_is_still_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
        version: 1
        kind: experiment
        build:
          nocache: true
        run:
          cmd: python -c "print(1)"
        """,
    )
    with pytest.raises(PolyaxonfileError, match="a build `ref`"):
        load_polyaxonfile(path)


# --- required inputs without values --------------------------------------------------------------


def test_check_locates_a_required_input_at_its_declaration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path,
        """
        version: 1.1
        kind: component
        inputs:
        - {name: lr, type: float, value: 0.1, isOptional: true}
        - name: epochs
          type: int
        run: {kind: job, container: {image: python, command: [echo, "{{ epochs }}"]}}
        """,
    )
    for extra in ([], ["-P", "lr=0.2"]):
        assert main(["check", "-f", str(path), *extra]) == 1
        out, err = capsys.readouterr()
        (line,) = [line for line in (out + err).splitlines() if "`epochs` is required" in line]
        assert line.startswith(f"{path}:5:3: inputs[1]: ")
        assert "-P epochs=..." in line


def test_an_operation_with_params_keeps_the_missing_input_at_its_params(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
        version: 1.1
        kind: operation
        params:
          lr: 0.1
        component:
          inputs: [{name: lr, type: float}, {name: epochs, type: int}]
          run: {kind: job, container: {image: python, command: [echo, "{{ epochs }}"]}}
        """,
    )
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(path)
    (problem,) = info.value.problems
    assert problem.path == ("params",)
    assert problem.line == 3
