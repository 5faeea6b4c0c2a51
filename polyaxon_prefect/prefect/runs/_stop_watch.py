"""The stop watcher: a run of this process ends ``stopped`` when its flow run is cancelled from
outside (``polyaxon-prefect stop``, the Prefect UI's Cancel, ``prefect flow-run cancel``).

Prefect reacts to a Cancelling flow run only where a worker or a runner started it (it kills
that process). A flow called in-process, as ``polyaxon-prefect run`` does, hears nothing and
would run on, its flow run stuck in Cancelling (the server then refuses any final state but
Cancelled). So while a top-level flow run of ours runs, a daemon thread reads its state by id
every `POLL_SECONDS` (one small read; `poll_seconds`) and, once it is Cancelling or Cancelled,
asks the run to stop (`request_stop`): the wait loops of jobs, DAGs, sweeps and replicas then
stop their processes, start nothing new, and end every task run and child flow run
``Cancelled``, as on Ctrl-C. Under a worker, the worker's runner hears of the Cancelling state
through Prefect's events and usually kills the process first; the session's reaper then stops
the jobs left and ends the unfinished runs Cancelled (see
`polyaxon_prefect.runtime.session._reaper`).

The thread gets its own client: Prefect's contexts are per thread, and the flow's client is
not shared.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.client.runs._stop import STOP_REASON
from polyaxon_prefect.runtime import request_stop, stop_requested

if TYPE_CHECKING:
    from uuid import UUID

    from prefect.client.orchestration import SyncPrefectClient
    from prefect.context import SettingsContext

__all__ = [
    "POLL_ENV",
    "POLL_SECONDS",
    "STOP_REASON",
    "StopWatch",
    "poll_seconds",
    "watch_for_stop",
    "watch_root_flow_run",
]

POLL_SECONDS = 0.5
"""How often the flow run's state is read by default: a stop takes effect within about this
long. ``POLYAXON_PREFECT_STOP_POLL_SECONDS`` sets another interval (fewer reads of a busy
server, or slower stops)."""
POLL_ENV = "POLYAXON_PREFECT_STOP_POLL_SECONDS"

_STOP_TYPES = ("CANCELLING", "CANCELLED")


class StopWatch:
    """What the watcher saw: ``cancelled`` once the flow run was Cancelling or Cancelled."""

    def __init__(self) -> None:
        self.cancelled = False


def poll_seconds() -> float:
    """The interval between two reads: ``POLYAXON_PREFECT_STOP_POLL_SECONDS`` when it is a
    positive number, else `POLL_SECONDS`."""
    try:
        value = float(os.environ.get(POLL_ENV, ""))
    except ValueError:
        return POLL_SECONDS
    return value if 0 < value < float("inf") else POLL_SECONDS


def _cancelled(client: SyncPrefectClient, flow_run_id: UUID) -> bool:
    run = client.read_flow_run(flow_run_id)
    state_type = getattr(run.state, "type", None)
    return getattr(state_type, "value", state_type) in _STOP_TYPES


def _watch(api_url: str, flow_run_id: UUID, done: threading.Event, watch: StopWatch) -> None:
    from polyaxon_prefect.prefect.runs._runs import api_client

    with (
        contextlib.suppress(Exception),  # a watcher that cannot read leaves the run as it is
        api_client(api_url) as client,
    ):
        while not done.wait(poll_seconds()):
            try:
                cancelled = _cancelled(client, flow_run_id)
            except Exception:  # a busy or restarting server: read again on the next tick
                continue
            if cancelled and not done.is_set():
                watch.cancelled = True
                request_stop(STOP_REASON)
                return


def _watch_with(settings: SettingsContext, *args: Any) -> None:
    """`_watch` under the settings of the run it watches (a new thread starts with Prefect's
    root settings): its client then needs no copy of them for the run's API URL."""
    with settings.model_copy():
        _watch(*args)


@contextlib.contextmanager
def watch_for_stop(api_url: str, flow_run_id: UUID) -> Iterator[StopWatch]:
    """While the block runs, stop this process's runs once flow run ``flow_run_id`` (at
    ``api_url``) is Cancelling or Cancelled.

    At the block's end the state is read once more: a stop that came after the run's last tick
    (its ops done, its flow run already Cancelling) still sets ``cancelled``, so that the flow
    ends Cancelled (the server refuses any other state after Cancelling)."""
    from prefect.context import get_settings_context

    watch = StopWatch()
    done = threading.Event()
    thread = threading.Thread(
        target=_watch_with,
        args=(get_settings_context(), api_url, flow_run_id, done, watch),
        name="polyaxon-prefect-stop-watch",
        daemon=True,
    )
    thread.start()
    try:
        yield watch
    finally:
        done.set()  # the thread ends at its next tick; nothing waits for it
    if not watch.cancelled:
        from polyaxon_prefect.prefect.runs._runs import api_client

        with contextlib.suppress(Exception), api_client(api_url) as client:
            watch.cancelled = _cancelled(client, flow_run_id)


@contextlib.contextmanager
def watch_root_flow_run() -> Iterator[StopWatch]:
    """`watch_for_stop` on the current flow run when it is a top-level one (a child, a DAG's op
    or a sweep's trial, stops with its root); outside a flow run, or once a stop is asked for
    already, nothing is watched (``cancelled`` stays False)."""
    from prefect.context import FlowRunContext
    from prefect.settings import get_current_settings

    from polyaxon_prefect.prefect._client import ephemeral_api_url

    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    api_url = get_current_settings().api.url or ephemeral_api_url()
    child = flow_run is not None and flow_run.parent_task_run_id is not None
    if flow_run is None or child or not api_url or stop_requested():
        yield StopWatch()
        return
    with watch_for_stop(str(api_url), flow_run.id) as watch:
        yield watch
