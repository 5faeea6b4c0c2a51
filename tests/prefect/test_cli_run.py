"""`polyaxon-prefect run` in a subprocess: exit codes, stdout holding only the JSON object."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

QUICK_START = Path(__file__).parents[2] / "examples" / "quick-start" / "typed.yaml"
CLI = [sys.executable, "-m", "polyaxon_prefect.cli", "run"]


def _run(args: list[str], api_url: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if api_url:
        env["PREFECT_API_URL"] = api_url  # the session's test server: no ephemeral start
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_run_json_on_the_quick_start(prefect_server: str):
    done = _run(
        ["-f", str(QUICK_START), "-P", "learning_rate=0.05", "-P", "epochs=3", "--json"],
        prefect_server,
    )

    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)  # stdout is exactly one JSON object
    assert payload["status"] == "succeeded"
    assert set(payload["outputs"]) == {"loss", "accuracy"}
    assert {"uuid", "name", "metrics", "artifacts_path", "message", "flow_run_id"} <= set(payload)
    assert Path(payload["artifacts_path"]).is_dir()
    assert "epoch 3/3" in done.stderr  # the job's own lines, streamed to the terminal


def test_invalid_file_prints_located_problems_and_exits_1(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    text = QUICK_START.read_text(encoding="utf-8").replace("kind: job", "kind: jobb")
    path.write_text(text, encoding="utf-8")

    done = _run(["-f", str(path), "-P", "epochs=3"], None)

    assert done.returncode == 1
    assert f"{path}:" in done.stderr and "jobb" in done.stderr
    assert "problem" in done.stderr and "found." in done.stderr
    assert done.stdout == ""

    bad_param = _run(["-f", str(QUICK_START), "-P", "epochs=0", "--json"], None)

    assert bad_param.returncode == 1
    assert "-P: params.epochs.value" in bad_param.stderr
    payload = json.loads(bad_param.stdout)
    assert payload["status"] == "failed" and payload["problems"][0]["rule"]


def test_importing_the_cli_and_lazy_names_does_not_import_prefect():
    code = (
        "import sys, polyaxon_prefect.prefect.cli._cli, polyaxon_prefect.prefect as pp; "
        "pp.run, pp.to_flow, pp.RunResult; "
        "print(sorted(m for m in sys.modules if m == 'prefect' or m.startswith('prefect.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_an_unreachable_server_is_one_line_and_json_on_stdout(tmp_path: Path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ)
    env["PREFECT_API_URL"] = f"http://127.0.0.1:{port}/api"  # nothing listens there
    env["POLYAXON_PREFECT_ARTIFACTS_ROOT"] = str(tmp_path)
    env.pop("POLYAXON_PREFECT_DEBUG", None)

    done = subprocess.run(
        [*CLI, "-f", str(QUICK_START), "-P", "epochs=1", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    url = env["PREFECT_API_URL"]
    said = f"the Prefect server at PREFECT_API_URL={url} (set in the environment) does not answer"
    assert f"error: {said}" in done.stderr
    payload = json.loads(done.stdout)
    assert payload["status"] == "failed" and payload["message"].startswith(said)


def test_a_backend_without_an_executor_is_refused_before_anything_runs(tmp_path: Path):
    """`--backend kubeflow` names the kind and the backend; no server, no flow run, exit 1
    (a notifier has no Kubernetes workload: jobs and distributed kinds have)."""
    notifier = tmp_path / "notify.yaml"
    notifier.write_text(
        "version: 1.1\nkind: component\nname: notify\nrun:\n  kind: notifier\n"
        "  container: {image: img, command: [echo, done]}\n"
    )
    done = _run(["-f", str(notifier), "--backend", "kubeflow", "--json"], None)

    assert done.returncode == 1
    payload = json.loads(done.stdout)
    [problem] = payload["problems"]
    assert problem["rule"] == "unsupported_kind"
    assert "run kind `notifier` cannot run on the `kubeflow` backend" in problem["message"]
    assert "preparing Prefect" not in done.stderr  # refused before any server starts
