"""`prepare_job` / `execute_job` with real files, real processes and real git repositories."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError, UnsupportedFeatureError
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime import UnknownConnectionError, new_run_context
from polyaxon_prefect.runtime._one_process import (
    BuildNotSupportedError,
    PreparedJob,
    execute_job,
    prepare_job,
    render_dockerfile,
)
from polyaxon_prefect.specs.params._types_objects import DockerfileType


def write(tmp_path: Path, body: str, name: str = "polyaxonfile.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def prepare(
    tmp_path: Path,
    body: str,
    params: dict | None = None,
    connections: dict | None = None,
    **kwargs: object,
) -> PreparedJob:
    path = write(tmp_path, body)
    loaded = load_polyaxonfile(path, params=params or {})
    ctx = new_run_context("test", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    return prepare_job(
        loaded,
        run_context=ctx,
        connections=connections or {},
        **kwargs,  # type: ignore[arg-type]
    )


def component(run: str, inputs: str = "", outputs: str = "", extra: str = "") -> str:
    return (
        "version: 1.1\nkind: component\nname: demo\ntags: [a, b]\n"
        + (f"inputs:\n{inputs}\n" if inputs else "")
        + (f"outputs:\n{outputs}\n" if outputs else "")
        + extra
        + "run:\n  kind: job\n"
        + textwrap.indent(textwrap.dedent(run), "  ")
    )


# --------------------------------------------------------------------------------------------------
# prepare_job: rendering


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ('["--lr={{ lr }}"]', ["--lr=0.1"]),
        ('["{{ lr }}"]', ["0.1"]),
        ('["--name={{ name }}", "x"]', ["--name=a b", "x"]),
        ('"{{ params.as_args }}"', ["--lr=0.1", "--name=a b", "--flag"]),
        ('["first", "{{ params.as_args }}"]', ["first", "--lr=0.1", "--name=a b", "--flag"]),
        ('["{{ flag }}"]', ["--flag"]),
        ('["{{ params.lr.as_arg }}"]', ["--lr=0.1"]),
        ('["--n={{ name | upper }}"]', ["--n=A B"]),
    ],
)
def test_args_rendering(tmp_path: Path, args: str, expected: list[str]) -> None:
    job = prepare(
        tmp_path,
        component(
            f"container:\n  command: [echo]\n  args: {args}\n",
            inputs="- {name: lr, type: float, value: 0.1}\n"
            "- {name: name, type: str, value: a b}\n"
            "- {name: flag, type: bool, isFlag: true, value: true}\n",
        ),
        params={},
    )
    assert job.argv == ["echo", *expected]


def test_globals_and_uuid_rendered(tmp_path: Path) -> None:
    job = prepare(
        tmp_path,
        component(
            "container:\n"
            "  command: [echo, '{{ globals.uuid }}', '{{ globals.run_outputs_path }}']\n"
        ),
    )
    assert job.argv[1] == job.context.uuid
    assert job.argv[2] == str(job.context.run_outputs_path)


def test_env_to_env_working_dir_and_python(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    job = prepare(
        tmp_path,
        component(
            """\
            container:
              image: "repo/img:{{ tag }}"
              command: [python, train.py]
              workingDir: sub
              env:
              - {name: LR, value: "{{ lr }}"}
              - {name: PLAIN, value: 3}
            """,
            inputs="- {name: lr, type: float, value: 0.5}\n"
            "- {name: tag, type: str, value: v1, toEnv: IMAGE_TAG}\n",
        ),
    )
    assert job.argv == [sys.executable, "train.py"]
    assert job.env["LR"] == "0.5"
    assert job.env["PLAIN"] == "3"
    assert job.env["IMAGE_TAG"] == "v1"
    assert job.env["POLYAXON_PREFECT_RUN_UUID"] == job.context.uuid
    assert job.env["PATH"] == os.environ["PATH"]
    assert job.cwd == tmp_path / "sub"
    assert job.image == "repo/img:v1"
    assert job.tags == ("a", "b")
    assert job.op_name == "demo"
    assert job.params == {"lr": 0.5, "tag": "v1"}


def test_working_dir_defaults_to_the_polyaxonfile_folder(tmp_path: Path) -> None:
    job = prepare(tmp_path, component("container:\n  command: [echo]\n"))
    assert job.cwd == tmp_path
    assert job.timeout is None and job.max_retries == 0 and job.ttl is None


def test_params_override_parsed_by_type(tmp_path: Path) -> None:
    body = component(
        "container:\n  command: [echo, '{{ lr }}', '{{ n }}']\n",
        inputs="- {name: lr, type: float}\n- {name: n, type: int, value: 1}\n",
    )
    path = write(tmp_path, body)
    loaded = load_polyaxonfile(path, params={"lr": "0.5"})
    job = prepare_job(loaded, params={"lr": "0.25", "n": 7}, connections={})
    assert job.argv == ["echo", "0.25", "7"]
    assert job.params == {"lr": 0.25, "n": 7}
    with pytest.raises(PolyaxonfileError, match="unexpected param `nope`"):
        prepare_job(loaded, params={"nope": 1}, connections={})
    with pytest.raises(PolyaxonfileError, match="param `n`"):
        prepare_job(loaded, params={"n": "many"}, connections={})


def test_missing_required_param_fails_at_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        component("container:\n  command: [echo]\n", inputs="- {name: lr, type: float}\n"),
    )
    with pytest.raises(PolyaxonfileError, match="`lr` is required"):
        load_polyaxonfile(path)


def test_template_errors_are_located(tmp_path: Path) -> None:
    body = """\
        container:
          command: [echo]
          args: ["a", "b", "--x={{ nope }}"]
          env: [{name: E, value: "{{ globals.nope }}"}]
        """
    # an undefined name is found when the file is loaded (what `check` reports), before any
    # prepare; a key `globals` lacks when the job is prepared
    with pytest.raises(PolyaxonfileError) as info:
        prepare(tmp_path, component(body))
    problems = info.value.problems
    assert [p.path for p in problems] == [("run", "container", "args", 2)]
    assert "undefined name `nope`" in problems[0].message
    assert problems[0].file == str(tmp_path / "polyaxonfile.yaml")
    assert problems[0].line == 9
    assert ":9:" in problems[0].format()
    assert "run.container.args[2]" in problems[0].format()
    with pytest.raises(PolyaxonfileError) as info:
        prepare(tmp_path, component(body.replace("{{ nope }}", "1")))
    assert [p.path for p in info.value.problems] == [
        ("component", "run", "container", "env", 0, "value")
    ]
    assert info.value.problems[0].line == 10


@pytest.mark.parametrize("kind", ["service", "tfjob", "dag"])
def test_unsupported_kinds(tmp_path: Path, kind: str) -> None:
    body = {
        "service": "version: 1.1\nkind: component\nrun:\n  kind: service\n"
        "  container: {command: [echo]}\n",
        "tfjob": "version: 1.1\nkind: component\nrun:\n  kind: tfjob\n"
        "  worker: {replicas: 2, container: {command: [echo]}}\n",
        "dag": "version: 1.1\nkind: component\nrun:\n  kind: dag\n  operations:\n"
        "  - name: a\n    component: {run: {kind: job, container: {command: [echo]}}}\n",
    }[kind]
    with pytest.raises(UnsupportedFeatureError, match=f"run kind `{kind}` cannot run") as info:
        prepare(tmp_path, body)
    assert info.value.problems[0].hint


def test_unknown_connection(tmp_path: Path) -> None:
    with pytest.raises(UnknownConnectionError, match="connection `data` is not defined"):
        prepare(tmp_path, component("connections: [data]\ncontainer:\n  command: [echo]\n"))


def test_termination_values(tmp_path: Path) -> None:
    job = prepare(
        tmp_path,
        component(
            "container:\n  command: [echo]\n",
            inputs="- {name: t, type: int, value: 7}\n",
            extra="termination: {maxRetries: 2, timeout: '{{ t }}', ttl: 30}\n",
        ),
    )
    assert (job.max_retries, job.timeout, job.ttl) == (2, 7.0, 30)


# --------------------------------------------------------------------------------------------------
# execute_job


def test_command_not_found(tmp_path: Path) -> None:
    job = prepare(tmp_path, component("container:\n  command: [no-such-command-xyz, --flag]\n"))
    result = execute_job(job)
    assert result.status == "failed"
    assert result.process is None
    assert "command `no-such-command-xyz` was not found" in result.message


# --------------------------------------------------------------------------------------------------
# init


def test_init_paths_missing_source(tmp_path: Path) -> None:
    job = prepare(
        tmp_path, component("init:\n- paths: [nope.txt]\ncontainer:\n  command: [echo]\n")
    )
    result = execute_job(job)
    assert result.status == "failed"
    assert result.message.startswith("init[0] (paths copy) failed: `nope.txt` was not found")


def test_render_dockerfile_minimal() -> None:
    spec = DockerfileType(image="ubuntu", workdir="/w", shell="/bin/sh", workdir_path=".")
    assert (
        render_dockerfile(spec) == "FROM ubuntu\n\nENV SHELL /bin/sh\n\nWORKDIR /w\n\nCOPY . /w\n"
    )


# --------------------------------------------------------------------------------------------------
# builds


KANIKO_LIKE = """\
    version: 1.1
    kind: component
    name: kaniko
    inputs: [{name: destination, type: image, value: "reg/img:1"}]
    run:
      kind: job
      init: [{dockerfile: {image: ubuntu}}]
      container: {command: [executor, "--destination={{ destination }}"]}
    """


def test_build_op_needs_skip_builds(tmp_path: Path) -> None:
    with pytest.raises(BuildNotSupportedError, match="no image builder") as info:
        prepare(tmp_path, KANIKO_LIKE)
    assert "--skip-builds" in (info.value.problems[0].hint or "")
    job = prepare(tmp_path, KANIKO_LIKE, skip_builds=True)
    assert job.is_build
    result = execute_job(job)
    assert result.status == "skipped"
    assert result.process is None


# --------------------------------------------------------------------------------------------------
# cache key


CACHED = component(
    "container:\n  command: [echo, '--lr={{ lr }}', '--dropout={{ dropout }}']\n",
    inputs="- {name: lr, type: float, value: 0.1}\n- {name: dropout, type: float, value: 0.2}\n",
)


def _key(tmp_path: Path, body: str, *, in_pipeline: bool = True, **params: object) -> str | None:
    return prepare(tmp_path, body, params=dict(params), in_pipeline=in_pipeline).cache_key


def test_cache_key_default_off_standalone_on_in_pipeline(tmp_path: Path) -> None:
    assert _key(tmp_path, CACHED, in_pipeline=False) is None
    assert _key(tmp_path, CACHED) is not None
    disabled = CACHED.replace("run:\n", "cache: {disable: true}\nrun:\n")
    assert _key(tmp_path, disabled) is None
    enabled = CACHED.replace("run:\n", "cache: {disable: false, ttl: 60}\nrun:\n")
    job = prepare(tmp_path, enabled)
    assert job.cache_key is not None and job.cache_ttl == 60


def test_cache_key_stable_and_sensitive(tmp_path: Path) -> None:
    first = _key(tmp_path, CACHED, lr=0.1)
    assert first == _key(tmp_path, CACHED, lr="0.1")  # a new run, same inputs
    assert first != _key(tmp_path, CACHED, lr=0.2)
    assert first != _key(tmp_path, CACHED, dropout=0.3)
    changed = CACHED.replace("command: [echo,", "command: [printf,")
    assert first != _key(tmp_path, changed, lr=0.1)


def test_cache_io_limits_the_key(tmp_path: Path) -> None:
    body = CACHED.replace("run:\n", "cache: {io: [lr]}\nrun:\n")
    first = _key(tmp_path, body, lr=0.1, dropout=0.2)
    assert first == _key(tmp_path, body, lr=0.1, dropout=0.5)
    assert first != _key(tmp_path, body, lr=0.3, dropout=0.2)


# --------------------------------------------------------------------------------------------------
# operations, toInit, connections in init, init containers, attempts


def test_operation_overrides_component_fields(tmp_path: Path) -> None:
    write(
        tmp_path,
        component(
            "container:\n  command: [echo, '{{ lr }}']\n",
            inputs="- {name: lr, type: float, value: 0.1}\n",
            extra="termination: {timeout: 5}\n",
        ),
        name="component.yaml",
    )
    job = prepare(
        tmp_path,
        """\
        version: 1.1
        kind: operation
        name: my-op
        pathRef: component.yaml
        params: {lr: 0.3}
        termination: {timeout: 9, maxRetries: 1}
        """,
    )
    assert job.op_name == "my-op"
    assert job.argv == ["echo", "0.3"]
    assert (job.timeout, job.max_retries) == (9.0, 1)
