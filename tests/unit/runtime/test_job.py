"""`prepare_job` / `execute_job` with real files, real processes and real git repositories."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError, UnsupportedFeatureError
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime import Connection, UnknownConnectionError, create_run_context
from polyaxon_prefect.runtime._job import (
    BuildNotSupportedError,
    PreparedJob,
    execute_job,
    prepare_job,
    render_dockerfile,
)
from polyaxon_prefect.specs._types_objects import DockerfileType

QUICK_START = Path(__file__).parents[3] / "examples" / "quick-start"

# A script that logs outputs the way a user's code does, through the tracking module.
LOG_OUTPUTS = (
    "from polyaxon_prefect import tracking; import sys; "
    "tracking.log_metrics(step=1, loss=0.5); tracking.log_metrics(step=2, loss=0.25); "
    "tracking.log_outputs(loss=float(sys.argv[1]))"
)


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
    ctx = create_run_context("test", "proj", artifacts_root=tmp_path / "artifacts")
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


PY_ARGV = "command: [python, -c, 'import sys; print(sys.argv[1:])']"

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


def test_injection_stays_one_literal_argument(tmp_path: Path) -> None:
    payload = "; touch pwned"
    job = prepare(
        tmp_path,
        component(
            f"container:\n  {PY_ARGV}\n  args: ['{{{{ value }}}}', '--v={{{{ value }}}}']\n",
            inputs="- {name: value, type: str}\n",
        ),
        params={"value": payload},
    )
    assert job.argv[-2:] == [payload, f"--v={payload}"]
    lines: list[str] = []
    result = execute_job(job, on_line=lambda stream, line: lines.append(line))
    assert result.status == "succeeded", result.message
    assert lines == [repr([payload, f"--v={payload}"])]
    assert not (tmp_path / "pwned").exists()
    assert not (Path.cwd() / "pwned").exists()


def test_missing_required_param_fails_at_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        component("container:\n  command: [echo]\n", inputs="- {name: lr, type: float}\n"),
    )
    with pytest.raises(PolyaxonfileError, match="`lr` is required"):
        load_polyaxonfile(path)


def test_template_errors_are_located(tmp_path: Path) -> None:
    with pytest.raises(PolyaxonfileError) as info:
        prepare(
            tmp_path,
            component(
                """\
                container:
                  command: [echo]
                  args: ["a", "b", "--x={{ nope }}"]
                  env: [{name: E, value: "{{ globals.nope }}"}]
                """
            ),
        )
    problems = info.value.problems
    assert [p.path for p in problems] == [
        ("component", "run", "container", "args", 2),
        ("component", "run", "container", "env", 0, "value"),
    ]
    assert "undefined name `nope`" in problems[0].message
    assert problems[0].file == str(tmp_path / "polyaxonfile.yaml")
    assert problems[0].line == 9
    assert ":9:" in problems[0].format()
    assert "component.run.container.args[2]" in problems[0].format()


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


def test_success_reads_outputs_and_metrics(tmp_path: Path) -> None:
    job = prepare(
        tmp_path,
        component(
            f"container:\n  command: [python, -c, '{LOG_OUTPUTS}', '{{{{ lr }}}}']\n",
            inputs="- {name: lr, type: float, value: 0.125}\n",
            outputs="- {name: loss, type: float}\n",
        ),
    )
    result = execute_job(job)
    assert result.status == "succeeded", result.message
    assert result.outputs == {"loss": 0.125}
    assert result.metrics == {"loss": 0.25}
    assert result.process is not None and result.process.returncode == 0
    assert result.problems == []


def test_non_zero_exit_gives_code_and_stderr_tail(tmp_path: Path) -> None:
    script = 'import sys; print("step one"); sys.stderr.write("bad input\\n"); sys.exit(3)'
    job = prepare(tmp_path, component(f"container:\n  command: [python, -c, '{script}']\n"))
    result = execute_job(job)
    assert result.status == "failed"
    assert result.message == "exited with code 3: bad input"


def test_timeout_kills_the_process(tmp_path: Path) -> None:
    job = prepare(
        tmp_path,
        component(
            "container:\n  command: [python, -c, 'import time; time.sleep(30)']\n",
            extra="termination: {timeout: 1}\n",
        ),
    )
    result = execute_job(job)
    assert result.status == "failed"
    assert result.message == "timed out after 1s"
    assert result.process is not None and result.process.duration < 10


def test_cancel_gives_stopped(tmp_path: Path) -> None:
    job = prepare(
        tmp_path, component("container:\n  command: [python, -c, 'import time; time.sleep(30)']\n")
    )
    event = threading.Event()
    threading.Timer(0.5, event.set).start()
    result = execute_job(job, cancel_event=event)
    assert result.status == "stopped"


def test_signal_death_is_named(tmp_path: Path) -> None:
    script = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    job = prepare(tmp_path, component(f"container:\n  command: [python, -c, '{script}']\n"))
    result = execute_job(job)
    assert result.status == "failed"
    assert result.message == "killed by signal SIGKILL"


def test_undeclared_output_fails(tmp_path: Path) -> None:
    script = "from polyaxon_prefect import tracking; tracking.log_outputs(loss=1.0, extra=2)"
    job = prepare(
        tmp_path,
        component(
            f"container:\n  command: [python, -c, '{script}']\n",
            outputs="- {name: loss, type: float}\n",
        ),
    )
    result = execute_job(job)
    assert result.status == "failed"
    assert "output `extra` was logged but the component does not declare it" in result.message
    assert [p.rule for p in result.problems] == ["output_undeclared"]


def test_missing_output_fails(tmp_path: Path) -> None:
    job = prepare(
        tmp_path,
        component(
            "container:\n  command: [python, -c, 'pass']\n", outputs="- {name: loss, type: float}\n"
        ),
    )
    result = execute_job(job)
    assert result.status == "failed"
    assert "output `loss` is not optional but the run did not log it" in result.message


def test_command_not_found(tmp_path: Path) -> None:
    job = prepare(tmp_path, component("container:\n  command: [no-such-command-xyz, --flag]\n"))
    result = execute_job(job)
    assert result.status == "failed"
    assert result.process is None
    assert "command `no-such-command-xyz` was not found" in result.message


def test_secret_from_connection_is_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "s3cr3t-T0KEN-value"
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "creds.env").write_text(f"API_TOKEN={secret}\n", encoding="utf-8")
    monkeypatch.setenv("POLYAXON_PREFECT_SECRETS_DIR", str(secrets_dir))
    conn = Connection.model_validate(
        {
            "name": "api",
            "kind": "http",
            "schema": {"url": "https://api"},
            "secret": {"name": "creds"},
        }
    )
    script = (
        'import os, sys; t = os.environ["API_TOKEN"]; print("token", t); '
        'print(sys.argv[1]); sys.stderr.write(t + "\\n"); sys.exit(1)'
    )
    job = prepare(
        tmp_path,
        component(
            "connections: [api]\n"
            f"container:\n  command: [python, -c, '{script}', '{{{{ key }}}}']\n"
            "  env: [{name: URL, value: '{{ connections.api.url }}'}]\n",
            inputs="- {name: key, type: str}\n",
        ),
        params={"key": secret},
        connections={"api": conn},
    )
    assert job.env["API_TOKEN"] == secret
    assert job.env["URL"] == "https://api"
    assert job.params == {"key": "***"}
    lines: list[str] = []
    result = execute_job(job, on_line=lambda stream, line: lines.append(line))
    assert result.status == "failed"
    assert lines and all(secret not in line for line in lines)
    assert "token ***" in lines
    assert secret not in result.message and "***" in result.message
    assert secret not in repr(result.process)


# --------------------------------------------------------------------------------------------------
# init


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = tmp_path / "code-repo"
    path.mkdir()
    _git(path, "init", "-q")
    (path / "version.txt").write_text("one\n")
    _git(path, "add", ".")
    _git(path, "commit", "-qm", "one")
    first = _git(path, "rev-parse", "HEAD")
    (path / "version.txt").write_text("two\n")
    _git(path, "commit", "-qam", "two")
    return path, first


READ_VERSION = (
    "command: [python, -c, 'import os; "
    'print(open(os.path.join("{{ globals.artifacts_path }}", "code-repo", '
    '"version.txt")).read().strip())\']'
)


@pytest.mark.parametrize("form", ["path", "file_url", "revision"])
def test_init_git(tmp_path: Path, repo: tuple[Path, str], form: str) -> None:
    path, first = repo
    git = {
        "path": "{url: code-repo}",
        "file_url": f"{{url: '{path.as_uri()}'}}",
        "revision": f"{{url: code-repo, revision: {first}}}",
    }[form]
    job = prepare(tmp_path, component(f"init:\n- git: {git}\ncontainer:\n  {READ_VERSION}\n"))
    lines: list[str] = []
    result = execute_job(job, on_line=lambda stream, line: lines.append(line))
    assert result.status == "succeeded", result.message
    assert lines == ["one" if form == "revision" else "two"]
    assert (job.context.artifacts_path / "code-repo" / ".git").is_dir()


def test_init_git_failure_names_the_step(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    job = prepare(
        tmp_path, component("init:\n- git: {url: no-such-repo}\ncontainer:\n  command: [echo]\n")
    )
    result = execute_job(job)
    assert result.status == "failed"
    assert result.message.startswith("init[0] (git clone of no-such-repo) failed: `git clone`")


@pytest.mark.parametrize(("chmod", "mode"), [("'755'", 0o755), ("'0o600'", 0o600), ("+x", None)])
def test_init_file_with_chmod(tmp_path: Path, chmod: str, mode: int | None) -> None:
    job = prepare(
        tmp_path,
        component(
            "init:\n- file: {filename: run.sh, "
            'content: "#!/bin/sh\\necho hi from {{ globals.name }}\\n", '
            f"chmod: {chmod}}}\ncontainer:\n  command: [echo]\n"
        ),
    )
    assert execute_job(job).status == "succeeded"
    target = job.context.artifacts_path / "run.sh"
    assert target.read_text() == "#!/bin/sh\necho hi from test\n"
    actual = stat.S_IMODE(target.stat().st_mode)
    if mode is not None:
        assert actual == mode
    else:
        assert actual & stat.S_IXUSR


def test_init_file_runs_as_the_command(tmp_path: Path) -> None:
    job = prepare(
        tmp_path,
        component(
            "init:\n- file: {filename: run.sh, chmod: '+x', "
            'content: "#!/bin/sh\\necho hello\\n"}\n'
            "container:\n  command: ['{{ globals.artifacts_path }}/run.sh']\n"
        ),
    )
    lines: list[str] = []
    assert execute_job(job, on_line=lambda s, line: lines.append(line)).status == "succeeded"
    assert lines == ["hello"]


def test_init_paths_copy(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text("1,2\n")
    (tmp_path / "config.json").write_text("{}")
    job = prepare(
        tmp_path,
        component(
            "init:\n- paths: [data, [config.json, conf/settings.json]]\n"
            "- paths: [config.json]\n  path: /plx-context/extra\n"
            "container:\n  command: [echo]\n"
        ),
    )
    result = execute_job(job)
    assert result.status == "succeeded", result.message
    artifacts = job.context.artifacts_path
    assert (artifacts / "data" / "a.csv").read_text() == "1,2\n"
    assert (artifacts / "conf" / "settings.json").read_text() == "{}"
    assert (job.context.context_path / "extra" / "config.json").is_file()


def test_init_paths_missing_source(tmp_path: Path) -> None:
    job = prepare(
        tmp_path, component("init:\n- paths: [nope.txt]\ncontainer:\n  command: [echo]\n")
    )
    result = execute_job(job)
    assert result.status == "failed"
    assert result.message.startswith("init[0] (paths copy) failed: `nope.txt` was not found")


def test_init_dockerfile_render(tmp_path: Path) -> None:
    job = prepare(
        tmp_path,
        component(
            """\
            init:
            - dockerfile:
                image: "python:{{ py }}"
                env: {KEY1: en_US.UTF-8, KEY2: 2}
                path: [/opt/bin]
                copy: [requirements.txt, [src, /app/src]]
                run: ["pip install -r requirements.txt"]
                postRunCopy: [setup.py]
                langEnv: en_US.UTF-8
                uid: 2222
                gid: 1111
                filename: Dockerfile.train
              path: build
            container:
              command: [echo]
            """,
            inputs="- {name: py, type: str, value: '3.11'}\n",
        ),
    )
    assert execute_job(job).status == "succeeded"
    text = (job.context.artifacts_path / "build" / "Dockerfile.train").read_text()
    assert text == textwrap.dedent(
        """\
        FROM python:3.11

        ENV LC_ALL en_US.UTF-8
        ENV LANG en_US.UTF-8
        ENV LANGUAGE en_US.UTF-8

        ENV SHELL /bin/bash

        ENV PATH="${PATH}:/opt/bin"

        ENV KEY1 en_US.UTF-8
        ENV KEY2 2

        WORKDIR /code

        COPY requirements.txt /code
        COPY src /app/src

        RUN pip install -r requirements.txt

        COPY setup.py /code

        # Drop root user and use Polyaxon user
        RUN groupadd -g 1111 -r polyaxon && useradd -r -m -g polyaxon -u 2222 polyaxon
        """
    )


def test_render_dockerfile_minimal() -> None:
    spec = DockerfileType(image="ubuntu", workdir="/w", shell="/bin/sh", workdir_path=".")
    assert (
        render_dockerfile(spec) == "FROM ubuntu\n\nENV SHELL /bin/sh\n\nWORKDIR /w\n\nCOPY . /w\n"
    )


def test_ttl_zero_deletes_the_run_directory(tmp_path: Path) -> None:
    job = prepare(
        tmp_path,
        component(
            f"container:\n  command: [python, -c, '{LOG_OUTPUTS}', '2.5']\n",
            outputs="- {name: loss, type: float}\n",
            extra="termination: {ttl: 0}\n",
        ),
    )
    result = execute_job(job)
    assert result.status == "succeeded"
    assert result.outputs == {"loss": 2.5}
    assert not job.context.run_path.exists()


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


def test_build_section_skipped_runs_the_job(tmp_path: Path) -> None:
    body = component("container:\n  command: [echo]\n", extra="build: {hubRef: kaniko}\n")
    with pytest.raises(BuildNotSupportedError, match="built by `kaniko`"):
        prepare(tmp_path, body)
    job = prepare(tmp_path, body, skip_builds=True)
    assert not job.is_build
    assert job.notes and "build skipped" in job.notes[0]
    assert execute_job(job).status == "succeeded"


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
# the quick-start example


def test_quick_start_model_runs_and_loss_depends_on_learning_rate(tmp_path: Path) -> None:
    losses = []
    for lr in ("0.001", "0.2"):
        loaded = load_polyaxonfile(
            QUICK_START / "typed.yaml", params={"epochs": "3", "learning_rate": lr}
        )
        ctx = create_run_context("typed", "quick", artifacts_root=tmp_path)
        job = prepare_job(loaded, run_context=ctx, connections={})
        assert job.cwd == QUICK_START
        result = execute_job(job)
        assert result.status == "succeeded", result.message
        assert set(result.outputs) == {"loss", "accuracy"}
        assert 0.0 <= result.outputs["accuracy"] <= 1.0
        losses.append(result.outputs["loss"])
    assert losses[0] != pytest.approx(losses[1], rel=0.05)
    assert losses[1] < losses[0]


def test_best_models_lists_runs(tmp_path: Path) -> None:
    for uuid, loss in (("aaa", 0.5), ("bbb", 0.1)):
        out = tmp_path / "quick" / uuid / "outputs"
        out.mkdir(parents=True)
        (out / "outputs.json").write_text(f'{{"loss": {loss}, "accuracy": 0.9}}')
    env = {**os.environ, "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(tmp_path)}
    env.pop("POLYAXON_PREFECT_RUN_ARTIFACTS_PATH", None)
    out = subprocess.run(
        [sys.executable, str(QUICK_START / "best_models.py"), "--project=quick", "--top=1"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[1] == "1. bbb loss=0.1000 accuracy=0.9000"
    assert len(out) == 2


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


def test_to_init_git_param_and_git_connection(tmp_path: Path, repo: tuple[Path, str]) -> None:
    path, _ = repo
    conn = Connection.model_validate(
        {"name": "code", "kind": "git", "schema": {"url": path.as_uri()}}
    )
    body = component(
        f"init:\n- git: {{revision: master}}\n  connection: code\n  path: from-conn\n"
        f"container:\n  {READ_VERSION}\n",
        inputs="- {name: repo, type: git, toInit: true}\n",
    )
    job = prepare(
        tmp_path,
        body,
        params={"repo": {"url": str(path)}},
        connections={"code": conn},
    )
    assert [step.kind for step in job.init] == ["git", "git"]
    _git(path, "branch", "-M", "master")
    result = execute_job(job)
    assert result.status == "succeeded", result.message
    assert (job.context.artifacts_path / "from-conn" / "code-repo" / "version.txt").is_file()


def test_init_container_runs_first(tmp_path: Path) -> None:
    write_marker = 'import sys; open("marker.txt", "w").write(" ".join(sys.argv[1:]))'
    job = prepare(
        tmp_path,
        component(
            "init:\n- container:\n"
            f"    command: [python, -c, '{write_marker}']\n"
            "    args: '{{ params.as_args }}'\n"
            "container:\n  command: [python, -c, 'print(open(\"marker.txt\").read())']\n"
            "  workingDir: '{{ globals.artifacts_path }}'\n",
            inputs="- {name: n, type: int, value: 3}\n- {name: s, type: str, value: x y}\n",
        ),
    )
    lines: list[str] = []
    result = execute_job(job, on_line=lambda s, line: lines.append(line))
    assert result.status == "succeeded", result.message
    assert lines == ["--n=3 --s=x y"]


def test_each_attempt_starts_without_stale_outputs(tmp_path: Path) -> None:
    script = (
        "import os; from polyaxon_prefect import tracking; "
        'first = not os.path.exists("once"); open("once", "w").close(); '
        "tracking.log_outputs(loss=1.0) if first else None"
    )
    job = prepare(
        tmp_path,
        component(
            f"container:\n  command: [python, -c, '{script}']\n"
            "  workingDir: '{{ globals.run_artifacts_path }}'\n",
            outputs="- {name: loss, type: float}\n",
        ),
    )
    assert execute_job(job).status == "succeeded"
    second = execute_job(job)
    assert second.status == "failed"
    assert "did not log it" in second.message


def test_default_run_context_makes_no_directories_until_executed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("POLYAXON_PREFECT_PROJECT", "my proj")
    loaded = load_polyaxonfile(write(tmp_path, component("container:\n  command: [echo, hi]\n")))
    job = prepare_job(loaded, connections={})
    assert job.context.project_name == "my-proj"
    assert not (tmp_path / "root").exists()
    assert execute_job(job).status == "succeeded"
    assert job.context.run_outputs_path.is_dir()
