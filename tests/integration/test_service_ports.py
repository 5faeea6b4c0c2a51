"""A DAG's service whose declared port another program holds, for real: the CLI on a new
Prefect home (its background server on a free port), a listening socket holding the port."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import new_home_env, no_process_left

pytestmark = [pytest.mark.slow, pytest.mark.fault, pytest.mark.process, pytest.mark.server]

BIN = Path(sys.executable).parent
PY = sys.executable
SERVER = "import sys, time; open(sys.argv[1], 'w').write('started'); time.sleep(60)"
CLIENT = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read())"


def test_a_dag_service_whose_port_is_held_fails_located_and_nothing_reaches_the_holder(
    tmp_path: Path, migrated_home: Path
) -> None:
    """Its dependents would reach the declared port: another program holding it fails the op
    (the port, that it is held, how to change it), its dependent does not run, the service
    never starts, and the program holding the port gets no connection."""
    env = new_home_env(migrated_home, tmp_path / "artifacts", "30")
    # The one run is the first command's, run in that CLI before a warm runner could listen:
    # the server starts none (about 3 CPU s, spent for nothing here).
    env["POLYAXON_PREFECT_RUNNER"] = "0"
    started = tmp_path / "started"
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = int(holder.getsockname()[1])
    path = tmp_path / "dag.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: held-port\nrun:\n  kind: dag\n  operations:\n"
        "  - name: web\n    component:\n      run:\n"
        f'        {{kind: service, ports: [{port}], container: {{command: ["{PY}", -c, '
        f'"{SERVER}", "{started}"]}}}}\n'
        "  - name: client\n    dependencies: [web]\n    component:\n      run:\n"
        f'        {{kind: job, container: {{command: ["{PY}", -c, "{CLIENT}", '
        f'"http://127.0.0.1:{port}/ping"]}}}}\n'
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "polyaxon-prefect"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    try:
        done = cli("run", "-f", str(path), "--json")
        assert done.returncode == 1, done.stderr
        result = json.loads(done.stdout)
        assert result["status"] == "failed"
        ops = {name: (op["status"], op["message"]) for name, op in result["ops"].items()}
        said = (
            f"port {port} (`ports[0]`) is held by another program on this machine, and the "
            "op's dependents would reach that program, not this service: stop that program, "
            "or declare a free port in `ports` (or pass the param it comes from with -P)"
        )
        assert ops["web"] == ("failed", said), ops
        assert ops["client"][0] == "upstream_failed", ops
        assert [line for line in done.stderr.splitlines() if said in line], done.stderr
        assert "Traceback" not in done.stderr
        assert not started.exists(), "the service started"
        holder.setblocking(False)
        with pytest.raises(BlockingIOError):  # no connection ever reached the holder
            holder.accept()
        read = cli("get", result["flow_run_id"], "--json")
        assert json.loads(read.stdout)["status"] == "failed", read.stderr
    finally:
        holder.close()
        cli("server", "stop")
    no_process_left(tmp_path / "prefect")
