"""``polyaxon-prefect``: check, compile, upgrade and run Polyaxonfiles.

Shaped like Polyaxon's CLI (``-f`` repeated for presets, ``-P name=value``) so muscle memory and
CI scripts carry over. Exit codes: 0 success, 1 invalid input or failed run, 2 usage error.
Only ``run`` imports Prefect, and only when it is called: ``check`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from polyaxon_prefect import __version__
from polyaxon_prefect._cli_args import add_file_args, k8s_namespace, port, text_value
from polyaxon_prefect.exceptions import PolyaxonfileError, PolyaxonPrefectError, Problem

if TYPE_CHECKING:
    from polyaxon_prefect.specs import LoadedPolyaxonfile, Operation

__all__ = ["main", "run_command"]


class UsageError(Exception):
    """A bad command line: argparse's message, and the (sub-)command it is about."""

    def __init__(self, message: str, prog: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is raised to `main`, which says it in one line (usage text is
    what ``--help`` is for), on stdout as JSON too under ``--json``; sub-parsers are of this
    class as well."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.prog)


def _parser() -> argparse.ArgumentParser:
    from polyaxon_prefect.prefect import commands as verbs

    parser = _Parser(
        prog="polyaxon-prefect",
        description="Validate, compile and run Polyaxonfiles on Prefect.",
    )
    parser.add_argument("--version", action="version", version=f"polyaxon-prefect {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="validate a Polyaxonfile and report every problem")
    add_file_args(check)
    check.add_argument("--json", action="store_true", help="print problems as a JSON list")
    check.add_argument(
        "--backend",
        choices=("kubeflow", "native"),
        default=None,
        help="also check what that Kubernetes backend needs (every container has an image...)",
    )

    compile_ = sub.add_parser("compile", help="print the fully resolved operation")
    add_file_args(compile_)
    compile_.add_argument("--format", choices=("yaml", "json"), default="yaml")
    compile_.add_argument(
        "--no-plan",
        dest="plan",
        action="store_false",
        help="leave out `x-plan`, the runs each matrix will launch",
    )
    compile_.add_argument(
        "--target",
        choices=("polyaxonfile", "kubernetes"),
        default="polyaxonfile",
        help="`kubernetes`: print the manifests of a job, a distributed run or every op of a "
        "dag, for `kubectl apply -f -`",
    )
    compile_.add_argument(
        "--backend",
        choices=("kubeflow", "native"),
        default=None,
        help="with --target kubernetes: Kubeflow Training Operator resources, or Indexed Jobs "
        "and a headless Service (default: native for legacy files, else kubeflow)",
    )
    compile_.add_argument(
        "--namespace", default=None, type=k8s_namespace, help="with --target kubernetes"
    )
    compile_.add_argument(
        "--connections",
        default=None,
        metavar="FILE",
        help="with --target kubernetes: the agent's connections file (what to mount)",
    )

    upgrade = sub.add_parser("upgrade", help="print a legacy (v0.x) file as v1.1 YAML")
    upgrade.add_argument("-f", "--file", dest="file", required=True, metavar="FILE")

    verbs.add_run_parser(sub)
    verbs.add_deploy_parser(sub)
    verbs.add_runs_parsers(sub)
    verbs.add_run_files_parsers(sub)
    verbs.add_stop_parser(sub)
    verbs.add_restart_parsers(sub)
    verbs.add_logs_parsers(sub)
    verbs.add_metrics_parsers(sub)
    _add_dashboard_parser(sub)
    return parser


def _add_dashboard_parser(sub: Any) -> None:
    dashboard = sub.add_parser(
        "dashboard", help="open optuna-dashboard on the sweeps' storage (optional extra)"
    )
    dashboard.add_argument(
        "--storage",
        default=None,
        help="an Optuna storage to show whole (default: the newest sweep's own journal file "
        "under the artifacts root; optuna-dashboard shows one storage at a time)",
    )
    dashboard.add_argument(
        "--op",
        default=None,
        help="show the newest sweep of this op (default: the newest sweep of any op)",
    )
    dashboard.add_argument("--host", default="127.0.0.1", type=text_value)
    dashboard.add_argument("--port", type=port, default=8080)
    dashboard.add_argument(
        "--no-browser", dest="browser", action="store_false", help="only print the address"
    )


def _cmd_dashboard(args: argparse.Namespace) -> int:
    from polyaxon_prefect._dashboard import serve

    return serve(
        args.storage, op=args.op, host=args.host, port=args.port, open_browser=args.browser
    )


def _load(args: argparse.Namespace) -> LoadedPolyaxonfile:
    from polyaxon_prefect.loading import load_polyaxonfile, parse_cli_params

    params = parse_cli_params(getattr(args, "params", []) or [])
    return load_polyaxonfile(args.files[0], args.files[1:], params, hub_dirs=args.hub_dirs)


def _as_json(problems: Sequence[Problem]) -> str:
    """Errors and warnings as one JSON list; every entry says its ``severity``."""
    return json.dumps(
        [{**p.to_dict(), "severity": p.severity} for p in problems], indent=2, default=str
    )


def _report(error: PolyaxonfileError, *, as_json: bool) -> None:
    if as_json:
        print(_as_json([*error.problems, *error.warnings]))
        return
    for problem in [*error.problems, *error.warnings]:
        print(problem.format(), file=sys.stderr)
    count = len(error.problems)
    print(f"{count} problem{'s' if count != 1 else ''} found.", file=sys.stderr)


@contextlib.contextmanager
def _without_pydantic_plugins() -> Iterator[None]:
    """pydantic looks for plugins (observers such as logfire) when it builds its first model, by
    reading the entry points of every installed distribution: about 30 ms in an environment
    with Prefect's 170 packages, a tenth of ``check``. ``check`` only validates a file and
    reports to no observer, so it skips that scan (unless ``PYDANTIC_DISABLE_PLUGINS`` is set:
    then the user's choice holds)."""
    if _NO_PLUGINS in os.environ:
        yield
        return
    os.environ[_NO_PLUGINS] = "__all__"
    try:
        yield
    finally:
        os.environ.pop(_NO_PLUGINS, None)


_NO_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while ``check`` builds the spec validators: building them
    makes tens of thousands of long-lived dicts and no garbage, and the collector's passes over
    them were about a tenth of ``check``'s time. The previous state is restored after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        with _without_pydantic_plugins(), _gc_paused():
            loaded = _load(args)
        if args.backend is not None:  # what a run there checks, with the same catalog
            from polyaxon_prefect.runtime import (
                CONNECTIONS_ENV,
                cluster_manifests,
                read_connections_file,
            )

            catalog, store = read_connections_file(os.environ.get(CONNECTIONS_ENV) or None)
            cluster_manifests(
                loaded, backend=args.backend, connections=catalog, artifacts_store=store
            )
    except PolyaxonfileError as error:
        _report(error, as_json=args.json)
        return 1
    if args.json:
        print(_as_json(loaded.warnings) if loaded.warnings else json.dumps([]))
    else:
        for warning in loaded.warnings:
            print(warning.format(), file=sys.stderr)
        component = loaded.component
        kind = component.run.kind if component is not None else "?"
        name = loaded.operation.name or (component.name if component is not None else None) or "-"
        print(f"{args.files[0]}: valid ({_what_runs(loaded.operation, kind, name)})")
        for note in loaded.legacy_notes:
            print(f"note: {note}")
    return 0


def _what_runs(operation: Operation, kind: str, name: str) -> str:
    """``job `x```, or for an operation with a matrix ``a random sweep of 20 trials of job `x```
    (``sampled until stopped`` when the matrix sets no count)."""
    matrix = operation.matrix
    if matrix is None:
        return f"{kind} `{name}`"
    from polyaxon_prefect.search._matrix_plan import matrix_plan

    try:
        total = matrix_plan(matrix).get("total")
    except (ValueError, TypeError):  # a templated count: known at run time only
        total = None
    trials = (
        f"{total} trial{'s' if total != 1 else ''}" if total else "trials sampled until stopped"
    )
    return f"a {matrix.kind} sweep of {trials} of {kind} `{name}`"


def _cmd_compile(args: argparse.Namespace) -> int:
    from polyaxon_prefect.compiler import compile_document, compile_plan

    if args.target == "kubernetes":
        return _compile_kubernetes(args)
    try:
        loaded = _load(args)
        document = compile_document(loaded)
    except PolyaxonfileError as error:
        _report(error, as_json=False)
        return 1
    for warning in loaded.warnings:
        print(warning.format(), file=sys.stderr)
    plan = compile_plan(loaded) if args.plan else None
    if plan:
        document["x-plan"] = plan
    if args.format == "json":
        print(json.dumps(document, indent=2, default=str))
    else:
        import yaml

        print(yaml.safe_dump(document, sort_keys=False, default_flow_style=False), end="")
    return 0


def _compile_kubernetes(args: argparse.Namespace) -> int:
    """``compile --target kubernetes``: the manifests as multi-document YAML."""
    import yaml

    from polyaxon_prefect.runtime import cluster_manifests, read_connections_file

    try:
        loaded = _load(args)
    except PolyaxonfileError as error:
        _report(error, as_json=False)
        return 1
    for warning in loaded.warnings:
        print(warning.format(), file=sys.stderr)
    connections, store = read_connections_file(args.connections)
    try:
        manifests = cluster_manifests(
            loaded,
            backend=args.backend,
            namespace=args.namespace,
            connections=connections,
            artifacts_store=store,
        )
    except PolyaxonfileError as error:
        _report(error, as_json=False)
        return 1
    text = yaml.safe_dump_all(manifests, sort_keys=False, default_flow_style=False)
    if "{{" in text or "{%" in text:
        print(
            "warning: some fields still hold `{{ templates }}` that only a submission knows "
            "(globals, connections, an upstream op's outputs): they are rendered when the run "
            "is submitted, not by `compile`",
            file=sys.stderr,
        )
    print(text, end="")
    return 0


def _cmd_upgrade(args: argparse.Namespace) -> int:
    from pathlib import Path

    from polyaxon_prefect._source import SourceError, read_source
    from polyaxon_prefect.legacy import upgrade_text

    path = Path(args.file)
    try:
        text = read_source(path)
    except SourceError as exc:
        hint = f"; hint: {exc.hint}" if exc.hint else ""
        print(f"{path}: {exc.message}{hint}", file=sys.stderr)
        return 1
    try:
        print(upgrade_text(text, file=str(path)), end="")
    except PolyaxonfileError as error:
        _report(error, as_json=False)
        return 1
    return 0


_NO_LASTING_SERVER = (
    "`{command}` needs a Prefect server that outlives it, and would get a temporary one "
    "(stopped, with what it made, when the command ends); start one that stays with "
    "`polyaxon-prefect server start`, or set PREFECT_API_URL"
)


def _on_server(command: Any, *, lasting: bool = False) -> Any:
    """``command`` on the server every command shares (`prefect._connect`: the user's, else
    the local background server, started if need be); a temporary one is stopped after it.

    ``lasting``: what the command makes must outlive it (a deployment), so it refuses a
    temporary server: where one would be started (idle timeout 0 and no server running),
    before starting it; where the shared server could not start, before using it."""

    def on_server(args: argparse.Namespace) -> int:
        from polyaxon_prefect.prefect.server._connect import connect

        refusal = PolyaxonPrefectError(_NO_LASTING_SERVER.format(command=args.command))
        if lasting and _would_be_temporary():
            raise refusal
        notify = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
        connection = connect(notify, purpose=f"`{args.command}`")
        try:
            if lasting and connection.temporary is not None:
                raise refusal
            return int(command(args))
        finally:
            connection.close()

    return on_server


def _would_be_temporary() -> bool:
    """Whether `connect` would start a temporary server (its rule 3 with an idle timeout of 0),
    known without starting one."""
    from polyaxon_prefect.prefect.server._background_server import running_server
    from polyaxon_prefect.prefect.server._connect import configured_api_url, idle_timeout

    return configured_api_url() is None and idle_timeout() == 0 and running_server() is None


def _commands() -> dict[str, Any]:
    """Each command's function (the flow layer's are imported here, not with this module:
    the thin client answers `ls` and `get` before they load)."""
    from polyaxon_prefect.prefect.commands import (
        cmd_artifacts,
        cmd_deploy,
        cmd_get,
        cmd_invalidate,
        cmd_logs,
        cmd_ls,
        cmd_metrics,
        cmd_restart,
        cmd_resume,
        cmd_run,
        cmd_server,
        cmd_statuses,
        cmd_stop,
        cmd_tensorboard,
    )

    return {
        "check": _cmd_check,
        "compile": _cmd_compile,
        "upgrade": _cmd_upgrade,
        "run": cmd_run,
        "dashboard": _cmd_dashboard,
        "deploy": _on_server(cmd_deploy, lasting=True),
        "server": cmd_server,
        "ls": _on_server(cmd_ls),
        "get": _on_server(cmd_get),
        "invalidate": _on_server(cmd_invalidate),
        "artifacts": _on_server(cmd_artifacts),
        "stop": _on_server(cmd_stop),
        "restart": cmd_restart,
        "resume": cmd_resume,
        "logs": _on_server(cmd_logs),
        "statuses": _on_server(cmd_statuses),
        "metrics": _on_server(cmd_metrics),
        "tensorboard": cmd_tensorboard,  # looks its runs up on the server, then lets it go
    }


_SORT_FLAGS = ("-s", "--sort")


def _descending_sorts(argv: list[str]) -> list[str]:
    """``ls --sort -metrics.loss`` as Polyaxon's users type it: argparse reads a value that
    starts with ``-`` as an unknown option ("expected one argument"), so such a value is joined
    to its flag (``--sort=-metrics.loss``) before parsing. Only ``ls`` has the flag."""
    if not argv or argv[0] != "ls":
        return argv
    joined: list[str] = []
    pending = False
    for word in argv:
        if pending and word.startswith("-") and word[1:2].isalpha():
            joined[-1] = f"{joined[-1]}={word}"
        else:
            joined.append(word)
        pending = word in _SORT_FLAGS
    return joined


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line, or exit 2 with one line on stderr that names the argument and what
    it takes (and, under ``--json``, ``{"error": ...}`` on stdout)."""
    argv = _descending_sorts(list(sys.argv[1:] if argv is None else argv))
    try:
        return _parser().parse_args(argv)
    except UsageError as error:
        line = f"{error.prog}: error: {error} (see `{error.prog} --help`)"
        print(line, file=sys.stderr)
        if "--json" in argv:
            print(json.dumps({"error": str(error), "usage": error.prog}))
        raise SystemExit(2) from None


def _failed(args: argparse.Namespace, message: str) -> int:
    """One ``error:`` line on stderr, and under ``--json`` the same as ``{"error": ...}`` on
    stdout: a script that asked for JSON gets JSON whatever happened."""
    print(f"error: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps({"error": message}, default=str))
    return 1


_WARM_VERBS = ("run", "restart", "resume")
"""The verbs that start a run: the warm runner takes them (each saves the CLI's seconds of
``import prefect``), with the same output, signals and exit codes as in the CLI's process."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``polyaxon-prefect`` console script."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] and words[0] in _WARM_VERBS:
        from polyaxon_prefect.client import warm_run

        # the background server's warm runner runs it with Prefect imported already; None: it
        # cannot (no runner, a server of the user's, POLYAXON_PREFECT_RUNNER=0): run it here
        code = warm_run(words)
        if code is not None:
            return code
        if argv is None and words[0] == "run":
            # The console script's own run ends as a warm runner's does: its heap (a DAG's
            # thousands of ops, Prefect's objects for each) is not torn down object by object
            # after the run ended, which took seconds for a 5,000-op DAG.
            from polyaxon_prefect.prefect._settings import own_the_process

            own_the_process()
            exit_as_a_process(run_command(words))
    return run_command(words)


def exit_as_a_process(code: int) -> NoReturn:
    """End as an interpreter ends: non-daemon threads joined, atexit hooks (the session's,
    Prefect's log and event workers), streams flushed; then exit at once, without the
    interpreter's teardown of every object (the caller's frames are never returned to)."""
    import atexit
    import threading

    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls first
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def run_command(words: list[str]) -> int:
    """The command line ``words`` run in this process (the warm runner's runs call it too)."""
    from polyaxon_prefect.client import thin_main

    argv = words
    # what a failure of the thin client reports under (before the full command line is parsed)
    args = argparse.Namespace(command=words[0] if words else "", json="--json" in words)
    try:
        # a plain `ls`/`get` on a server known without Prefect: answered before Prefect loads
        thin = thin_main(words)
        if thin is None and words[:1] == ["ls"]:
            from polyaxon_prefect.runs_query import thin_ls

            thin = thin_ls(words[1:])  # `ls -q/-s/-io/--to-csv`: the query layer's, thin too
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        return _crashed(args, error)
    if thin is not None:
        return thin
    args = parse_args(argv)
    if args.command != "check":  # `check` logs nothing and spares the import
        import logging

        # A log line that cannot be sent (Prefect's API log worker, with a server gone
        # mid-run) is not the user's error: the stdlib's "production" setting drops it, where
        # Prefect's worker would write "--- Error logging to API ---" and the error without its
        # newline into our one-line report. The lines stay in the run's log files.
        logging.raiseExceptions = False
    try:
        return _commands()[args.command](args)
    except PolyaxonPrefectError as error:
        return _failed(args, str(error))
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        return _crashed(args, error)


def _crashed(args: argparse.Namespace, error: Exception) -> int:
    """A bug, ours or a library's: one line, not a traceback."""
    if os.environ.get("POLYAXON_PREFECT_DEBUG"):
        raise error  # the traceback, as asked
    from polyaxon_prefect.prefect.server._server import server_error_cause
    from polyaxon_prefect.runtime.logs._masking import mask_text

    cause = server_error_cause(error, os.environ.get("PREFECT_API_URL"))
    if cause is not None:  # a local server whose disk is full: the cause, not a bare 500
        return _failed(args, cause)
    why = mask_text((str(error).strip().splitlines() or [""])[0])
    return _failed(
        args,
        f"`{args.command}` could not complete: {type(error).__name__}: {why} "
        "(set POLYAXON_PREFECT_DEBUG=1 to see the traceback)",
    )


if __name__ == "__main__":
    sys.exit(main())
