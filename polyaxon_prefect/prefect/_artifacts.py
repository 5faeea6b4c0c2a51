"""The only caller of Prefect's artifact functions.

An artifact is a view: creating one never fails a run (a failure is a warning in the run's
log). Contents are computed by the pure report modules (`polyaxon_prefect.dag` and
`polyaxon_prefect.search`); keys come from one slug function.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any
from uuid import UUID

from prefect import get_run_logger

from polyaxon_prefect.prefect._client import api_request
from polyaxon_prefect.specs import slug

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient

__all__ = [
    "artifact_key",
    "flush_artifacts",
    "in_background",
    "markdown_artifact",
    "progress_artifact",
    "table_artifact",
]


def artifact_key(name: str, suffix: str, default: str = "op") -> str:
    """``<slug of name>-<suffix>``: ``train-run``, ``pipeline-dag``, ``sweep-leaderboard``."""
    return f"{slug(name, default)}-{suffix}"


def _warn(what: str, exc: Exception) -> None:
    with contextlib.suppress(Exception):  # outside a run: nothing to tell
        get_run_logger().warning("could not create the %s artifact: %s", what, exc)


def _create(
    kind: str,
    data: object,
    *,
    key: str | None,
    description: str | None,
    client: SyncPrefectClient | None = None,
) -> UUID:
    """What Prefect's ``create_*_artifact`` sends (one ``POST /artifacts/``, on the current
    task or flow run, with its key), without the ``prefect.artifact.created`` event it emits
    after it: one more event per artifact for the server to store and match against
    automations (measured: ~6 ms of its CPU and ~2 ms of ours each), per op of a DAG; no view
    of ours or of Prefect's UI reads it (the UI lists a run's artifacts from the API)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import ArtifactCreate
    from prefect.utilities.context import get_task_and_flow_run_ids

    task_run_id, flow_run_id = get_task_and_flow_run_ids()
    artifact = ArtifactCreate(
        type=kind,
        key=key,
        description=description,
        task_run_id=task_run_id,
        flow_run_id=flow_run_id,
        data=data,
    )
    payload = artifact.model_dump(mode="json", exclude_unset=True)
    # `api_request`'s quick retry on `503`: Prefect's client sleeps 2 s there (the server
    # still writing the previous run's events), and the run's end waits for its views
    response = api_request(client or get_client(sync_client=True), "POST", "/artifacts/", payload)
    return UUID(response.json()["id"])


def _without_nan(item: object) -> object:
    """``item`` with each NaN as None, as Prefect's ``TableArtifact`` sends a table (the
    UI's JSON parser refuses ``NaN``)."""
    if isinstance(item, list):
        return [_without_nan(value) for value in item]
    if isinstance(item, dict):
        return {name: _without_nan(value) for name, value in item.items()}
    if isinstance(item, float) and math.isnan(item):
        return None
    return item


def table_artifact(rows: Sequence[dict[str, Any]], *, key: str | None, description: str) -> None:
    """``rows`` as a table artifact on the current run; ``key`` None: one without a key (on
    its run only, not in the UI's Artifacts page; the server writes no collection for it)."""
    try:
        data = json.dumps(_without_nan(list(rows)))
        _create("table", data, key=key, description=description)
    except Exception as exc:
        _warn("table", exc)


_POOL: ThreadPoolExecutor | None = None
_PENDING: set[Future[object]] = set()
_PENDING_LOCK = threading.Lock()
_MAX_PENDING = 8
"""At most this many views wait for the API (or are being sent); the next caller waits for a
free place. The server writes them one at a time: a DAG whose ops end faster than that (a
wide fan-out of short ops) queued one per op and, after its last op, waited for all of them
(42 s for 5,000 ops), holding their rows in memory meanwhile. Bounded, what is left after the
last op is at most this many calls, whatever the op count."""
_SLOTS = threading.BoundedSemaphore(_MAX_PENDING)
_SLOT_WAIT_SECONDS = 5.0
"""The longest a caller waits for a place while no call ends: a server that stopped answering
must not hold an op's end (the DAG's own watch then decides); past it the view is queued
anyway. While calls do end (a slow server, several ops waiting for each place), it waits on:
queued past the bound, a slow server's backlog was all left for after the last op (20-30 s
for 1,000 ops on a loaded machine)."""
_ENDED = 0
"""How many calls have ended (what tells a slow server from one that stopped answering)."""


def in_background(call: Callable[..., object], *args: object, **kwargs: object) -> None:
    """``call(*args, **kwargs)`` (a view sent to the API: an artifact, a label) in a background
    thread. The run's context is copied, so it lands on the same task and flow run;
    `flush_artifacts` waits for it before the run that started it ends.

    A DAG op's report is made when its process has ended, on the path to its downstream op:
    waiting for the API there (a round trip) would add that much to every op of a chain."""
    global _POOL
    context = contextvars.copy_context()
    slot = _wait_for_slot()
    with _PENDING_LOCK:
        if _POOL is None:
            # several at once: a fan-out's ops end faster than one thread creates their
            # artifacts (with one worker, a wide fan-out fell well behind a hand-written flow)
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="polyaxon-artifacts")
        future = _POOL.submit(context.run, functools.partial(call, *args, **kwargs))
        _PENDING.add(future)
    future.add_done_callback(functools.partial(_forget, slot=slot))


def _wait_for_slot() -> bool:
    """Back-pressure: the caller (an op's end) waits for a place while the API is behind and
    still answering; False: no call ended for `_SLOT_WAIT_SECONDS`, it goes without one."""
    while True:
        ended = _ENDED
        if _SLOTS.acquire(timeout=_SLOT_WAIT_SECONDS):
            return True
        if ended == _ENDED:
            return False


def _forget(future: Future[object], *, slot: bool) -> None:
    global _ENDED
    with _PENDING_LOCK:
        _PENDING.discard(future)
        _ENDED += 1
    if slot:
        _SLOTS.release()


def flush_artifacts(timeout: float | None = 60.0) -> None:
    """Wait until every call of `in_background` is done (or ``timeout``)."""
    with _PENDING_LOCK:
        pending = list(_PENDING)
    if pending:
        wait(pending, timeout=timeout)


def markdown_artifact(markdown: str, *, key: str, description: str | None = None) -> None:
    try:
        _create("markdown", markdown, key=key, description=description)
    except Exception as exc:
        _warn("markdown", exc)


def progress_artifact(
    value: float,
    *,
    key: str,
    description: str,
    artifact_id: UUID | None = None,
    client: SyncPrefectClient | None = None,
) -> UUID | None:
    """Create the progress artifact (``artifact_id`` None) or update it; returns its id.
    ``client``: an open sync client the update goes on (`_update_progress`)."""
    from prefect.artifacts import update_progress_artifact

    try:
        if artifact_id is None:
            return _create("progress", value, key=key, description=description, client=client)
        if client is not None:
            _update_progress(client, artifact_id, value, description)
        else:
            update_progress_artifact(artifact_id, value, description=description)
    except Exception as exc:
        _warn("progress", exc)
    return artifact_id


def _update_progress(
    client: SyncPrefectClient, artifact_id: UUID, value: float, description: str
) -> None:
    """What Prefect's ``update_progress_artifact`` sends (the PATCH, then its
    ``prefect.artifact.updated`` event), on ``client`` with `api_request`'s quick retry:
    Prefect's own opens a client per call and sleeps 2, 4, 8 s on a ``503`` (a write of the
    sweep's trials met), and a sweep's last progress waited that long before it could end."""
    from prefect.client.schemas.actions import ArtifactUpdate
    from prefect.events.utilities import emit_event

    update = ArtifactUpdate(data=min(100.0, max(0.0, value)), description=description)
    payload = update.model_dump(mode="json", exclude_unset=True)
    api_request(client, "PATCH", f"/artifacts/{artifact_id}", payload)
    resource = {"prefect.resource.id": f"prefect.artifact.{artifact_id}"}
    emit_event(event="prefect.artifact.updated", resource=resource, payload=payload)
