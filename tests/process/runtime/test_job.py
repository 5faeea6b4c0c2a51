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

from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime import Connection, new_run_context
from polyaxon_prefect.runtime._one_process import (
    BuildNotSupportedError,
    execute_job,
    prepare_job,
)
from tests.unit.runtime.test_job import component, prepare, write

pytestmark = pytest.mark.process

QUICK_START = Path(__file__).parents[3] / "examples" / "quick-start"

# A script that logs outputs the way a user's code does, through the tracking module.
LOG_OUTPUTS = (
    "from polyaxon_prefect import tracking; import sys; "
    "tracking.log_metrics(step=1, loss=0.5); tracking.log_metrics(step=2, loss=0.25); "
    "tracking.log_outputs(loss=float(sys.argv[1]))"
)


PY_ARGV = "command: [python, -c, 'import sys; print(sys.argv[1:])']"

# --------------------------------------------------------------------------------------------------
# prepare_job: rendering


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


def test_build_section_skipped_runs_the_job(tmp_path: Path) -> None:
    body = component("container:\n  command: [echo]\n", extra="build: {hubRef: kaniko}\n")
    with pytest.raises(BuildNotSupportedError, match="built by `kaniko`"):
        prepare(tmp_path, body)
    job = prepare(tmp_path, body, skip_builds=True)
    assert not job.is_build
    assert job.notes and "build skipped" in job.notes[0]
    assert execute_job(job).status == "succeeded"


# --------------------------------------------------------------------------------------------------
# the quick-start example


def test_quick_start_model_runs_and_loss_depends_on_learning_rate(tmp_path: Path) -> None:
    losses = []
    for lr in ("0.001", "0.2"):
        loaded = load_polyaxonfile(
            QUICK_START / "typed.yaml", params={"epochs": "3", "learning_rate": lr}
        )
        ctx = new_run_context("typed", "quick", artifacts_root=tmp_path).make_dirs()
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


def test_a_shell_commands_python_is_the_interpreter_of_the_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bash -c "python ..."`` (every legacy ``cmd``) finds the runtime's interpreter first on
    ``PATH``, as a ``python`` argv does, even when the CLI's environment was not activated."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    job = prepare(
        tmp_path,
        component(
            "container:\n  command: [sh, -c, 'python -c \"import sys; print(sys.executable)\"']\n"
        ),
    )
    lines: list[str] = []
    result = execute_job(job, on_line=lambda stream, line: lines.append(line))
    assert result.status == "succeeded", result.message
    # `python` beside this interpreter (a venv's python3 and python are the same program)
    assert [str(Path(line).parent) for line in lines] == [str(Path(sys.executable).parent)]
