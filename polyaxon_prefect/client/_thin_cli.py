"""``ls``, ``get``, ``statuses``, ``logs`` (and ``-f``), ``stop``, ``artifacts``, ``invalidate``
and ``server status`` in their plain forms, answered without Prefect: `thin_main` takes a
command line it can answer exactly as the flow layer's command would (same readers, same
printers, same stderr lines), and returns None for every other one (the flow layer, or for
``ls -q/-s/-io/--to-csv`` `polyaxon_prefect.runs_query`, runs it)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from polyaxon_prefect.client._declined import declined
from polyaxon_prefect.client.runs._status_words import STATUSES
from polyaxon_prefect.exceptions import PolyaxonPrefectError

__all__ = ["ls_args", "on_server", "thin_main", "wants_query"]

_MAX_LIMIT = 1000
"""As ``ls --limit`` takes (`prefect._runs_cli`)."""
_REPLICA_NAME = re.compile(r"^[a-z]+-\d+$")
"""As ``logs --replica`` takes (`prefect.cli._logs_cli`)."""


_LS_QUERY_FLAGS = {"-q": "query", "--query": "query", "-s": "sort", "--sort": "sort"}
"""``ls``'s flags that take Polyaxon's query language (`prefect.cli._ls_query_cli`): the layer
above the query package answers them thin (`polyaxon_prefect.runs_query`)."""


def _option_value(value: str | None, *, sort: bool) -> str | None:
    """The value the CLI gives an option from the word after it: not one that reads as an
    option itself (``-x``, unless it holds a space, as argparse tells them apart), but for
    ``--sort`` a descending field (``-metrics.loss``: `cli._descending_sorts` joins it)."""
    if value is None or not value.startswith("-") or " " in value:
        return value
    return value if sort and value[1:2].isalpha() else None


def ls_args(words: list[str]) -> dict[str, Any] | None:
    """``ls [--status S] [--limit N] [--json] [-q QUERY] [-s SPEC] [-io] [--to-csv]``, each at
    most once, values well-formed (``--query=...`` and ``--sort=...`` too, and ``-s
    -metrics.loss`` as the CLI reads it); the query and sort as written (None: not given).
    None for any other command line: argparse and the flow layer answer it."""
    found: dict[str, Any] = {
        "status": None,
        "limit": 20,
        "json": False,
        "query": None,
        "sort": None,
        "io": False,
        "to_csv": False,
    }
    seen: set[str] = set()
    rest = iter(words)
    for word in rest:
        name, equals, attached = word.partition("=")
        if not equals or name not in _LS_QUERY_FLAGS:
            name, attached = word, ""
        name = {"--io": "-io"}.get(name, name)
        key = _LS_QUERY_FLAGS.get(name, name)
        if key in seen:
            return None
        seen.add(key)
        if name in ("--json", "-io", "--to-csv"):
            found[{"--json": "json", "-io": "io", "--to-csv": "to_csv"}[name]] = True
        elif name in _LS_QUERY_FLAGS:
            joined = bool(equals) and name != word
            value = attached if joined else _option_value(next(rest, None), sort=key == "sort")
            if value is None:
                return None
            found[key] = value
        elif name in ("--status", "--limit"):
            value = next(rest, None)
            if value is None:
                return None
            if name == "--status":
                if value not in STATUSES:
                    return None
                found["status"] = value
            else:
                if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= _MAX_LIMIT:
                    return None
                found["limit"] = int(value)
        else:
            return None
    return found


def wants_query(args: dict[str, Any]) -> bool:
    """Whether an ``ls`` command line uses a flag of the query layer (`ls_args`)."""
    given = (args["query"] is not None, args["sort"] is not None, args["io"], args["to_csv"])
    return any(given)


def _plain(word: str) -> bool:
    """A value argparse and `text_value` take as it is: not option-like, one printable line."""
    return bool(word.strip()) and not word.startswith("-") and word.isprintable()


def _get_args(words: list[str]) -> dict[str, Any] | None:
    """``get RUN [--json]`` (and ``stop``, ``statuses``) with a plain RUN."""
    flags = [w for w in words if w == "--json"]
    refs = [w for w in words if w != "--json"]
    if len(flags) > 1 or len(refs) != 1 or not _plain(refs[0]):
        return None
    return {"run": refs[0], "json": bool(flags)}


def _artifacts_args(words: list[str]) -> dict[str, Any] | None:
    """``artifacts RUN [--download DIR] [--json]``, each at most once, with plain values."""
    found: dict[str, Any] = {"run": None, "download": None, "json": False}
    rest = iter(words)
    for word in rest:
        if word == "--json" and not found["json"]:
            found["json"] = True
        elif word == "--download" and found["download"] is None:
            value = next(rest, None)
            if value is None or not _plain(value):
                return None
            found["download"] = value
        elif found["run"] is None and _plain(word):
            found["run"] = word
        else:
            return None
    return found if found["run"] is not None else None


def _logs_args(words: list[str]) -> SimpleNamespace | None:
    """``logs RUN [-f] [--op NAME] [--replica NAME] [--tail N] [--json]``, each at most once,
    values well-formed (``--files`` reads the run's files: the flow layer's)."""
    found = SimpleNamespace(
        run=None, follow=False, op=None, replica=None, tail=None, files=False, json=False
    )
    seen: set[str] = set()
    rest = iter(words)
    for word in rest:
        name = "-f" if word == "--follow" else word
        if name in seen:
            return None
        seen.add(name)
        if name == "-f":
            found.follow = True
        elif name == "--json":
            found.json = True
        elif name in ("--op", "--replica", "--tail"):
            value = next(rest, None)
            if value is None or not _plain(value):
                return None
            if name == "--op":
                found.op = value
            elif name == "--replica":
                if not _REPLICA_NAME.match(value):
                    return None
                found.replica = value
            elif not value.isascii() or not value.isdigit():
                return None
            else:
                found.tail = int(value)
        elif found.run is None and _plain(word):
            found.run = word
        else:
            return None
    return found if found.run is not None else None


def _failed(message: str, as_json: bool) -> int:
    """The flow layer's ``error:`` line (`cli._failed`), and under ``--json`` its object."""
    print(f"error: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"error": message}, default=str))
    return 1


_VERBS = ("ls", "get", "statuses", "logs", "stop", "artifacts", "invalidate")


def _args(argv: list[str]) -> Any:
    if not argv or argv[0] not in _VERBS:
        return None
    if argv[0] == "ls":
        found = ls_args(argv[1:])
        return None if found is None or wants_query(found) else found
    if argv[0] == "artifacts":
        return _artifacts_args(argv[1:])
    return _logs_args(argv[1:]) if argv[0] == "logs" else _get_args(argv[1:])


def thin_main(argv: list[str]) -> int | None:
    """Run ``argv`` when it is a plain ``ls``, ``get``, ``statuses``, ``logs`` or ``stop`` and
    the server is known without Prefect; None when the flow layer must (any other command line,
    no such server, a server that does not answer as expected before anything was printed)."""
    if argv == ["server", "status"]:  # reads this home's record: no server to find first
        from polyaxon_prefect.client.server._server_status import server_status

        return server_status()
    args = _args(argv)
    if args is None:
        querying = argv[:1] == ["ls"] and ls_args(argv[1:]) is not None  # `runs_query.thin_ls`
        if argv[:1] and argv[0] in _VERBS and not querying:
            declined(f"`{argv[0]}` has a flag or value only the flow layer's parser reads")
        return None
    if argv[0] in ("logs", "stop", "artifacts", "invalidate"):
        return on_server(lambda api, server: _on_run(argv[0], api, server, args))
    return on_server(lambda api, server: _read_verb(argv[0], api, server, args))


def on_server(answer: Callable[[Any, Any], int | None]) -> int | None:
    """``answer(api, server)`` on the server known without Prefect (a `rest._http.HttpApi` and
    a `server._thin_server.ThinServer`), under a lease of the background server; None when the
    flow layer must answer (no such server, or one that did not answer as expected before
    anything was printed: ``answer`` raising `rest._http.ApiUnavailable`)."""
    from polyaxon_prefect.client.server._thin_server import hold_lease, thin_server

    server = thin_server()
    if server is None:
        return None
    from polyaxon_prefect.client.rest._http import ApiUnavailable, HttpApi

    if server.notice is not None:
        hold_lease()  # the background server must not stop itself under this command
    try:
        api = HttpApi(server.api_url)
        try:
            return answer(api, server)
        finally:
            api.close()
    except ApiUnavailable as error:
        declined(f"the server at {server.api_url} did not answer as expected ({error})")
        return None


def _on_run(verb: str, api: Any, server: Any, args: Any) -> int | None:
    """``logs``, ``stop``, ``artifacts`` and ``invalidate``: the run found, then the flow
    layer's own code path (`logs._logs_verb.show_logs`, `runs._stop.stop_run`,
    `run_files._artifacts_verb.show_artifacts`, `run_files._invalidate.invalidate_run`) over
    this client's HTTP."""
    from polyaxon_prefect.client.rest._http import ApiUnavailable
    from polyaxon_prefect.client.run_files._run_paths import find_run_path
    from polyaxon_prefect.client.runs import _run_reader

    ref = args.run if verb == "logs" else args["run"]
    as_json = args.json if verb == "logs" else args["json"]
    run = _run_reader.get_run(api, server.api_url, ref)
    if run is None and verb == "logs" and find_run_path(ref) is not None:
        declined(f"the server has no run `{ref}`; its files have its lines")
        return None  # its files have its lines: the flow layer reads them
    if server.notice is not None:
        print(server.notice, file=sys.stderr, flush=True)
    if run is None:
        return _failed(f"no run with the id, name or uuid `{ref}`", as_json)
    if run.get("note"):
        print(f"note: {run['note']}", file=sys.stderr, flush=True)
    from polyaxon_prefect.client.logs._logs_verb import FromFiles, Printer, show_logs
    from polyaxon_prefect.client.runs._stop import stop_run

    printer = Printer(args) if verb == "logs" else None
    try:
        if verb == "stop":
            return stop_run(api, run, as_json=as_json)
        if verb == "artifacts":
            from polyaxon_prefect.client.run_files._artifacts_verb import show_artifacts

            return show_artifacts(run, ref, args["download"], as_json)
        if verb == "invalidate":
            from polyaxon_prefect.client.run_files._invalidate import invalidate_run

            return invalidate_run(run, ref, as_json)
        assert printer is not None
        shown = show_logs(api, run, args, printer)
    except PolyaxonPrefectError as error:
        return _failed(str(error), as_json)
    except ApiUnavailable as error:
        if printer is None or not printer.printed:
            # nothing shown yet: the flow layer says what is wrong, as always
            declined(f"the server at {server.api_url} did not answer as expected ({error})")
            return None
        from polyaxon_prefect.client.rest._http import unreachable  # lines are out: one line after

        return _failed(unreachable(server.api_url, str(error)), as_json)
    if isinstance(shown, FromFiles):
        declined(f"the server has no lines of `{ref}`; its files have them")
        return None
    return shown


def _read_verb(verb: str, api: Any, server: Any, args: dict[str, Any]) -> int:
    """``ls``, ``get`` and ``statuses``: read everything, then print."""
    from polyaxon_prefect.client.runs import _run_reader
    from polyaxon_prefect.client.runs._statuses import status_history

    if verb == "ls":
        result: Any = _run_reader.list_runs(api, status=args["status"], limit=args["limit"])
    else:
        result = _run_reader.get_run(api, server.api_url, args["run"])
        if verb == "statuses" and result is not None:
            changes = status_history(api, result["id"])
    if server.notice is not None:
        print(server.notice, file=sys.stderr, flush=True)
    from polyaxon_prefect.client.runs._show import print_ls, print_run

    if verb == "ls":
        if args["json"]:
            print(json.dumps(result, indent=2, default=str))
        else:
            print_ls(result)
        return 0
    if result is None:
        message = f"no run with the id, name or uuid `{args['run']}`"
        if verb == "statuses":  # the flow layer's `error:` line (a `find_run` refusal)
            return _failed(message, args["json"])
        print(message, file=sys.stderr)
        if args["json"]:
            print(json.dumps({"error": message}, indent=2, default=str))
        return 1
    if result.get("note"):
        print(f"note: {result['note']}", file=sys.stderr, flush=True)
    if verb == "statuses":
        for change in changes:
            text = json.dumps(change.record(), default=str) if args["json"] else change.line()
            print(text, flush=True)
        return 0
    if args["json"]:
        print(json.dumps(result, indent=2, default=str))
    else:
        print_run(result)
    return 0
