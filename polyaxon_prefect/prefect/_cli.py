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
import sys
from collections.abc import Iterator
from typing import Any

from polyaxon_prefect._cli_args import add_file_args
from polyaxon_prefect.exceptions import PolyaxonfileError, PolyaxonPrefectError

__all__ = ["add_run_parser", "cmd_run"]


def add_run_parser(subparsers: Any) -> argparse.ArgumentParser:
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
    add_file_args(parser)
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
        _json_line(
            {
                "status": "failed",
                "uuid": None,
                "name": None,
                "outputs": {},
                "metrics": {},
                "artifacts_path": None,
                "message": summary if problems else str(error),
                "flow_run_id": None,
                "problems": [p.to_dict() for p in problems],
            }
        )
    return 1


def _summary(result: Any) -> None:
    print(f"status: {result.status}")
    print(f"op: {result.name} (run {result.uuid})")
    if result.outputs:
        print("outputs:")
        for name, value in result.outputs.items():
            print(f"  {name}: {json.dumps(value, default=str)}")
    if result.status != "succeeded" and result.message:
        print(f"message: {result.message}")
    elif result.cached:
        print(f"note: {result.message}")
    if result.ops:
        print("ops:")
        width = max(len(name) for name in result.ops)
        for name, op in result.ops.items():
            print(f"  {name:<{width}}  {op.get('status')}")
    if getattr(result, "reason", ""):
        print(f"reason: {result.reason}")
    if result.artifacts_path:
        print(f"run directory: {result.artifacts_path}")
    if result.flow_run_id:
        print(f"prefect flow run: {result.flow_run_id}")


@contextlib.contextmanager
def _live_table(enabled: bool) -> Iterator[None]:
    """The live table of op statuses (stderr) around a DAG run, when enabled."""
    if not enabled:
        yield
        return
    from polyaxon_prefect.prefect._live import live_table

    with live_table(sys.stderr):
        yield


def cmd_run(args: argparse.Namespace) -> int:
    """Handle ``polyaxon-prefect run``; returns the exit code."""
    from polyaxon_prefect.loading._load import load_polyaxonfile, parse_cli_params
    from polyaxon_prefect.runtime._connections import load_connections
    from polyaxon_prefect.runtime._job import prepare_job
    from polyaxon_prefect.runtime._kind import op_kind

    try:
        params = parse_cli_params(args.params or [])
        loaded = load_polyaxonfile(args.files[0], args.files[1:], params, hub_dirs=args.hub_dirs)
        connections = load_connections(args.connections)
        kind = op_kind(loaded.operation)
        job = None
        if kind == "job":
            job = prepare_job(loaded, connections=connections, skip_builds=args.skip_builds)
    except (PolyaxonfileError, PolyaxonPrefectError) as error:
        return _invalid(error, as_json=args.json)

    name = getattr(loaded.component, "name", None)
    if job is not None:
        print(
            f"running `{job.op_name}` (run {job.context.uuid}) in {job.context.run_artifacts_path}",
            file=sys.stderr,
        )
        from polyaxon_prefect.prefect._api import run_job

        result = run_job(job, flow_name=name)
    else:
        from polyaxon_prefect.prefect._dispatch import OpRequest, SweepOptions, run_request

        request = OpRequest(
            loaded=loaded,
            connections=connections,
            skip_builds=args.skip_builds,
            sweep=SweepOptions(
                resume=args.resume, storage=args.storage, deployment=args.deployment
            ),
        )
        print(f"running {kind} `{request.op_name}`", file=sys.stderr)
        live = bool(getattr(args, "live", False)) or sys.stderr.isatty()
        with _live_table(live):
            result = run_request(request, flow_name=name)
    if args.json:
        _json_line(result.to_dict())
    else:
        sys.stderr.flush()
        _summary(result)
    return 0 if result.succeeded else 1


def main(argv: list[str] | None = None) -> int:
    """``python -m polyaxon_prefect.prefect._cli run ...``: the ``run`` command on its own."""
    parser = argparse.ArgumentParser(prog="polyaxon-prefect")
    add_run_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return cmd_run(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
