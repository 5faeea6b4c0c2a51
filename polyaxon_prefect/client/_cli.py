"""``ls``, ``get`` and ``statuses`` in their plain forms, answered without Prefect: `thin_main`
takes a command line it can answer exactly as the flow layer's command would (same rows, same
printers, same stderr lines), and returns None for every other one (the flow layer runs it)."""

from __future__ import annotations

import json
import sys
from typing import Any

from polyaxon_prefect.client._states import STATUSES

__all__ = ["thin_main"]

_MAX_LIMIT = 1000
"""As ``ls --limit`` takes (`prefect._runs_cli`)."""


def _ls_args(words: list[str]) -> dict[str, Any] | None:
    """``ls [--status S] [--limit N] [--json]``, each at most once, values well-formed."""
    found: dict[str, Any] = {"status": None, "limit": 20, "json": False}
    seen: set[str] = set()
    rest = iter(words)
    for word in rest:
        if word in seen:
            return None
        seen.add(word)
        if word == "--json":
            found["json"] = True
        elif word in ("--status", "--limit"):
            value = next(rest, None)
            if value is None:
                return None
            if word == "--status":
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


def _get_args(words: list[str]) -> dict[str, Any] | None:
    """``get RUN [--json]`` with a plain RUN (no option-like or control characters)."""
    flags = [w for w in words if w == "--json"]
    refs = [w for w in words if w != "--json"]
    if len(flags) > 1 or len(refs) != 1:
        return None
    ref = refs[0]
    if not ref.strip() or ref.startswith("-") or not ref.isprintable():
        return None
    return {"run": ref, "json": bool(flags)}


def thin_main(argv: list[str]) -> int | None:
    """Run ``argv`` when it is a plain ``ls``, ``get`` or ``statuses`` and the server is known
    without Prefect; None when the flow layer must (any other command line, no such server, a
    server that does not answer as expected)."""
    if not argv or argv[0] not in ("ls", "get", "statuses"):
        return None
    args = _ls_args(argv[1:]) if argv[0] == "ls" else _get_args(argv[1:])  # statuses: as get
    if args is None:
        return None
    from polyaxon_prefect.client._server import hold_lease, thin_server

    server = thin_server()
    if server is None:
        return None
    from polyaxon_prefect.client import _runs
    from polyaxon_prefect.client._http import ApiUnavailable, HttpApi
    from polyaxon_prefect.client._statuses import status_history

    if server.notice is not None:
        hold_lease()  # the background server must not stop itself under this command
    try:
        api = HttpApi(server.api_url)
        try:
            if argv[0] == "ls":
                result: Any = _runs.list_runs(api, status=args["status"], limit=args["limit"])
            else:
                result = _runs.get_run(api, server.api_url, args["run"])
                if argv[0] == "statuses" and result is not None:
                    changes = status_history(api, result["id"])
        finally:
            api.close()
    except ApiUnavailable:
        return None
    if server.notice is not None:
        print(server.notice, file=sys.stderr, flush=True)
    from polyaxon_prefect.client._show import print_ls, print_run

    if argv[0] == "ls":
        if args["json"]:
            print(json.dumps(result, indent=2, default=str))
        else:
            print_ls(result)
        return 0
    if result is None:
        message = f"no run with the id, name or uuid `{args['run']}`"
        if argv[0] == "statuses":  # the flow layer's `error:` line (a `find_run` refusal)
            print(f"error: {message}", file=sys.stderr)
            if args["json"]:
                print(json.dumps({"error": message}, default=str))
            return 1
        print(message, file=sys.stderr)
        if args["json"]:
            print(json.dumps({"error": message}, indent=2, default=str))
        return 1
    if result.get("note"):
        print(f"note: {result['note']}", file=sys.stderr, flush=True)
    if argv[0] == "statuses":
        for change in changes:
            text = json.dumps(change.record(), default=str) if args["json"] else change.line()
            print(text, flush=True)
        return 0
    if args["json"]:
        print(json.dumps(result, indent=2, default=str))
    else:
        print_run(result)
    return 0
