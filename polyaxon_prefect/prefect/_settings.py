"""Quiet, fast Prefect defaults for local runs, applied only where the user has not chosen.

Why each one:

- ``PREFECT_SERVER_ANALYTICS_ENABLED=false``: the ephemeral server's telemetry service fails
  offline and, on a fresh database, prints "database is locked" tracebacks into the terminal of
  someone who only ran a training script. Environment variables are used (not
  ``temporary_settings``) because the ephemeral server is a subprocess that inherits them; they
  must be set before Prefect is imported, as Prefect reads its settings at import time.
- ``DO_NOT_TRACK=1``: Prefect's client telemetry off, so a run sends nothing anywhere and
  prints no telemetry notice; the servers we spawn get it too (``_server``,
  ``_background_server``).
- ``PREFECT_LOGGING_TO_API_BATCH_INTERVAL=0.5``: a run's lines reach the API in batches, every
  2 s by default, so ``logs -f`` in another terminal showed a line up to 2 s late; 0.5 s costs
  one small request every half second per busy process, to a local server.
- Flow heartbeats off: since Prefect 3.8 every flow run starts a heartbeat thread (every 180 s)
  that the engine joins on exit, adding about one second to *every* flow run, which is most of
  the overhead of a short local job. Heartbeats detect crashed runs of deployed, long-running
  flows; a local ``polyaxon-prefect run`` is watched by its own process. The setting cannot be
  switched off through the environment (``None`` is not an integer), so it is switched off with
  ``temporary_settings`` around our own runs, and only when the user kept Prefect's default.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    import logging

__all__ = [
    "ENV_DEFAULTS",
    "RunLogger",
    "apply_env_defaults",
    "freeze_heap_once",
    "install_log_filter",
    "local_run_settings",
    "own_the_process",
]

RunLogger: TypeAlias = "logging.Logger | logging.LoggerAdapter[logging.Logger]"
"""What Prefect's ``get_run_logger()`` returns (a string: `logging` is imported for type
checking only)."""

ENV_DEFAULTS: dict[str, str] = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # Prefect's client telemetry (and its first-run notice on a terminal): nothing is sent
    "DO_NOT_TRACK": "1",
    # A first start builds the SQLite database: on a busy small machine that took longer than
    # Prefect's default of 20 s (the CLI starts its own server, see `_server`; this is for runs
    # started from Python).
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300",
    # `logs -f` elsewhere shows a run's line about 0.5 s after it was printed (see above)
    "PREFECT_LOGGING_TO_API_BATCH_INTERVAL": "0.5",
}
"""Set in ``os.environ`` unless already present (the user's value always wins)."""

_HEARTBEAT_ENV = ("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY")
_PREFECT_DEFAULT_HEARTBEAT = 180


def apply_env_defaults() -> None:
    """Put `ENV_DEFAULTS` into the environment where the user has not set them.

    Call before ``import prefect`` (the package ``polyaxon_prefect.prefect`` does it first thing).
    """
    for name, value in ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)


def _drop_empty_exc_info(record: logging.LogRecord) -> bool:
    """Prefect logs a failed *state* (which is how a failed job ends) with ``exc_info=True``
    although no exception is being handled, which prints a stray ``NoneType: None`` line under
    the error; drop that empty traceback, keep real ones. (A function: `logging` takes any
    callable as a filter, and this module is imported by ``check``, which needs no logging.)"""
    if record.exc_info and record.exc_info[0] is None:
        record.exc_info = None
    return True


def install_log_filter() -> None:
    """Install `_drop_empty_exc_info` on Prefect's task-run logger (idempotent)."""
    import logging

    logger = logging.getLogger("prefect.task_runs")
    if _drop_empty_exc_info not in logger.filters:
        logger.addFilter(_drop_empty_exc_info)


_LOCAL_SETTINGS: tuple[Any, Any] | None = None
"""The settings `local_run_settings` was last entered under, and its copy of them."""


@contextlib.contextmanager
def local_run_settings() -> Iterator[None]:
    """Settings for running one of our flows in this process (heartbeats off, see above)."""
    import prefect.context
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY

    global _LOCAL_SETTINGS
    install_log_filter()
    user_chose = any(name in os.environ for name in _HEARTBEAT_ENV)
    context = prefect.context.get_settings_context()
    current = context.settings
    if user_chose or current.flows.heartbeat_frequency != _PREFECT_DEFAULT_HEARTBEAT:
        yield
        return
    # what `temporary_settings` does, with the copy made once per settings object: making
    # it validates every setting again (~27 ms), on every run of a warm process
    known = _LOCAL_SETTINGS
    if known is None or known[0] is not current:
        updated = current.copy_with_update(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})
        known = _LOCAL_SETTINGS = (current, updated)
    with prefect.context.SettingsContext(profile=context.profile, settings=known[1]):
        yield


_HEAP_FROZEN: bool | None = None  # None: the process is not ours to tune (a library caller's)


def own_the_process() -> None:
    """The console script's own `run` owns its process: its first run may `freeze_heap_once`.
    A program that calls `run()` keeps its collector as it set it."""
    global _HEAP_FROZEN
    if _HEAP_FROZEN is None:
        _HEAP_FROZEN = False


def freeze_heap_once() -> None:
    """In a process the CLI owns (`own_the_process`), the first run moves the objects alive then
    (Prefect's and this package's modules, pydantic's validators: hundreds of thousands of
    objects that live as long as the process) out of the cyclic collector's reach, as the warm
    runner does before it forks: a full collection during a run then scans only what runs made.
    Over that heap one took 0.1-0.2 s, about once per 100-200 ops of a DAG of short jobs.
    (Garbage in cycles among those objects is never collected: they are the imports, kept
    anyway; in a library caller's process they could be its own objects, so it is left alone.)"""
    global _HEAP_FROZEN
    if _HEAP_FROZEN is False:
        _HEAP_FROZEN = True
        gc.freeze()
