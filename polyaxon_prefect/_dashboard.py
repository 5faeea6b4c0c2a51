"""``polyaxon-prefect dashboard``: optuna-dashboard on the sweeps' own storage.

A sweep's history, parallel coordinates, slices and parameter importances are pictures in
optuna-dashboard, which reads the Optuna storage the sweeps write, opened here the way the
sweeps open it (the same journal lock), so it can run while a sweep is running.
optuna-dashboard serves one storage, and by default each sweep has its own journal file under
the artifacts root (``search._optuna._journal``): ``--op NAME`` shows the newest sweep of that
op, no ``--op`` the newest sweep of all, ``--storage`` any storage (every study in it). Old
sweeps in the shared ``sweeps.journal`` of earlier versions are shown from it when no sweep has
a journal of its own. optuna-dashboard is an optional extra (``pip install
'polyaxon-prefect[dashboard]'``); without it the command says so.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.runtime._context import resolve_artifacts_root
from polyaxon_prefect.specs import slug

__all__ = ["DashboardError", "dashboard_path", "dashboard_storage", "serve"]


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
        if len(studies) == 1:  # a sweep's own journal: open its page
            return f"/dashboard/studies/{backend.get_study_id_from_name(studies[0].study_name)}"
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


def _op_pattern(op: str) -> str:
    """A generated study name of ``op``: ``<op>-<hash>-<YYYYmmdd-HHMMSS>-<rnd>``."""
    return rf"{re.escape(slug(op))}-[0-9a-f]{{10}}-\d{{8}}-\d{{6}}-[0-9a-f]+$"


def dashboard_storage(artifacts_root: Path, op: str | None) -> str:
    """The default storage to show: the newest sweep journal (of ``op`` when given), else the
    shared journal of earlier versions when there is one.

    Raises:
        DashboardError: nothing to show (the message lists the ops that have sweeps).
    """
    from polyaxon_prefect.search._optuna._journal import LEGACY_FILE, SWEEPS_DIR, sweep_journals

    journals = sweep_journals(artifacts_root, _op_pattern(op) if op else "")
    if journals:
        return str(journals[0])
    legacy = artifacts_root / LEGACY_FILE
    if legacy.is_file():
        return str(legacy)
    folder = artifacts_root / SWEEPS_DIR
    if op is None:
        raise DashboardError(
            f"no sweeps in {folder} yet: run an op with a `matrix` first, or pass the "
            "storage it used with --storage"
        )
    ops = sorted({p.name.rsplit("-", 4)[0] for p in sweep_journals(artifacts_root)})
    there = f"; sweeps there: {', '.join(ops)}" if ops else ""
    raise DashboardError(f"no sweep of op `{op}` in {folder}{there}")


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

    from polyaxon_prefect.search._optuna._storage import open_storage

    if storage is None:
        storage = dashboard_storage(resolve_artifacts_root(), op)
    backend, url = open_storage(storage)
    path = dashboard_path(backend, op, url)
    address = f"http://{host}:{port}{path}"
    say(f"optuna-dashboard on {url}: {address} (Ctrl-C to stop)")
    sys.stdout.flush()
    if open_browser:
        webbrowser.open(address)
    run_server(backend, host=host, port=port)
    return 0
