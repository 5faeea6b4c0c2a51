"""The ``docker`` backend with real podman: ops run in their images, and leave no container.

Images are built offline once per machine (`tests.prefect.container_images`); every test skips,
saying why, where podman cannot run a container. Each CLI runs in a second process on the
folder's test server, with the CLI chosen by ``POLYAXON_PREFECT_CONTAINER_CLI``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from polyaxon_prefect.runtime._context import ENV_ARTIFACTS_ROOT, find_run_path
from polyaxon_prefect.runtime._one_process import LOG_FILE
from polyaxon_prefect.runtime.docker._container_replicas import SSH_DIR
from tests.prefect import container_images as images
from tests.prefect.conftest import MARK, cli_on, run_processes, wait_until

pytestmark = [pytest.mark.container, pytest.mark.slow]

SHELL_INJECTION = "x; touch {marker}; echo $(id) `id`"


@pytest.fixture(scope="module", autouse=True)
def podman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Podman configured as on CI (`images.containers_conf`), the test images built."""
    folder = tmp_path_factory.mktemp("podman")
    saved = {k: os.environ.get(k) for k in ("CONTAINERS_CONF", "POLYAXON_PREFECT_CONTAINER_CLI")}
    os.environ["CONTAINERS_CONF"] = str(images.containers_conf(folder))
    os.environ["POLYAXON_PREFECT_CONTAINER_CLI"] = "podman"
    try:
        problem = images.podman_problem()
        if problem is not None:
            pytest.skip(problem)
        images.ensure_python(folder)
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _containers(label: str) -> list[str]:
    done = subprocess.run(
        ["podman", "ps", "-aq", "--filter", f"label={label}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


PRODUCER = """\
import os, socket, sys
from polyaxon_prefect import tracking
print("in-image", os.path.exists("/etc/os-release"), os.getcwd(), sys.argv[1:])
tracking.log_metrics(step=1, acc=0.5)
tracking.log_metrics(step=2, acc=0.75)
tracking.log_outputs(loss=0.25, host=socket.gethostname())
"""


def test_a_dag_runs_each_op_in_its_image_and_reads_outputs_and_metrics_back(
    tmp_path: Path, prefect_server: str
) -> None:
    marker = tmp_path / "injected"
    dag = _write(
        tmp_path / "dag.yaml",
        f"""\
version: 1.1
kind: operation
name: boxed
component:
  name: boxed
  run:
    kind: dag
    operations:
    - name: produce
      params: {{text: {{value: {json.dumps(SHELL_INJECTION.format(marker=marker))}}}}}
      component:
        name: produce
        inputs: [{{name: text, type: str}}]
        outputs: [{{name: loss, type: float}}, {{name: host, type: str}}]
        run:
          kind: job
          container:
            image: {images.PYTHON}
            command: [python, -c, {json.dumps(PRODUCER)}, "{{{{ text }}}}"]
    - name: consume
      dependencies: [produce]
      params: {{loss: {{ref: ops.produce, value: outputs.loss}}}}
      component:
        name: consume
        inputs: [{{name: loss, type: float}}]
        run:
          kind: job
          container:
            image: {images.BUSYBOX}
            command: [/bin/sh, -c, 'echo "consumed $0 in $(hostname)"', "{{{{ loss }}}}"]
""",
    )
    done = cli_on(prefect_server, "run", "-f", str(dag), "--backend", "docker", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result
    produce, consume = result["ops"]["produce"], result["ops"]["consume"]
    assert produce["outputs"]["loss"] == 0.25
    assert produce["outputs"]["host"] != os.uname().nodename  # it ran in a container
    run_dir = find_run_path(produce["uuid"])
    assert run_dir is not None
    metrics = (run_dir / "outputs" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["acc"] for line in metrics] == [0.5, 0.75]
    log = (run_dir / "logs" / LOG_FILE).read_text()
    # No /etc/os-release in the image; the param is one argument, never run by a shell.
    assert f"in-image False {tmp_path} {[SHELL_INJECTION.format(marker=marker)]}" in log
    assert not marker.exists()
    consumed = find_run_path(consume["uuid"])
    assert consumed is not None
    assert "consumed 0.25 in " in (consumed / "logs" / LOG_FILE).read_text()
    for op in (produce, consume):
        assert _containers(f"polyaxon-prefect.run={op['uuid']}") == []


def _job(tmp_path: Path, image: str, command: str, extra: str = "") -> Path:
    return _write(
        tmp_path / "job.yaml",
        f"""\
version: 1.1
kind: component
name: boxed-job
run:
  kind: job
  container:
    image: {image}
    command: {command}
{extra}""",
    )


def test_a_missing_image_is_one_clear_line(tmp_path: Path, prefect_server: str) -> None:
    missing = "localhost/polyaxon-prefect-test/missing:0"
    path = _job(tmp_path, missing, "[/bin/true]", "    imagePullPolicy: Never\n")
    done = cli_on(prefect_server, "run", "-f", str(path), "--backend", "docker")
    assert done.returncode == 1
    lines = [line for line in done.stdout.splitlines() if line.startswith("message:")]
    assert lines == [
        f"message: image `{missing}` is not on this machine and its imagePullPolicy is Never"
    ]
    assert "Traceback" not in done.stderr


def _run_in_background(
    path: Path, prefect_server: str, env: dict[str, str]
) -> subprocess.Popen[str]:
    """``run -f PATH --backend docker`` as a CLI process of its own (to be signalled), its
    output in one pipe."""
    argv = [sys.executable, "-m", "polyaxon_prefect.cli", "run", "-f", str(path)]
    return subprocess.Popen(
        [*argv, "--backend", "docker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # the run in this very process (not the warm runner's): its containers are labelled
        # with the CLI's pid, and the CLI is what the test signals and kills
        env={
            **os.environ,
            "PREFECT_API_URL": prefect_server,
            "POLYAXON_PREFECT_RUNNER": "0",
            **env,
        },
    )


def _start_sleeper(
    tmp_path: Path, prefect_server: str, mark: str = "", path: Path | None = None
) -> subprocess.Popen[str]:
    path = path or _job(tmp_path, images.BUSYBOX, "[/bin/sleep, '300']")
    process = _run_in_background(path, prefect_server, {MARK: mark})
    label = f"polyaxon-prefect.pid={process.pid}"
    if not wait_until(lambda: _containers(label), timeout=90, step=0.5):
        process.kill()
        pytest.fail(f"no container started: {process.communicate()[0][-2000:]}")
    return process


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_ctrl_c_or_kill_9_of_the_cli_leaves_no_container(
    tmp_path: Path, prefect_server: str, how: signal.Signals
) -> None:
    process = _start_sleeper(tmp_path, prefect_server)
    label = f"polyaxon-prefect.pid={process.pid}"
    process.send_signal(how)
    process.communicate(timeout=60)
    assert wait_until(lambda: not _containers(label), timeout=60, step=0.5), _containers(label)


def test_a_build_op_builds_its_image_and_the_next_op_runs_in_it(
    tmp_path: Path, prefect_server: str
) -> None:
    tag = f"localhost/polyaxon-prefect-test/built:{uuid.uuid4().hex[:12]}"
    dag = _write(
        tmp_path / "built.yaml",
        f"""\
version: 1.1
kind: component
name: built
run:
  kind: dag
  operations:
  - name: build
    hubRef: kaniko
    params:
      destination: {{value: {{name: "{tag}"}}}}
    runPatch:
      init:
      - dockerfile:
          image: {images.BUSYBOX}
          env: {{GREETING: baked}}
          run: ["echo $GREETING into the image > /baked.txt"]
  - name: use
    dependencies: [build]
    params:
      image: {{ref: ops.build, value: outputs.destination}}
    component:
      inputs: [{{name: image, type: image}}]
      run:
        kind: job
        container:
          image: "{{{{ image }}}}"
          imagePullPolicy: Never
          command: [/bin/cat, /baked.txt]
""",
    )
    try:
        done = cli_on(prefect_server, "run", "-f", str(dag), "--backend", "docker", "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        result = json.loads(done.stdout)
        assert result["ops"]["build"]["outputs"] == {"destination": tag}
        used = find_run_path(result["ops"]["use"]["uuid"])
        assert used is not None
        assert "baked into the image" in (used / "logs" / LOG_FILE).read_text()
        skipped = cli_on(
            prefect_server,
            "run",
            "-f",
            str(dag),
            "--backend",
            "docker",
            "--skip-builds",
            "--no-cache",
            "--json",
        )
        assert json.loads(skipped.stdout)["ops"]["build"]["status"] == "skipped", skipped.stdout
    finally:
        subprocess.run(["podman", "rmi", "-f", tag], capture_output=True, check=False)


QUICK_START = Path(__file__).resolve().parents[2] / "examples" / "quick-start"


def test_the_quick_start_dag_with_its_build_op_runs_in_containers(
    tmp_path: Path, prefect_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The docs' quick-start DAG, with the `build` op the example leaves out: kaniko's hub
    component builds `polyaxon/polyaxon-quick-start` from a local base image (no registry is
    reachable here), and every op after it runs in that image."""
    import yaml

    base = images.ensure_python_numpy(tmp_path)
    for source in QUICK_START.iterdir():
        if source.is_file():
            (tmp_path / source.name).write_bytes(source.read_bytes())
    dag = yaml.safe_load((QUICK_START / "dag.yaml").read_text())
    image = f"localhost/polyaxon-prefect-test/quick-start:{uuid.uuid4().hex[:12]}"
    build = {
        "name": "build",
        "hubRef": "kaniko",
        "params": {"destination": {"value": {"name": image}}},
        "runPatch": {
            "init": [{"dockerfile": {"image": base, "run": ["python -c 'import numpy'"]}}]
        },
    }
    operations = dag["run"]["operations"]
    for op in operations:  # the image every op of the docs' DAG uses: the one just built
        if op["name"] == "experiment":
            op["dependencies"] = ["build"]
    operations.insert(0, build)
    text = yaml.safe_dump(dag, sort_keys=False).replace("polyaxon/polyaxon-quick-start", image)
    (tmp_path / "typed.yaml").write_text(
        (tmp_path / "typed.yaml").read_text().replace("polyaxon/polyaxon-quick-start", image)
    )
    path = _write(tmp_path / "dag-build.yaml", text)
    # an artifacts root of its own: `best_model` ranks every run under the root, and the
    # session's other tests leave runs with lower losses there
    monkeypatch.setenv(ENV_ARTIFACTS_ROOT, str(tmp_path / "artifacts"))
    try:
        done = cli_on(
            prefect_server,
            *("run", "-f", str(path), "--backend", "docker", "--json", "-P", "max_loss=100"),
        )
        assert done.returncode == 0, done.stdout + done.stderr
        ops = json.loads(done.stdout)["ops"]
        assert ops["build"]["outputs"] == {"destination": image}
        assert ops["experiment"]["status"] == "succeeded"
        assert 0 < ops["experiment"]["outputs"]["loss"] < 100  # so `tune` is skipped
        assert ops["tune"]["status"] == "skipped"
        assert ops["best_model"]["status"] == "succeeded"
        report = find_run_path(ops["best_model"]["uuid"])
        assert report is not None
        assert ops["experiment"]["uuid"] in (report / "logs" / LOG_FILE).read_text()
    finally:
        subprocess.run(["podman", "rmi", "-f", image], capture_output=True, check=False)


def test_a_container_whose_cli_and_reaper_were_both_killed_is_removed_by_the_next_run(
    tmp_path: Path, prefect_server: str
) -> None:
    mark = uuid.uuid4().hex
    process = _start_sleeper(tmp_path, prefect_server, mark)
    label = f"polyaxon-prefect.pid={process.pid}"
    reapers = [
        pid
        for pid in run_processes(mark)
        if b"_reaper.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert reapers, "the CLI has a reaper"
    for pid in reapers:
        os.kill(pid, signal.SIGKILL)
    process.kill()
    process.communicate(timeout=60)
    assert _containers(label), "nothing removed it yet: both were killed"
    missing = _job(tmp_path, "localhost/polyaxon-prefect-test/missing:0", "[/bin/true]")
    cli_on(prefect_server, "run", "-f", str(missing), "--backend", "docker")
    assert wait_until(lambda: not _containers(label), timeout=30, step=0.5), _containers(label)


RENDEZVOUS = """\
import os, socket, time
from polyaxon_prefect import tracking
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
address = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
print("rank", rank, "of", world, "in-image", os.path.exists("/etc/os-release"))
print("host", socket.gethostname(), "master at", socket.gethostbyname(address[0]))
if rank == 0:
    server = socket.create_server(address)
    ranks = sorted(int(server.accept()[0].recv(16)) for _ in range(world - 1))
    tracking.log_outputs(world_size=world, ranks=ranks, master=list(address))
else:
    for _ in range(600):
        try:
            socket.create_connection(address).sendall(str(rank).encode())
            break
        except OSError:
            time.sleep(0.05)
"""


def _networks(label: str) -> list[str]:
    done = subprocess.run(
        ["podman", "network", "ls", "-q", "--filter", f"label={label}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_a_pytorchjob_runs_one_container_per_replica_on_its_own_network_by_hostname(
    tmp_path: Path, prefect_server: str
) -> None:
    """The local env contract, with the replicas' hostnames on the run's network and the
    framework's port (as in a cluster) instead of loopback ports; the network goes with it."""
    container = f"{{image: {images.PYTHON}, command: [python, -c, {json.dumps(RENDEZVOUS)}]}}"
    path = _write(
        tmp_path / "ddp.yaml",
        f"""\
version: 1.1
kind: component
name: rendezvous
outputs:
- {{name: world_size, type: int}}
- {{name: ranks, type: any}}
- {{name: master, type: any}}
run:
  kind: pytorchjob
  master: {{replicas: 1, container: {container}}}
  worker: {{replicas: 2, container: {container}}}
""",
    )
    done = cli_on(prefect_server, "run", "-f", str(path), "--backend", "docker", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    host = f"plx-{result['uuid'][:12]}"
    assert result["outputs"] == {
        "world_size": 3,
        "ranks": [1, 2],
        "master": [f"{host}-master-0", 23456],
    }
    run_dir = Path(result["artifacts_path"])
    worker = (run_dir / "logs" / "worker-1.log").read_text()
    assert "rank 2 of 3 in-image False" in worker
    assert f"host {host}-worker-1 master at " in worker
    assert "master at 127." not in worker  # its own address on the run's network
    label = f"polyaxon-prefect.run={result['uuid']}"
    assert _containers(label) == []
    assert _networks(label) == []


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_ctrl_c_or_kill_9_of_a_distributed_run_leaves_no_container_and_no_network(
    tmp_path: Path, prefect_server: str, how: signal.Signals
) -> None:
    """Ctrl-C: the run removes them; kill -9: the session's reaper, by label."""
    sleeper = f"{{image: {images.BUSYBOX}, command: [/bin/sleep, '300']}}"
    path = _write(
        tmp_path / "sleepers.yaml",
        f"""\
version: 1.1
kind: component
name: sleepers
run:
  kind: pytorchjob
  master: {{replicas: 1, container: {sleeper}}}
  worker: {{replicas: 1, container: {sleeper}}}
""",
    )
    process = _start_sleeper(tmp_path, prefect_server, path=path)
    label = f"polyaxon-prefect.pid={process.pid}"
    assert wait_until(lambda: len(_containers(label)) == 2, timeout=60, step=0.5)
    assert len(_networks(label)) == 1
    process.send_signal(how)
    process.communicate(timeout=60)
    assert wait_until(lambda: not _containers(label), timeout=60, step=0.5), _containers(label)
    assert wait_until(lambda: not _networks(label), timeout=30, step=0.5), _networks(label)


FAKE_MPIRUN = """\
#!/usr/local/bin/python3
# Stands in for Open MPI's mpirun (not in the offline test image): what it would read (the
# hostfile, the rsh arguments, the key pair) and one rank handed to each worker host over the
# run's network, by the worker's hostname.
import os, socket, sys, time
SSH_DIR = os.environ["PLX_TEST_SSH_DIR"]
args = sys.argv[1:]
hostfile = args[args.index("--hostfile") + 1]
hosts = [line.split()[0] for line in open(hostfile).read().splitlines()]
print("hostfile", hosts, "rsh", os.environ["OMPI_MCA_plm_rsh_args"].split()[:2])
print("keys", sorted(os.listdir(SSH_DIR)))
for rank, host in enumerate(hosts, start=1):
    for _ in range(600):
        try:
            socket.create_connection((host, 9999)).sendall(str(rank).encode())
            break
        except OSError:
            time.sleep(0.05)
    else:
        sys.exit(f"worker {host} unreachable")
print("every rank reached")
"""

MPI_WORKER = """\
import os, socket
SSH_DIR = os.environ["PLX_TEST_SSH_DIR"]
server = socket.create_server(("", 9999))
rank = server.accept()[0].recv(16).decode()
print("worker", socket.gethostname(), "got rank", rank, "keys", sorted(os.listdir(SSH_DIR)))
"""


def test_an_mpijob_runs_launcher_and_workers_as_containers_reaching_workers_by_hostname(
    tmp_path: Path, prefect_server: str
) -> None:
    """The launcher's mpirun gets the hostfile of the workers' hostnames, the rsh arguments
    and the run's key pair (as the MPI operator mounts it); each worker is reached by name."""
    mpirun = _write(tmp_path / "mpirun", FAKE_MPIRUN)
    mpirun.chmod(0o755)
    keys = f"env: [{{name: PLX_TEST_SSH_DIR, value: {SSH_DIR}}}]"  # where the keys are mounted
    launcher = f"{{image: {images.PYTHON}, command: [{mpirun}], {keys}}}"
    worker = f"{{image: {images.PYTHON}, command: [python, -c, {json.dumps(MPI_WORKER)}], {keys}}}"
    path = _write(
        tmp_path / "mpi.yaml",
        f"""\
version: 1.1
kind: component
name: mpi
run:
  kind: mpijob
  launcher: {{replicas: 1, container: {launcher}}}
  worker: {{replicas: 2, container: {worker}}}
""",
    )
    done = cli_on(prefect_server, "run", "-f", str(path), "--backend", "docker", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    host = f"plx-{result['uuid'][:12]}"
    logs = Path(result["artifacts_path"]) / "logs"
    launched = (logs / "launcher-0.log").read_text()
    keys = "['authorized_keys', 'id_rsa', 'id_rsa.pub']"
    assert f"hostfile ['{host}-worker-0', '{host}-worker-1'] rsh ['-o', " in launched
    assert f"keys {keys}" in launched and "every rank reached" in launched
    assert f"worker {host}-worker-1 got rank 2 keys {keys}" in (logs / "worker-1.log").read_text()
    label = f"polyaxon-prefect.run={result['uuid']}"
    assert _containers(label) == [] and _networks(label) == []


SERVICE = """\
import http.server, socket, sys
port = int(sys.argv[1])
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"hello {self.path} on {port} in {socket.gethostname()}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("", port), Hello).serve_forever()
"""


def test_a_service_container_answers_at_its_url_then_is_gone_after_ctrl_c(
    tmp_path: Path, prefect_server: str
) -> None:
    """Its declared port inside (as in its pod), published on this machine's loopback at the
    port of the URL it announces; Ctrl-C removes the container."""
    import urllib.request

    root = tmp_path / "artifacts"
    command = f"[python, -c, {json.dumps(SERVICE)}, '{{{{ globals.ports[0] }}}}']"
    path = _write(
        tmp_path / "svc.yaml",
        f"""\
version: 1.1
kind: component
name: web
run:
  kind: service
  ports: [6006]
  container: {{image: {images.PYTHON}, command: {command}}}
""",
    )
    process = _run_in_background(path, prefect_server, {ENV_ARTIFACTS_ROOT: str(root)})
    label = f"polyaxon-prefect.pid={process.pid}"
    try:

        def record() -> dict[str, object]:
            found = next(root.rglob("service.json"), None)
            return json.loads(found.read_text()) if found else {}

        assert wait_until(lambda: record().get("status") == "running", timeout=90, step=0.5)
        url = str(record()["url"])
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read().decode()
        base = record()["base_url"]
        assert body.startswith(f"hello {base}/ on 6006 in ")
        assert not body.endswith(os.uname().nodename)
        assert len(_containers(label)) == 1
    finally:
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=60)[0]
    assert "is running at http://127.0.0.1:" in output, output[-2000:]
    assert wait_until(lambda: not _containers(label), timeout=30, step=0.5), _containers(label)


def test_an_ops_own_build_section_builds_its_image_first_and_the_op_runs_in_it(
    tmp_path: Path, prefect_server: str
) -> None:
    tag = f"localhost/polyaxon-prefect-test/own-build:{uuid.uuid4().hex[:12]}"
    path = _write(
        tmp_path / "own-build.yaml",
        f"""\
version: 1.1
kind: component
name: own-build
build:
  hubRef: kaniko
  params:
    destination: {{value: {{name: "{tag}"}}}}
  runPatch:
    init:
    - dockerfile:
        image: {images.BUSYBOX}
        env: {{GREETING: baked}}
        run: ["echo $GREETING into the image > /baked.txt"]
run:
  kind: job
  container: {{image: "replaced/by-the-build", command: [/bin/cat, /baked.txt]}}
""",
    )
    try:
        done = cli_on(prefect_server, "run", "-f", str(path), "--backend", "docker", "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        result = json.loads(done.stdout)
        assert result["status"] == "succeeded", result
        log = (Path(result["artifacts_path"]) / "logs" / LOG_FILE).read_text()
        assert "baked into the image" in log
    finally:
        subprocess.run(["podman", "rmi", "-f", tag], capture_output=True, check=False)
