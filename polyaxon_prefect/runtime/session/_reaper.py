"""The reaper: a tiny watchdog process that cleans up after a run whose process died.

Run as a script (``python _reaper.py SESSION``, standard library only, so it starts in tens of
milliseconds and imports nothing of ours), in its own session so that the terminal's Ctrl-C
and a ``kill`` of the run's process group do not reach it. Its standard input is a pipe whose
write end only the run's process holds: whatever way that process ends (normal exit,
exception, SIGKILL, OOM killer), the kernel closes the pipe and the reaper reads end-of-file.
It then, in this order:

1. stops the process groups it was told about (jobs, replicas) with SIGTERM, then SIGKILL,
   and removes the containers and networks labelled with the session (``containers CLI``: the
   docker or podman CLI that started them);
2. marks the flow runs it was told about, and their task runs, ``Crashed`` through the Prefect
   API, when they are not final yet (a killed run would otherwise stay "Running" forever: flow
   heartbeats are off for local runs); ``Cancelled`` when their top-level run was being stopped
   (``polyaxon-prefect stop``, then a worker killed the process);
3. stops every process left whose environment carries ``POLYAXON_PREFECT_SESSION=SESSION``
   (Linux: read from ``/proc``), which catches grandchildren that left their group, and the
   server groups it was told about last, since step 2 needs them.

On a normal end the run's process has already stopped its groups and finished its flow runs,
so the reaper finds nothing to do. Protocol: one command per line on standard input,
``group PGID``, ``ungroup PGID``, ``server PGID``, ``api URL``, ``flow-run ID``, ``final ID``
(that flow run is final on the server: on a clean end, no API call is left to make, where the
check of each run cost the run's end seconds on a busy server), ``containers CLI``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

SESSION_ENV = "POLYAXON_PREFECT_SESSION"
_GRACE_SECONDS = 3.0
_CONTAINER_LABEL = "polyaxon-prefect.session"  # polyaxon_prefect.containers.LABEL_SESSION
_NOT_FINAL = ["SCHEDULED", "PENDING", "RUNNING", "PAUSED", "CANCELLING"]


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _stop(
    ids: Iterable[int],
    kill: Callable[[int, int], None],
    alive: Callable[[int], bool],
    still_ours: Callable[[list[int]], list[int]] = list,
) -> None:
    """SIGTERM to each of ``ids`` (process groups or processes), SIGKILL to those still alive
    after the grace period (and, by ``still_ours``, still the ones meant)."""
    ids = list(ids)
    for target in ids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(target, signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_SECONDS
    while time.monotonic() < deadline and any(alive(t) for t in ids):
        time.sleep(0.05)
    for target in still_ours([t for t in ids if alive(t)]):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(target, signal.SIGKILL)


def _stop_groups(pgids: Iterable[int], session: str) -> None:
    """Stop the groups among ``pgids`` that are still the session's: a group id is the pid
    of its first process, reused once that group is gone, so a group is signalled only while
    one of its processes carries this session (where ``/proc`` cannot say, as told)."""
    ours = _session_groups(session, pgids)
    _stop(ours, os.killpg, _alive, lambda left: _session_groups(session, left))


def _session_groups(session: str, pgids: Iterable[int]) -> list[int]:
    """Those of ``pgids`` with a process of ``session`` in them; all of them where ``/proc``
    is missing (nothing to check them by)."""
    pgids = list(pgids)
    if not pgids or not Path("/proc").is_dir():
        return pgids
    members = {_group_of(pid) for pid in _session_pids(session)}
    return [pgid for pgid in pgids if pgid in members]


def _session_pids(session: str) -> list[int]:
    """Processes whose environment carries this session (Linux only; elsewhere none)."""
    marker = f"{SESSION_ENV}={session}".encode()
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _stop_pids(pids: Iterable[int]) -> None:
    _stop(pids, os.kill, _pid_alive)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    # A zombie is dead for our purpose (its parent, not us, must reap it).
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z"):
            return False
    return True


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _remove_containers(cli: str, session: str) -> None:
    """Remove every container ``cli`` started with the session's label (running or not), then
    the networks of its distributed runs."""
    import subprocess

    path = os.environ.get("PATH", "")
    env = {**os.environ, "PATH": f"{path}:/usr/local/sbin:/usr/sbin:/sbin"}  # iptables
    with contextlib.suppress(Exception):
        listed = subprocess.run(
            [cli, "ps", "-aq", "--filter", f"label={_CONTAINER_LABEL}={session}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )
        ids = listed.stdout.split()
        if ids:
            # Podman first sends the stop signal and waits 10 s by default (a process as PID 1
            # ignores SIGTERM): the run's own grace here (`containers.remove_argv`'s rule, kinds
            # told apart as `_container_cli._kind_of` does); Docker's `rm -f` kills at once.
            wait = [] if "docker" in Path(cli).name else ["--time", str(int(_GRACE_SECONDS))]
            rm = [cli, "rm", "-f", *wait, *ids]
            subprocess.run(rm, capture_output=True, timeout=120, check=False, env=env)
        networks = subprocess.run(  # a distributed run's own network, after its containers
            [cli, "network", "ls", "-q", "--filter", f"label={_CONTAINER_LABEL}={session}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        ).stdout.split()
        for network in networks:
            rm = [cli, "network", "rm", network]
            subprocess.run(rm, capture_output=True, timeout=60, check=False, env=env)


def _post(url: str, body: object) -> object:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        payload = response.read()
    return json.loads(payload) if payload else None


def _run_ids(payload: object) -> list[str]:
    """The ids in a ``/filter`` answer; an answer that is not a list of runs (an error body, a
    proxy's page) has none, rather than its keys or characters being taken for runs."""
    if not isinstance(payload, list):
        return []
    return [
        run["id"] for run in payload if isinstance(run, dict) and isinstance(run.get("id"), str)
    ]


def _crash(api: str, kind: str, run_id: str, *, stopping: bool = False) -> None:
    """Mark a run that will never end by itself final: Crashed, or Cancelled when it was
    being stopped (``stopping``: a Cancelling flow run and its runs), as the user asked."""
    if stopping:
        state = {
            "type": "CANCELLED",
            "name": "Cancelled",
            "message": "stopped: the polyaxon-prefect process running this ended",
        }
    else:
        state = {
            "type": "CRASHED",
            "name": "Crashed",
            "message": "the polyaxon-prefect process running this was killed",
        }
    _post(f"{api}/{kind}/{run_id}/set_state", {"state": state, "force": True})


def settle(api: str, settlement: dict[str, object]) -> None:
    """Write how a run that ended while its server was gone ended, as its own end would have
    (its CLI heard it and wrote it to the session's journal: `Session.settle_later`): the task
    runs of its ops that the server still holds unfinished get their ops' states, its record
    is its ``-record`` artifact (``get`` reads it), then its flow run gets its final state.
    Nothing is written over a flow run that is final already."""
    run_id = settlement.get("flow_run")
    if not isinstance(run_id, str):
        return
    not_final = {"type": {"any_": _NOT_FINAL}}
    found = _post(
        f"{api}/flow_runs/filter",
        {"flow_runs": {"id": {"any_": [run_id]}, "state": not_final}, "limit": 1},
    )
    if not _run_ids(found):
        return
    tasks = settlement.get("tasks")
    tasks = tasks if isinstance(tasks, dict) else {}
    running = _post(
        f"{api}/task_runs/filter",
        {"flow_runs": {"id": {"any_": [run_id]}}, "task_runs": {"state": not_final}, "limit": 200},
    )
    for task in running if isinstance(running, list) else []:
        state = tasks.get(task.get("name")) if isinstance(task, dict) else None
        if isinstance(state, dict) and isinstance(task.get("id"), str):
            with contextlib.suppress(Exception):
                _post(f"{api}/task_runs/{task['id']}/set_state", {"state": state, "force": True})
    artifacts = settlement.get("artifacts")
    for artifact in artifacts if isinstance(artifacts, list) else []:
        if isinstance(artifact, dict):
            with contextlib.suppress(Exception):
                _post(f"{api}/artifacts/", {**artifact, "flow_run_id": run_id})
    state = settlement.get("state")
    if isinstance(state, dict):
        _post(f"{api}/flow_runs/{run_id}/set_state", {"state": state, "force": True})


def _being_stopped(api: str, flow_runs: list[str]) -> bool:
    """Whether a top-level run among ``flow_runs`` was being stopped: Cancelling, or Cancelled
    already (a worker's runner marks the run it killed Cancelled before this runs)."""
    stopped = _post(
        f"{api}/flow_runs/filter",
        {
            "flow_runs": {
                "id": {"any_": flow_runs},
                "parent_task_run_id": {"is_null_": True},
                "state": {"type": {"any_": ["CANCELLING", "CANCELLED"]}},
            },
            "limit": 1,
        },
    )
    return bool(_run_ids(stopped))


def mark_crashed(api: str, flow_runs: list[str]) -> None:
    """Crash the flow runs (and their task runs and child flow runs) that are not final; when
    a top-level one was being stopped (`_being_stopped`), they end Cancelled instead."""
    if not flow_runs:
        return
    not_final = {"type": {"any_": _NOT_FINAL}}
    found = _post(
        f"{api}/flow_runs/filter",
        {"flow_runs": {"id": {"any_": flow_runs}, "state": not_final}, "limit": 200},
    )
    children = _post(
        f"{api}/flow_runs/filter",
        {
            "flow_runs": {"parent_flow_run_id": {"any_": flow_runs}, "state": not_final},
            "limit": 200,
        },
    )
    stopping = _being_stopped(api, flow_runs)
    for run_id in [*_run_ids(found), *_run_ids(children)]:
        with contextlib.suppress(Exception):
            _crash(api, "flow_runs", run_id, stopping=stopping)
    tasks = _post(
        f"{api}/task_runs/filter",
        {"flow_runs": {"id": {"any_": flow_runs}}, "task_runs": {"state": not_final}, "limit": 200},
    )
    for run_id in _run_ids(tasks):
        with contextlib.suppress(Exception):
            _crash(api, "task_runs", run_id, stopping=stopping)


def main(argv: list[str]) -> int:
    session = argv[1] if len(argv) > 1 else ""
    groups: set[int] = set()
    servers: set[int] = set()
    flow_runs: list[str] = []
    clis: list[str] = []
    api = ""
    for raw in sys.stdin:
        command, _, value = raw.strip().partition(" ")
        with contextlib.suppress(ValueError):
            if command == "group":
                groups.add(int(value))
            elif command == "ungroup":
                groups.discard(int(value))
            elif command == "server":
                servers.add(int(value))
            elif command == "api":
                api = value.rstrip("/")
            elif command == "flow-run" and value not in flow_runs:
                flow_runs.append(value)
            elif command == "final" and value in flow_runs:
                flow_runs.remove(value)  # final on the server: nothing to mark
            elif command == "containers" and value not in clis:
                clis.append(value)
    # End of file: the run's process is gone (or done).
    _stop_groups(groups, session)
    for cli in clis:
        _remove_containers(cli, session)
    if session:
        # every process of the session but its server first: marking the runs crashed talks
        # to a server that may answer slowly, and nothing of the run may wait on that
        _stop_pids([p for p in _session_pids(session) if _group_of(p) not in servers])
    if api:
        with contextlib.suppress(Exception):
            mark_crashed(api, flow_runs[-200:])
    _stop_groups(servers, session)
    if session:
        _stop_pids(_session_pids(session))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main(sys.argv))
