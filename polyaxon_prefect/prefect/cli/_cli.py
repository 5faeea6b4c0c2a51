"""``polyaxon-prefect run``: run a Polyaxonfile (job, DAG, matrix) as a Prefect flow run.

Progress (Prefect's run logs, the job's own lines) goes to stderr; the summary goes to stdout,
or, with ``--json``, exactly one JSON object and nothing else, so scripts can pipe it. A DAG
also shows a live table of its op statuses on stderr (when stderr is a terminal, or with
``--live``). Exit code 0 only when the run succeeded. Prefect is imported only once the file
is known to be valid.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

from polyaxon_prefect._cli_args import Subparsers, add_file_args, deployment_ref
from polyaxon_prefect.exceptions import PolyaxonfileError, PolyaxonPrefectError
from polyaxon_prefect.prefect.cli._run_flags import (
    add_polyaxon_flags,
    check_command_line,
    follow,
    load_run_file,
)
from polyaxon_prefect.specs import BACKENDS, Status

if TYPE_CHECKING:
    from types import FrameType

    from polyaxon_prefect.prefect._request import OpRequest
    from polyaxon_prefect.prefect.server._connect import Connection as ConnectionT
    from polyaxon_prefect.prefect.server._server_watch import ServerGone
    from polyaxon_prefect.runtime._result import RunResult

__all__ = ["add_run_parser", "cmd_run", "run_cli_request"]

T = TypeVar("T")


def add_run_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Add the ``run`` sub-command to ``subparsers`` (from ``add_subparsers``)."""
    parser = subparsers.add_parser(
        "run",
        help="run an operation (job, dag or matrix) as a Prefect flow run",
        description=(
            "Run an operation as a Prefect flow run (an ephemeral Prefect server unless "
            "PREFECT_API_URL is set): a job as a local process, a dag as one flow run with a "
            "task run per op, a matrix as a sweep of child flow runs. Prints the outputs."
        ),
    )
    add_file_args(parser, file_required=False)
    add_polyaxon_flags(parser)
    parser.add_argument(
        "--connections",
        metavar="FILE",
        default=None,
        help="the connections file (default: $POLYAXON_PREFECT_CONNECTIONS)",
    )
    parser.add_argument(
        "--skip-builds",
        action="store_true",
        help="report build operations as skipped instead of failing (no local image builder)",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="where distributed replicas run: local processes (default); `kubeflow` (Training "
        "Operator resources) or `native` (Indexed Jobs + a headless Service) submit them to "
        "the Kubernetes cluster of KUBECONFIG, the in-cluster service account, or the "
        "POLYAXON_PREFECT_K8S_CREDENTIALS block; `docker`: every op runs as a container of its "
        "image through docker or podman (POLYAXON_PREFECT_CONTAINER_CLI)",
    )
    parser.add_argument(
        "--no-cache",
        dest="use_cache",
        action="store_false",
        help="serve no op of this run from the op cache (on by default inside a dag): every op "
        "runs its process. Successes are still recorded, so a later run reuses these fresh "
        "results, not the older ones this run ignored",
    )
    sweep = parser.add_argument_group("matrix sweeps")
    sweep.add_argument(
        "--resume",
        action="store_true",
        help="continue the latest sweep of this operation (after a crash or a kill) instead of "
        "starting a new one; completed trials are not run again",
    )
    sweep.add_argument(
        "--storage",
        metavar="URL",
        default=None,
        help="where the sweep's Optuna study lives: a file path or an Optuna storage URL, e.g. "
        "postgresql+psycopg2://user:pw@host/db for several workers (default: a local file "
        "under the artifacts root)",
    )
    sweep.add_argument(
        "--deployment",
        metavar="FLOW/DEPLOYMENT",
        default=None,
        type=deployment_ref,
        help="run each trial as a flow run of this deployment (on its work pool's workers) "
        "instead of in this process",
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="show a live table of op statuses on stderr (default: only when stderr is a terminal)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (status, uuid, outputs, ...) on stdout and nothing else",
    )
    return parser


def _json_line(payload: dict[str, Any]) -> None:
    print(json.dumps(payload, default=str, sort_keys=False))


def _invalid(error: PolyaxonPrefectError, *, as_json: bool) -> int:
    problems = list(getattr(error, "problems", []) or [])
    if problems:
        for problem in problems:
            print(problem.format(), file=sys.stderr)
        count = len(problems)
        summary = f"{count} problem{'s' if count != 1 else ''} found."
        print(summary, file=sys.stderr)
    else:
        summary = f"error: {error}"
        print(summary, file=sys.stderr)
    if as_json:
        message = summary if problems else str(error)
        _json_line(_failure_json(message) | {"problems": [p.to_dict() for p in problems]})
    return 1


def _labels(request: OpRequest) -> dict[str, Any]:
    from polyaxon_prefect.prefect.runs._run_record import request_labels

    return request_labels(request)


def _summary(run_result: RunResult, labels: dict[str, Any] | None = None) -> None:
    """The end lines for people: status, outputs, and for a DAG each op's status and outputs,
    for a sweep each trial's params and objective value (without a metric, its outputs and
    last metrics) and the best trial (floats to 6 significant digits: a loss needs no 17)."""
    from polyaxon_prefect.runtime.logs._masking import mask_text, mask_value

    result = _Masked(
        mask_value(run_result.to_dict()), run_result.cached, mask_text(run_result.message or "")
    )
    print(f"status: {result.status}")
    print(f"op: {result.name} (run {result.uuid})")
    if labels and labels.get("tags"):
        print(f"tags: {', '.join(labels['tags'])}")
    if result.outputs:
        print("outputs:")
        for name, value in result.outputs.items():
            print(f"  {name}: {_shown(value)}")
    if result.status != Status.SUCCEEDED and result.message:
        print(f"message: {result.message}")
    elif result.cached:
        print(f"note: {result.message}")
    if result.ops:
        print("ops:")
        _print_rows([(name, _op_status(op), op.get("outputs")) for name, op in result.ops.items()])
    if result.trials:
        print("trials:")
        # a sweep without a metric has no value to show: each trial's outputs say what it gave
        scored = any(trial.get("value") is not None for trial in result.trials)
        _print_rows([_trial_row(trial, scored) for trial in result.trials])
    if result.best:
        best = result.best
        value = f"  value={_shown(best.get('value'))}" if best.get("value") is not None else ""
        print(f"best: trial {best.get('index')}{value}  params {_pairs(best.get('params'))}")
    if getattr(result, "reason", ""):
        print(f"reason: {result.reason}")
    if result.artifacts_path:
        print(f"run directory: {result.artifacts_path}")
    if result.flow_run_id:
        print(f"prefect flow run: {result.flow_run_id}")


def _op_status(op: dict[str, Any]) -> str:
    """An op's status, saying when it was a cache hit and whose outputs it reused."""
    status = str(op.get("status"))
    if str(op.get("message") or "").startswith("cache hit"):
        status += f" (cached from run {op.get('uuid')})"
    elif op.get("reused"):
        status += f" (reused from run {op.get('uuid')})"
    return status


def _trial_row(trial: dict[str, Any], scored: bool) -> tuple[str, str, str]:
    """``value=V  params``; without a metric, ``params  -> outputs and last metrics``."""
    from polyaxon_prefect.search import trial_results

    value = trial.get("value")
    shown = f"value={_shown(value)}  " if value is not None else ""
    details = shown + _pairs(trial.get("params"))
    if not scored:
        results = trial_results(trial.get("outputs"), trial.get("metrics"), None)
        details += f"  -> {_pairs(results)}" if results else ""
    return f"trial {trial.get('index')}", str(trial.get("status")), details


def _print_rows(rows: list[tuple[str, str, Any]]) -> None:
    """``  name  status  details`` aligned; details are ``k=v`` pairs or a ready string."""
    name_width = max(len(name) for name, _, _ in rows)
    status_width = max(len(status) for _, status, _ in rows)
    for name, status, details in rows:
        text = details if isinstance(details, str) else _pairs(details)
        print(f"  {name:<{name_width}}  {status:<{status_width}}  {text}".rstrip())


def _pairs(values: object) -> str:
    """``a=1 b=0.123457`` (nothing for no values)."""
    if not isinstance(values, dict):
        return ""
    return " ".join(f"{key}={_shown(value)}" for key, value in values.items())


def _shown(value: object) -> str:
    """A value for people: a float to 6 significant digits, a string as it is, the rest as
    JSON (with its floats shortened too)."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_shown(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_shown(item)}" for key, item in value.items()) + "}"
    return json.dumps(value, default=str)


class _Masked:
    """A result as shown to people (`RunResult.to_dict`, masked), read like a `RunResult`."""

    def __init__(self, data: dict[str, Any], cached: bool, message: str) -> None:
        self.status = data["status"]
        self.name = data["name"]
        self.uuid = data["uuid"]
        self.outputs: dict[str, Any] = data["outputs"]
        self.artifacts_path = data["artifacts_path"]
        self.flow_run_id = data["flow_run_id"]
        self.cached = cached
        self.message = message
        self.ops = data.get("ops")
        self.trials = data.get("trials")
        self.best = data.get("best")
        self.reason = data.get("reason", "")


@contextlib.contextmanager
def _live_table(enabled: bool, *, block: bool = False) -> Iterator[None]:
    """How far the run is, on stderr: with ``block`` (a terminal, no ``--json``) one live block
    redrawn in place (DAG op tables, sweep and job progress bars); else, when ``enabled``, the
    plain rows of op statuses around a DAG run."""
    if block:
        from polyaxon_prefect.prefect.watch._live import live_block

        with live_block(sys.stderr):
            yield
        return
    if not enabled:
        yield
        return
    from polyaxon_prefect.prefect.watch._live import live_table

    with live_table(sys.stderr):
        yield


def _failure_json(message: str) -> dict[str, Any]:
    return {
        "status": Status.FAILED,
        "uuid": None,
        "name": None,
        "outputs": {},
        "metrics": {},
        "artifacts_path": None,
        "message": message,
        "flow_run_id": None,
    }


def _use_local_server() -> ConnectionT:
    """The server this run uses (`polyaxon_prefect.prefect.server._connect`: the user's, else the
    local background server, started if need be, else a temporary one), then what dead
    sessions left on that database settled (`recover_stale_sessions`)."""
    from polyaxon_prefect.prefect.server._connect import connect
    from polyaxon_prefect.runtime.session._session import current_session, home_database_target

    connection = connect(lambda line: print(line, file=sys.stderr, flush=True))
    target = connection.api_url if connection.user_chosen else home_database_target()
    current_session().set_target(target)
    return connection


_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
"""What `_Interrupts` handles (no SIGHUP on Windows); `signal` is imported when a run starts."""


def _exit_code(signum: int) -> int:
    """The shell's convention for a process ended by a signal: 128 + its number (Ctrl-C: 130,
    SIGTERM: 143, SIGHUP: 129)."""
    return 128 + signum


_HARD_STOP_SECONDS = 20.0


class _Interrupts:
    """Ctrl-C, SIGTERM and SIGHUP while a run goes on in a worker thread.

    The first signal asks the run to stop (`request_stop`): processes get SIGTERM, the DAG or
    sweep stops launching, every flow run ends ``stopped``, and the CLI exits ``128 + signal``.
    A second signal, or a run still not stopped after 20 s, ends the process at once; the
    session's reaper then stops what is left and marks the flow runs crashed.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self.at = 0.0
        self.previous: dict[int, Any] = {}
        self.watch: Any = None
        """A `ServerWatch` on the run's server, once it is known."""

    def __enter__(self) -> _Interrupts:
        import signal

        for name in _SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None:
                continue
            with contextlib.suppress(ValueError, OSError):  # not the main thread
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        for signum, handler in self.previous.items():
            with contextlib.suppress(ValueError, OSError):
                signal.signal(signum, handler)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        import signal

        from polyaxon_prefect.runtime.session._session import request_stop

        name = signal.Signals(signum).name
        if self.received is not None:
            print(f"interrupted again ({name}): stopping now", file=sys.stderr, flush=True)
            os._exit(_exit_code(signum))
        self.received, self.at = signum, time.monotonic()
        request_stop(f"interrupted ({name})")
        print(f"interrupted ({name}): stopping the run", file=sys.stderr, flush=True)

    def wait(self, thread: threading.Thread) -> None:
        while thread.is_alive():
            thread.join(0.1)
            if self.watch is not None and self.received is None:
                self.watch.check()  # raises ServerGone
            if self.received is not None and time.monotonic() - self.at > _HARD_STOP_SECONDS:
                print("the run did not stop in time: stopping now", file=sys.stderr, flush=True)
                os._exit(_exit_code(self.received))

    @property
    def exit_code(self) -> int | None:
        return None if self.received is None else _exit_code(self.received)


def _in_thread(interrupts: _Interrupts, target: Callable[[], T]) -> T:
    """Run ``target`` in a worker thread (Prefect's flow engine then leaves the signal
    handlers to us) and wait for it, handling signals in this, the main thread."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = target()
        except BaseException as exc:  # handed to the main thread
            box["error"] = exc

    thread = threading.Thread(target=work, name="polyaxon-prefect-run", daemon=True)
    thread.start()
    interrupts.wait(thread)
    if "error" in box:
        raise box["error"]
    return cast(T, box.get("result"))


def cmd_run(args: argparse.Namespace) -> int:
    """Handle ``polyaxon-prefect run``; returns the exit code."""
    from polyaxon_prefect.prefect._dispatch import prepare_request
    from polyaxon_prefect.prefect._request import OpRequest, SweepOptions
    from polyaxon_prefect.runtime.render._connections import load_connections

    refused = check_command_line(args)
    if refused is not None:
        return refused
    try:
        loaded = load_run_file(args)
        for warning in loaded.warnings:  # the file's own warnings, once, as `check` shows them
            print(warning.format(), file=sys.stderr)
        request = OpRequest(
            loaded=loaded,
            connections=load_connections(args.connections),
            skip_builds=args.skip_builds,
            backend=args.backend,
            use_cache=getattr(args, "use_cache", True),
            sweep=SweepOptions(
                resume=args.resume, storage=args.storage, deployment=args.deployment
            ),
        )
        request = prepare_request(request)  # a job's problems show before anything starts
    except (PolyaxonfileError, PolyaxonPrefectError) as error:
        return _invalid(error, as_json=args.json)
    return run_cli_request(args, request)


def run_cli_request(args: argparse.Namespace, request: OpRequest) -> int:
    """Run the prepared ``request`` as ``run`` does (its server, signals, live table, end lines
    or ``--json``: ``args.json``, ``args.live``); returns the exit code. ``restart`` and
    ``resume`` run theirs through it too."""
    from polyaxon_prefect.prefect.server._server_watch import ServerGone, ServerWatch
    from polyaxon_prefect.runtime.logs._masking import mask_text
    from polyaxon_prefect.runtime.session._session import current_session

    session = current_session()
    server = None
    result = None
    outcomes: list[RunResult] = []
    with _Interrupts() as interrupts:
        try:
            server = _in_thread(interrupts, _use_local_server)
            interrupts.watch = ServerWatch(server)
            if interrupts.exit_code is None:
                result = _in_thread(interrupts, lambda: _run_request(args, request, outcomes))
        except ServerGone as gone:
            _server_gone(args, gone, outcomes, request)
        except PolyaxonPrefectError as error:
            print(f"error: {error}", file=sys.stderr)
            if args.json:
                _json_line(_failure_json(str(error)))
            return 1
        except Exception as error:  # a bug of ours or of a library: one line, still the JSON
            if os.environ.get("POLYAXON_PREFECT_DEBUG"):
                raise
            from polyaxon_prefect.prefect.server._server import server_error_cause

            # a local server whose disk is full answers a bare 500: the cause instead
            cause = server_error_cause(error, os.environ.get("PREFECT_API_URL"))
            text = cause or mask_text(f"{type(error).__name__}: {error}")
            line = cause or (
                f"the run could not complete: {text} "
                "(set POLYAXON_PREFECT_DEBUG=1 to see the traceback)"
            )
            print(f"error: {line}", file=sys.stderr)
            if args.json:
                _json_line(_failure_json(text))
            return 1
        finally:
            if server is not None:
                server.close()
            session.close()
    if result is None:  # interrupted before the run started
        if args.json:
            _json_line(
                _failure_json("interrupted before the run started") | {"status": Status.STOPPED}
            )
        return interrupts.exit_code or 130
    if args.json:
        from polyaxon_prefect.prefect.runs._run_record import run_record

        _json_line(run_record(result, request))  # what `get --json` reads back
    else:
        sys.stderr.flush()
        _summary(result, _labels(request))
    if interrupts.exit_code is not None:
        return interrupts.exit_code
    return 0 if result.succeeded else 1


def _run_request(
    args: argparse.Namespace, request: OpRequest, outcomes: list[RunResult]
) -> RunResult:
    """The run itself (in the worker thread), through the dispatcher; its op's result goes to
    ``outcomes`` as soon as it is known."""
    from polyaxon_prefect.prefect._dispatch import describe_request, run_request

    print(describe_request(request), file=sys.stderr)
    watch = bool(getattr(args, "watch", False))
    live = bool(getattr(args, "live", False)) or sys.stderr.isatty() or watch
    # a terminal gets the block redrawn in place; a pipe and `--json` keep plain lines
    block = sys.stderr.isatty() and not getattr(args, "json", False)
    with (
        _live_table(live and request.prepared is None, block=block),
        follow(args, prefixed=request.prepared is None),
    ):
        return run_request(request, flow_name=request.component.name, on_outcome=outcomes.append)


def _server_gone(
    args: argparse.Namespace, gone: ServerGone, outcomes: list[RunResult], request: OpRequest
) -> None:
    """The run's server went away: say so, let what runs end (a DAG starts no further op:
    `_dag`), print the run's result, and exit with its status at once (Prefect's client would
    retry for minutes). The session's journal stays, with the result when there is one: the
    next command on a server writes how the run ended (`_settle`), else marks it crashed."""
    from polyaxon_prefect.prefect._dag import dags_deciding
    from polyaxon_prefect.prefect.server._server_watch import wait_for_job
    from polyaxon_prefect.runtime.session._session import current_session

    print(
        f"error: the Prefect server at {gone.url} stopped answering during the run; what runs "
        "goes on to its end (its run directory keeps what it writes), nothing more starts, and "
        "the next command records how the run ended",
        file=sys.stderr,
        flush=True,
    )
    session = current_session()
    settle = 3.0
    result = wait_for_job(
        outcomes, lambda: bool(session.live_groups) or dags_deciding(settle), settle=settle
    )
    if result is None:
        message = f"the Prefect server at {gone.url} went away before the run reported"
        if args.json:
            _json_line(_failure_json(message))
        else:
            print(f"status: failed\nmessage: {message}")
        code = 1
    else:
        from polyaxon_prefect.prefect.runs._run_record import run_record
        from polyaxon_prefect.prefect.runs._settle import settlement

        flow_run = session.flow_runs[0] if session.flow_runs else None  # the top-level one
        result = result.with_(flow_run_id=flow_run)
        record = run_record(result, request)
        if flow_run is not None:
            session.settle_later(settlement(record))
        if args.json:
            _json_line(record)
        else:
            _summary(result, _labels(request))
        code = 0 if result.succeeded else 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """``python -m polyaxon_prefect.prefect.cli._cli run ...``: the ``run`` command on its own."""
    parser = argparse.ArgumentParser(prog="polyaxon-prefect")
    add_run_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return cmd_run(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
