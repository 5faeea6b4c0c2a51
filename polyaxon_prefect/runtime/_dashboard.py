"""``polyaxon-prefect dashboard``: optuna-dashboard on the sweeps' own storage.

A sweep's history, parallel coordinates, slices and parameter importances are pictures in
optuna-dashboard, which reads the Optuna storage the sweeps write (the default journal file
under the artifacts root, or ``--storage``), opened here the way the sweeps open it (the same
journal lock), so it can run while a sweep is running. optuna-dashboard is an optional extra
(``pip install 'polyaxon-prefect[dashboard]'``); without it the command says so.
"""

from __future__ import annotations

import importlib.util
import sys
import webbrowser
from collections.abc import Callable
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.runtime._context import resolve_artifacts_root
from polyaxon_prefect.specs import slug

__all__ = ["DashboardError", "dashboard_path", "serve"]


class DashboardError(PolyaxonPrefectError):
    """The dashboard cannot start: the extra is missing, or there is no sweep to show."""


def dashboard_path(backend: Any, op: str | None, storage_url: str) -> str:
    """The page to open: every study, or the newest sweep of ``op``.

    Raises:
        DashboardError: no study at all, or none of ``op`` (the message lists the ops there).
    """
    studies = backend.get_all_studies()
    if not studies:
        raise DashboardError(
            f"no sweeps in {storage_url} yet: run an op with a `matrix` first, or pass the "
            "storage it used with --storage"
        )
    if op is None:
        return "/dashboard"
    prefix = f"{slug(op)}-"
    mine = [s for s in studies if s.study_name.startswith(prefix)]
    if not mine:
        ops = sorted({s.study_name.rsplit("-", 4)[0] for s in studies})
        raise DashboardError(
            f"no sweep of op `{op}` in {storage_url}; sweeps there: {', '.join(ops)}"
        )
    stamp = max(mine, key=lambda s: s.study_name.rsplit("-", 3)[-3:])  # <op>-<hash>-<time>-<rnd>
    return f"/dashboard/studies/{backend.get_study_id_from_name(stamp.study_name)}"


def serve(
    storage: str | None,
    *,
    op: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8080,
    open_browser: bool = True,
    say: Callable[[str], None] = print,
) -> int:
    """Serve optuna-dashboard on the sweeps' storage until interrupted."""
    if importlib.util.find_spec("optuna_dashboard") is None:
        raise DashboardError(
            "optuna-dashboard is not installed: pip install 'polyaxon-prefect[dashboard]'"
        )
    from optuna_dashboard import run_server

    from polyaxon_prefect.search._storage import open_storage

    backend, url = open_storage(storage, artifacts_root=resolve_artifacts_root())
    path = dashboard_path(backend, op, url)
    address = f"http://{host}:{port}{path}"
    say(f"optuna-dashboard on {url}: {address} (Ctrl-C to stop)")
    sys.stdout.flush()
    if open_browser:
        webbrowser.open(address)
    run_server(backend, host=host, port=port)
    return 0
