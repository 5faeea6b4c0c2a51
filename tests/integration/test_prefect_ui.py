"""What a person sees in the real Prefect UI, in a real browser: Debian's Chromium, headless,
driven by Playwright (its own browser download is not used), against the local background
server (``polyaxon-prefect server start``: Prefect's server with its UI, on a loopback port, and
its warm runner, which spares each ``run`` the CLI's own ``import prefect``).

A run of the quick-start DAG through ``polyaxon-prefect run`` must show its ops as task runs,
the DAG's markdown artifact and each op's params/outputs table, readable. Screenshots go to
``build/ui-screenshots/`` (or ``$POLYAXON_PREFECT_UI_SHOTS``) as the test's artifacts. Skipped,
saying why, where Chromium or Playwright is not installed (``.ci/run`` installs both).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import seed_prefect_home
from tests.integration.conftest import create_process_pool, new_home_env

pytestmark = [pytest.mark.slow, pytest.mark.process, pytest.mark.server, pytest.mark.browser]

REPO = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = Path(os.environ.get("POLYAXON_PREFECT_UI_SHOTS") or REPO / "build" / "ui-screenshots")
_BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

if CHROMIUM is None:
    pytest.skip("needs Debian's chromium (apt-get install chromium)", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip)")


@pytest.fixture(scope="module")
def ui_server(prefect_database_template: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A real Prefect server with its UI (a home of the module's own, from the session's
    migrated database); the environment a CLI run needs to use it."""
    folder = Path(tempfile.mkdtemp(prefix="prefect-ui-"))
    home = seed_prefect_home(folder / "home", prefect_database_template)
    env = new_home_env(home, folder / "artifacts", "600")
    polyaxon_prefect = str(BIN / "polyaxon-prefect")
    try:
        started = subprocess.run(
            [polyaxon_prefect, "server", "start"], env=env, capture_output=True, text=True
        )
        assert started.returncode == 0, started.stderr
        url = started.stdout.split(" at ", 1)[1].split()[0]
        env["PREFECT_API_URL"] = f"{url}/api"  # as `server start` tells `prefect` commands to
        # a `run` goes through the warm runner once it answers (it imports for a few seconds
        # after the server); until then a run takes the CLI's own way, with the same output
        _wait_for(lambda: _runner_answers(home / "polyaxon-prefect-runner.sock"), 120)
        yield url, env
    finally:
        subprocess.run([polyaxon_prefect, "server", "stop"], env=env, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def _runner_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def _wait_for(predicate: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.2)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=_BROWSER_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _artifacts(api: str, flow_run: str) -> dict[str, str]:
    """The flow run's artifacts (its task runs' included): id by key, from the REST API; a
    DAG op's table (no key) by the op its description names, ``<op>-run``."""
    body = json.dumps({"artifacts": {"flow_run_id": {"any_": [flow_run]}}}).encode()
    request = urllib.request.Request(
        f"{api}/artifacts/filter", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return {_name(item): item["id"] for item in json.loads(response.read())}


def _name(artifact: dict[str, Any]) -> str:
    description = artifact.get("description") or ""
    if artifact.get("key") is None and description.startswith("params and outputs of `"):
        return description.split("`")[1].replace("_", "-") + "-run"
    return str(artifact.get("key"))


def _tab(page: Any, name: str) -> None:
    page.get_by_text(name, exact=True).first.click()
    page.wait_for_load_state("networkidle")


def test_a_finished_dag_run_shows_its_ops_and_readable_artifacts(
    ui_server: tuple[str, dict[str, str]], browser: Any
) -> None:
    ui, env = ui_server
    done = subprocess.run(
        [
            str(BIN / "polyaxon-prefect"),
            "run",
            "-f",
            str(REPO / "examples/quick-start/dag.yaml"),
            "-P",
            "max_loss=10",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    flow_run = json.loads(done.stdout)["flow_run_id"]

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{ui}/runs/flow-run/{flow_run}", wait_until="networkidle")
    page.get_by_text("Completed").first.wait_for()
    _tab(page, "Task Runs")
    page.get_by_text("best_model", exact=True).first.wait_for()
    page.get_by_text("Skipped", exact=True).first.wait_for()
    tasks = page.inner_text("body")
    for op in ("experiment", "tune", "best_model"):
        assert op in tasks
    assert "Skipped" in tasks, "the tune op's conditions were false: it shows as skipped"
    _shot(page, "dag-run-task-runs")

    _tab(page, "Artifacts")
    # an op's table has no key: its card says whose it is by its description
    page.get_by_text("params and outputs of", exact=False).first.wait_for()
    listing = page.inner_text("body")
    assert "automated-process-dag" in listing and "params and outputs of best_model" in listing
    _shot(page, "dag-run-artifacts")

    artifacts = _artifacts(env["PREFECT_API_URL"], flow_run)
    page.goto(f"{ui}/artifacts/artifact/{artifacts['experiment-run']}", wait_until="networkidle")
    page.get_by_text("learning_rate", exact=True).first.wait_for()
    table = page.inner_text("body")
    assert "0.005" in table and "loss" in table and "succeeded" in table
    _shot(page, "op-table-artifact")

    dag = artifacts["automated-process-dag"]
    page.goto(f"{ui}/artifacts/artifact/{dag}", wait_until="networkidle")
    page.get_by_text("best_model", exact=False).first.wait_for()
    markdown = page.inner_text("body")
    assert "skipped" in markdown and "best_model" in markdown
    _shot(page, "dag-markdown-artifact")
    page.close()


def test_a_deployments_run_form_shows_each_input_with_its_type_and_description(
    ui_server: tuple[str, dict[str, str]], browser: Any
) -> None:
    ui, env = ui_server
    # the pool `prefect work-pool create ui-pool --type process` makes: set-up, not the point
    create_process_pool(env["PREFECT_API_URL"], "ui-pool")
    done = subprocess.run(
        [
            str(BIN / "polyaxon-prefect"),
            "deploy",
            "-f",
            str(REPO / "examples/quick-start/typed.yaml"),
            "--pool",
            "ui-pool",
            "--name",
            "form",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    deployment_id = done.stdout.split("(id ", 1)[1].split(")", 1)[0]

    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(f"{ui}/deployments/deployment/{deployment_id}/run", wait_until="networkidle")
    page.get_by_text("learning_rate", exact=False).first.wait_for()
    form = page.inner_text("body")
    for field in ("learning_rate", "dropout", "conv_activation", "epochs"):
        assert field in form
    for description in ("the optimizer's learning rate.", "passes over the training data."):
        assert description in form, "each input's description is shown"
    _shot(page, "deployment-run-form")
    page.close()


SWEEP = """\
version: 1.1
kind: operation
name: ui-sweep
matrix:
  kind: grid
  params:
    lr: {kind: choice, value: [0.1, 0.2, 0.3]}
  earlyStopping:  # names the metric (never reached): the progress says the best so far
  - {kind: metric_early_stopping, metric: loss, value: -1, optimization: minimize}
component:
  name: ui-sweep
  inputs: [{name: lr, type: float}]
  outputs: [{name: loss, type: float}]
  run:
    kind: job
    container:
      command:
      - python
      - -c
      - "from polyaxon_prefect import tracking; tracking.log_outputs(loss={{ lr }} * 2)"
"""


def test_a_sweeps_leaderboard_and_progress_render(
    ui_server: tuple[str, dict[str, str]], browser: Any, tmp_path: Path
) -> None:
    ui, env = ui_server
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    done = subprocess.run(
        [str(BIN / "polyaxon-prefect"), "run", "-f", str(path), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    artifacts = _artifacts(env["PREFECT_API_URL"], json.loads(done.stdout)["flow_run_id"])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    board = next(key for key in artifacts if key.endswith("-leaderboard"))
    page.goto(f"{ui}/artifacts/artifact/{artifacts[board]}", wait_until="networkidle")
    page.get_by_text("0.3", exact=False).first.wait_for()
    text = page.inner_text("body")
    assert "lr" in text and "succeeded" in text
    assert "loss" in text and "0.6" in text, "each trial's outputs are on the leaderboard"
    _shot(page, "sweep-leaderboard")
    progress = next(key for key in artifacts if key.endswith("-progress"))
    page.goto(f"{ui}/artifacts/artifact/{artifacts[progress]}", wait_until="networkidle")
    page.get_by_text("100", exact=False).first.wait_for()
    # the description moves with the progress: the count and the best so far
    assert "3 of 3 trials done; best loss 0.2 (trial 0), last value" in page.inner_text("body")
    _shot(page, "sweep-progress")
    page.close()


CURVES = """\
version: 1.1
kind: component
name: ui-curves
run:
  kind: job
  container:
    command:
    - python
    - -c
    - "from polyaxon_prefect import tracking; [tracking.log_metrics(step=s, loss=1 / (s + 1), \
accuracy=0.5 + s / 10) for s in range(3)]"
"""


def test_a_jobs_metric_chart_renders_as_images_in_its_artifact(
    ui_server: tuple[str, dict[str, str]], browser: Any, tmp_path: Path
) -> None:
    """The UI's Markdown shows an image given as a ``data:`` URI (an SVG chart per metric), in
    the UI Prefect serves and in its V2 UI."""
    ui, env = ui_server
    path = tmp_path / "curves.yaml"
    path.write_text(CURVES)
    done = subprocess.run(
        [str(BIN / "polyaxon-prefect"), "run", "-f", str(path), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    artifacts = _artifacts(env["PREFECT_API_URL"], json.loads(done.stdout)["flow_run_id"])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    chart = artifacts["ui-curves-metrics"]
    for version in ("", "/v2"):  # the UI Prefect serves by default, and its new one
        page.goto(f"{ui}{version}/artifacts/artifact/{chart}", wait_until="networkidle")
        page.locator("img[alt=loss]").first.wait_for()
        # the UI may mount the artifact's Markdown again once its other requests end: read the
        # images until both charts are loaded there (or 30 s), then assert on what was read
        deadline = time.monotonic() + 30
        while True:
            images = page.eval_on_selector_all(
                "img",
                "found => found.map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight])",
            )
            both = ["loss", True, 360, 180] in images and ["accuracy", True, 360, 180] in images
            if both or time.monotonic() > deadline:
                break
            page.wait_for_timeout(200)
        assert ["loss", True, 360, 180] in images and ["accuracy", True, 360, 180] in images
        box = page.locator("img[alt=loss]").first.bounding_box()
        assert box is not None and box["width"] > 100, "the chart is drawn, not a broken image"
        table = page.inner_text("body")
        assert "0.3333" in table and "▁" in table, "the table and its sparklines are shown too"
        _shot(page, f"job-metrics-chart{version.replace('/', '-')}")
    page.close()
