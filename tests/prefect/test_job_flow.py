"""A job op as one Prefect flow run: real processes, states and API records under the harness."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from prefect.client.schemas.objects import StateType

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.prefect import run
from polyaxon_prefect.runtime.render._connections import Connection

SCRIPT = Path(__file__).with_name("job_script.py")
QUICK_START = Path(__file__).parents[2] / "examples" / "quick-start" / "typed.yaml"


def command(*args: str) -> str:
    quoted = ", ".join(f"'{a}'" for a in args)
    return f"container:\n  command: [python, '{SCRIPT}', {quoted}]\n"


LR = "- {name: lr, type: float, value: 0.1}\n"
LOSS = "- {name: loss, type: float}\n"


def test_success_returns_outputs_with_flow_task_and_artifact(make_component: Any, api: Any):
    path = make_component(command("ok", "{{ lr }}"), inputs=LR, outputs=LOSS, name="ok-job")

    result = run(path, {"lr": "0.25"})

    assert result.status == "succeeded" and result.succeeded
    assert result.outputs == {"loss": 0.5}
    assert result.metrics == {"loss": 1.0}
    assert Path(result.artifacts_path, "outputs", "outputs.json").is_file()
    flow_run = api.flow_run(result.flow_run_id)
    assert flow_run.state.type == StateType.COMPLETED
    assert flow_run.name == "ok-job"
    assert {"tests", "prefect"} <= set(flow_run.tags)
    [task_run] = api.task_runs(result.flow_run_id)
    assert task_run.state.type == StateType.COMPLETED and task_run.name == "ok-job"
    artifacts = {a.key: a for a in api.artifacts(result.flow_run_id)}
    assert set(artifacts) == {"ok-job-run", "ok-job-record"}, "its table and its record"
    artifact = artifacts["ok-job-run"]
    assert artifact.type == "table"
    # typed values, as `run --json` has them; the metric named like the output is there too
    assert '"kind": "output", "name": "loss", "value": 0.5' in artifact.data
    assert '"kind": "metric", "name": "loss", "value": 1.0' in artifact.data
    assert '"kind": "param", "name": "lr", "value": 0.25' in artifact.data
    logs = api.logs(result.flow_run_id)
    assert "training with lr 0.25" in logs and "a warning on stderr" in logs


def test_non_zero_exit_fails_with_exit_code_and_stderr_tail(make_component: Any, api: Any):
    path = make_component(command("fail"), name="failing-job")

    result = run(path)

    assert result.status == "failed" and not result.succeeded
    assert "exited with code 3" in result.message
    assert "boom: the data folder is empty" in result.message
    flow_run = api.flow_run(result.flow_run_id)
    assert flow_run.state.type == StateType.FAILED
    assert "exited with code 3" in flow_run.state.message
    assert "boom: the data folder is empty" in flow_run.state.message


def test_timeout_kills_the_process_at_the_deadline(make_component: Any, api: Any):
    path = make_component(command("sleep"), extra="termination: {timeout: 1}\n", name="sleepy-job")

    started = time.monotonic()
    result = run(path)

    assert time.monotonic() - started < 10
    assert result.status == "failed"
    assert "timed out after 1s" in result.message
    flow_run = api.flow_run(result.flow_run_id)
    assert flow_run.state.type == StateType.FAILED and flow_run.state.name == "TimedOut"
    [task_run] = api.task_runs(result.flow_run_id)
    assert task_run.state.name == "TimedOut"


def test_retries_rerun_a_failed_attempt(make_component: Any, api: Any, tmp_path: Path):
    marker = tmp_path / "attempts"
    path = make_component(
        command("flaky", str(marker)),
        outputs=LOSS,
        extra="termination: {maxRetries: 1}\n",
        name="flaky-job",
    )

    result = run(path)

    assert result.status == "succeeded" and result.outputs == {"loss": 1.0}
    [task_run] = api.task_runs(result.flow_run_id)
    assert task_run.run_count == 2
    assert any("first attempt fails" in line for line in api.logs(result.flow_run_id))


def test_cache_hit_reuses_outputs_without_a_process_and_miss_runs_again(
    make_component: Any, api: Any, tmp_path: Path
):
    marker = tmp_path / "starts"
    # the marker is the job's output in its working folder, not its code (the op cache hashes
    # that folder's files)
    (tmp_path / ".polyaxonignore").write_text("starts\n")
    path = make_component(
        command("count", str(marker), "{{ lr }}"),
        inputs=LR,
        outputs=LOSS,
        extra="cache: {disable: false}\n",
        name="cached-job",
    )

    first = run(path, {"lr": 0.5})
    second = run(path, {"lr": 0.5})
    other = run(path, {"lr": 0.75})

    assert first.status == second.status == other.status == "succeeded"
    assert not first.cached and second.cached and not other.cached
    assert second.outputs == first.outputs == {"loss": 5.0}
    assert second.uuid == first.uuid  # the run whose outputs these are
    assert other.outputs == {"loss": 7.5}
    assert marker.read_text().splitlines() == ["run lr=0.5", "run lr=0.75"]
    [task_run] = api.task_runs(second.flow_run_id)
    assert task_run.state.name == "Cached"
    flow_run = api.flow_run(second.flow_run_id)
    assert flow_run.state.type == StateType.COMPLETED and flow_run.state.name == "Cached"
    assert any("cache hit" in line for line in api.logs(second.flow_run_id))


def test_missing_required_param_raises_before_any_flow_run(make_component: Any):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    path = make_component(
        command("ok", "{{ lr }}"), inputs="- {name: lr, type: float}\n", name="needs-lr"
    )

    with pytest.raises(PolyaxonfileError, match="`lr` is required"):
        run(path)

    with get_client(sync_client=True) as client:
        flows = client.read_flows(flow_filter=FlowFilter(name=FlowFilterName(any_=["needs-lr"])))
    assert flows == []


def test_undeclared_output_fails_the_run(make_component: Any, api: Any):
    path = make_component(command("undeclared"), outputs=LOSS, name="surprise-job")

    result = run(path)

    assert result.status == "failed"
    assert "output `surprise` was logged but the component does not declare it" in result.message
    assert api.flow_run(result.flow_run_id).state.type == StateType.FAILED


def test_command_not_found_fails_with_a_clear_message(make_component: Any, api: Any):
    path = make_component("container:\n  command: [no-such-command-xyz]\n", name="typo-job")

    result = run(path)

    assert result.status == "failed"
    assert "command `no-such-command-xyz` was not found" in result.message
    flow_run = api.flow_run(result.flow_run_id)
    assert flow_run.state.type == StateType.FAILED
    assert "no-such-command-xyz" in flow_run.state.message


@pytest.mark.parametrize("value", ["; touch pwned", "$(touch pwned) && touch pwned"])
def test_injection_attempt_stays_one_literal_argument(
    make_component: Any, tmp_path: Path, value: str
):
    path = make_component(
        command("argv", "{{ name }}"),
        inputs="- {name: name, type: str}\n",
        outputs="- {name: arg, type: str}\n",
        name="echo-job",
    )

    result = run(path, {"name": value})

    assert result.status == "succeeded"
    assert result.outputs == {"arg": value}
    assert not list(tmp_path.rglob("pwned"))
    assert not Path(result.artifacts_path, "pwned").exists()


def test_secret_from_a_connection_never_reaches_the_api(
    make_component: Any, api: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    secret = "s3cr3t-T0KEN-4242"
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "creds.env").write_text(f"API_TOKEN={secret}\n", encoding="utf-8")
    monkeypatch.setenv("POLYAXON_PREFECT_SECRETS_DIR", str(secrets_dir))
    connection = Connection.model_validate(
        {"name": "api", "kind": "http", "schema": {"url": "https://x"}, "secret": {"name": "creds"}}
    )
    path = make_component("connections: [api]\n" + command("secret"), name="secret-job")

    result = run(path, connections={"api": connection})

    assert result.status == "failed"
    logs = api.logs(result.flow_run_id)
    assert "token ***" in logs
    assert not [line for line in logs if secret in line]
    flow_run = api.flow_run(result.flow_run_id)
    assert secret not in flow_run.state.message and "failing with ***" in flow_run.state.message
    assert secret not in repr(flow_run.parameters)
    assert all(secret not in (a.data or "") for a in api.artifacts(result.flow_run_id))
    assert secret not in result.message


def test_skipped_build_is_a_completed_state_named_skipped(make_component: Any, api: Any):
    path = make_component(
        "init: [{dockerfile: {image: ubuntu}}]\n"
        "container: {command: [executor, '--destination={{ destination }}']}\n",
        inputs='- {name: destination, type: image, value: "registry/img:1"}\n',
        name="kaniko",
    )

    with pytest.raises(PolyaxonfileError, match="no image builder"):
        run(path)
    result = run(path, skip_builds=True)

    assert result.status == "skipped" and not result.succeeded
    flow_run = api.flow_run(result.flow_run_id)
    assert flow_run.state.type == StateType.COMPLETED and flow_run.state.name == "Skipped"


def test_quick_start_trains_and_returns_loss_and_accuracy():
    result = run(QUICK_START, {"learning_rate": 0.05, "epochs": 3})

    assert result.status == "succeeded", result.message
    assert set(result.outputs) == {"loss", "accuracy"}
    assert 0 < result.outputs["loss"] < 1
    assert 0.5 < result.outputs["accuracy"] <= 1
