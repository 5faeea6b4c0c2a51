"""Shapes real Polyaxonfiles have that a stricter reading got wrong.

Each test is one class of file seen in public repositories (exported operations, hub components,
presets, DAG skeletons), written here as the smallest file that shows it.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from polyaxon_prefect.cli import main
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._load import load_polyaxonfile


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def _problems(path: Path, presets: tuple[Path, ...] = ()) -> PolyaxonfileError:
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(path, presets)
    return info.value


# --- a reference next to an inline component -----------------------------------------------------

EXPORTED_DAG = """
version: 1.1
kind: component
run:
  kind: dag
  operations:
  - name: build
    hubRef: no-such-hub-component
    component:
      name: builder
      run:
        kind: job
        container: {image: busybox, command: [echo, built]}
  - name: train
    dependencies: [build]
    urlRef: http://127.0.0.1:9/never-fetched.yaml
    component:
      run:
        kind: job
        container: {image: busybox, command: [echo, trained]}
"""


def test_an_inline_component_wins_and_each_ignored_reference_is_a_warning(tmp_path: Path) -> None:
    loaded = load_polyaxonfile(_write(tmp_path, "dag.yaml", EXPORTED_DAG))
    ops = {op.name: op for op in loaded.component.run.operation_list}
    assert ops["build"].component.name == "builder"
    assert ops["build"].hub_ref is None and ops["train"].url_ref is None
    assert [(w.path, w.line, w.severity, w.rule) for w in loaded.warnings] == [
        (("run", "operations", 0, "hubRef"), 7, "warning", "ignored_reference"),
        (("run", "operations", 1, "urlRef"), 15, "warning", "ignored_reference"),
    ]
    assert "`hubRef: no-such-hub-component` is ignored" in loaded.warnings[0].message
    assert "not fetched" in loaded.warnings[1].message


def test_check_prints_warnings_and_still_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "dag.yaml", EXPORTED_DAG)
    assert main(["check", "-f", str(path)]) == 0
    captured = capsys.readouterr()
    assert "valid (dag" in captured.out
    assert f"{path}:7:5: run.operations[0].hubRef: warning: `hubRef" in captured.err

    assert main(["check", "-f", str(path), "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [(e["severity"], e["rule"], e["line"]) for e in entries] == [
        ("warning", "ignored_reference", 7),
        ("warning", "ignored_reference", 15),
    ]

    assert main(["compile", "-f", str(path), "--no-plan"]) == 0
    assert "warning: `urlRef: http://127.0.0.1:9/never-fetched.yaml` is ignored" in (
        capsys.readouterr().err
    )


def test_json_gives_errors_a_severity_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path,
        "bad.yaml",
        EXPORTED_DAG.replace("dependencies: [build]", "dependencies: [biuld]"),
    )
    assert main(["check", "-f", str(path), "--json"]) == 1
    entries = json.loads(capsys.readouterr().out)
    assert [e["severity"] for e in entries] == ["error", "warning", "warning"]
    assert "biuld" in entries[0]["message"]


def test_two_references_without_an_inline_component_stay_an_error(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "op.yaml",
        """
        version: 1.1
        kind: operation
        hubRef: kaniko
        pathRef: other.yaml
        """,
    )
    error = _problems(path)
    assert [p.rule for p in error.problems] == ["one_reference"]
    assert "`hubRef`, `pathRef`" in error.problems[0].message


# --- a DAG with no operations --------------------------------------------------------------------


@pytest.mark.parametrize("operations", ["", "  operations: []\n"])
def test_a_dag_without_operations_is_refused_where_it_is(tmp_path: Path, operations: str) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(f"version: 1.1\nkind: component\nrun:\n  kind: dag\n{operations}")
    (problem,) = _problems(path).problems
    assert problem.rule == "dag_no_operations"
    assert problem.path == ("run", "operations")
    assert problem.file == str(path) and problem.line in (3, 5)
    assert "at least one operation" in problem.message


# --- the format is told by `version` first -------------------------------------------------------


def test_a_v11_file_with_top_level_environment_is_read_as_v11(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "modern.yaml",
        """
        version: 1.1
        kind: component
        environment: {nodeSelector: {pool: gpu}}
        connections: [data]
        run:
          kind: job
          container: {image: busybox}
        """,
    )
    error = _problems(path)
    messages = " ".join(p.message for p in error.problems)
    assert "legacy" not in messages and "version: 1`" not in messages
    # `environment` is Polyaxon 2.18's shortcut for the run's (test_docs_files.py)
    assert {p.path for p in error.problems} == {("connections",)}
    assert all(p.rule == "extra_forbidden" for p in error.problems)


# --- messages ------------------------------------------------------------------------------------


def test_a_legacy_shaped_file_without_version_is_told_version_1(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "old.yaml",
        """
        kind: experiment
        run:
          cmd: python train.py
        """,
    )
    (problem,) = _problems(path).problems
    assert problem.path == ("version",)
    assert "add `version: 1` at the top" in problem.hint
    assert "`kind: experiment`" in problem.hint and "`run.cmd`" in problem.hint


def test_a_modern_file_without_version_is_still_told_version_11(tmp_path: Path) -> None:
    path = _write(tmp_path, "new.yaml", "kind: component\nrun: {kind: job}\n")
    (problem,) = _problems(path).problems
    assert problem.hint == "add `version: 1.1` at the top of the file"


def test_a_preset_checked_alone_says_how_to_check_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "preset.yaml", "isPreset: true\nqueue: agent/gpu\n")
    assert main(["check", "-f", str(path)]) == 1
    err = capsys.readouterr().err
    assert "this is a preset" in err
    assert "`-f main.yaml -f preset.yaml`" in err
    assert "`version` is missing" not in err


def test_a_run_patch_problem_is_located_in_the_preset(tmp_path: Path) -> None:
    main_file = _write(
        tmp_path,
        "main.yaml",
        """
        version: 1.1
        kind: component
        run:
          kind: job
          container:
            image: busybox
            command: [echo, hi]
        """,
    )
    preset = _write(
        tmp_path,
        "preset.yaml",
        """
        isPreset: true
        runPatch:
          container:
            imagePullPolicy: Always
            resources:
              limits: {cpu: 1}
              limitz: {cpu: 2}
        """,
    )
    (problem,) = _problems(main_file, (preset,)).problems
    assert problem.rule == "extra_forbidden"
    assert problem.file == str(preset)
    assert problem.path == ("runPatch", "container", "resources", "limitz")
    assert (problem.line, problem.column) == (7, 7)


# --- Polyaxon's hub components and the image values they take ------------------------------------

BUILD_THEN_TRAIN = """
version: 1.1
kind: component
name: build-then-train
run:
  kind: dag
  operations:
  - name: build
    hubRef: kaniko
    params:
      destination: {DESTINATION}
  - name: train
    params:
      image: {ref: ops.build, value: outputs.destination}
    component:
      inputs: [{name: image, type: image}]
      run:
        kind: job
        container: {image: "{{ image }}", command: [echo, hi]}
"""


@pytest.mark.parametrize(
    "destination",
    [
        "{value: acme/trainer:v1, connection: docker-connection}",
        "{value: {name: acme/trainer:v1, connection: docker-connection}}",
        "{name: acme/trainer:v1, connection: docker-connection}",
    ],
    ids=["value-and-connection", "dict-value", "short-dict"],
)
def test_a_dag_reads_the_image_kaniko_builds(
    tmp_path: Path, destination: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "dag.yaml", BUILD_THEN_TRAIN.replace("{DESTINATION}", destination))
    assert main(["check", "-f", str(path)]) == 0, capsys.readouterr().err
    capsys.readouterr()

    assert main(["compile", "-f", str(path), "--format", "json", "--no-plan"]) == 0
    ops = json.loads(capsys.readouterr().out)["component"]["run"]["operations"]
    build, train = ops
    assert build["component"]["name"] == "kaniko"
    assert build["component"]["outputs"] == [{"name": "destination", "type": "image"}]
    assert build["params"]["destination"] == {
        "value": "acme/trainer:v1",
        "connection": "docker-connection",
    }
    assert train["params"]["image"] == {"ref": "ops.build", "value": "outputs.destination"}


def test_a_ref_to_an_output_kaniko_does_not_have_is_refused(tmp_path: Path) -> None:
    text = BUILD_THEN_TRAIN.replace(
        "{DESTINATION}", "{value: acme/trainer:v1, connection: docker-connection}"
    ).replace("outputs.destination", "outputs.image")
    (problem,) = _problems(_write(tmp_path, "dag.yaml", text)).problems
    assert problem.rule == "ref_not_found"
    assert "outputs.image" in problem.message and problem.path[-1] == "value"


def test_an_image_dict_is_only_read_for_image_params(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "op.yaml",
        """
        version: 1.1
        kind: operation
        params:
          image: {value: {name: acme/x, connection: a}, connection: b}
          settings: {value: {name: acme/x, connection: a}}
        component:
          inputs: [{name: image, type: image}, {name: settings, type: dict}]
          run: {kind: job, container: {image: busybox}}
        """,
    )
    (problem,) = _problems(path).problems
    assert problem.rule == "param_connection"
    assert problem.path == ("params", "image", "value", "connection")
    assert problem.line == 4


def test_image_params_render_name_and_connection_as_polyaxon_templates_do() -> None:
    from polyaxon_prefect.loading._render import ParamValue, build_context, render_value

    context = build_context(
        {
            "destination": ParamValue("acme/trainer:v1", type="image", connection="registry"),
            "cache": ParamValue(True, type="bool", is_flag=True),
            "context": ParamValue(None, type="str"),
        },
        globals={"artifacts_path": "/plx/artifacts"},
    )
    args = ["{{ destination.name }}", "{{ destination.connection }}", "{{ destination }}"]
    assert render_value(args, context) == ["acme/trainer:v1", "registry", "acme/trainer:v1"]
    assert render_value("{{ context or globals.artifacts_path }}", context) == "/plx/artifacts"
    assert render_value("{{ cache }}", context) == "--cache"


def test_the_tensorboard_hub_component_takes_the_run_uuid(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "dag.yaml",
        """
        version: 1.1
        kind: component
        run:
          kind: dag
          operations:
          - name: experiment
            component:
              run: {kind: job, container: {image: busybox}}
          - name: tensorboard
            hubRef: tensorboard
            params:
              uuid: {ref: ops.experiment, value: globals.uuid}
        """,
    )
    loaded = load_polyaxonfile(path)
    board = loaded.component.run.operation_list[1].component
    # Polyaxon's hub tensorboard:latest, field for field
    assert board.name == "tensorboard-latest" and board.run.kind == "service"
    assert [io.name for io in board.inputs] == ["image", "uuid", "path"]
    assert board.run.container.command == ["tensorboard"]


def test_the_hub_kaniko_renders_its_args_and_connection(tmp_path: Path) -> None:
    from polyaxon_prefect.runtime import Connection, UnknownConnectionError, new_run_context
    from polyaxon_prefect.runtime._one_process import prepare_job

    path = _write(
        tmp_path,
        "build.yaml",
        """
        version: 1.1
        kind: operation
        hubRef: kaniko
        params:
          destination: {value: {name: acme/trainer:v1, connection: registry}}
        """,
    )
    loaded = load_polyaxonfile(path)
    ctx = new_run_context("build", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    with pytest.raises(UnknownConnectionError, match="connection `registry` is not defined"):
        prepare_job(loaded, run_context=ctx, connections={}, skip_builds=True)

    registry = Connection.model_validate(
        {"name": "registry", "kind": "registry", "schema": {"url": "registry.example.com"}}
    )
    job = prepare_job(loaded, run_context=ctx, connections={"registry": registry}, skip_builds=True)
    assert job.is_build
    # as Polyaxon renders it: the registry connection's url, then the image name
    assert job.argv[2:] == [
        "-d",
        "registry.example.com/acme/trainer:v1",
        "--cache",
        "--cache-ttl=1h",
    ]
    assert job.argv[:2] == ["-c", str(ctx.artifacts_path)]
