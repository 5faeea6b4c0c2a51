"""How far a running sweep or job is, published where people look and read back by ``get``.

What is said is computed in `polyaxon_prefect.search._progress`; this module only moves it:

- the flow run's ``polyaxon.progress`` label holds it as JSON (one PATCH, merged into the
  labels the server keeps), with the time it was written, so ``get --json`` answers
  ``"progress"`` for a run going on anywhere (a worker's run too) and counts the ETA down
  from that time (`read_progress`);
- a job's own ``log_progress`` calls land in its outputs folder (`tracking.PROGRESS_FILE`);
  `watch_job_progress` reads that file while the job runs and publishes the fraction and the
  ETA it gives (the progress artifact and the label).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.client import PROGRESS_LABEL, UPDATED_KEY, progress_from_labels
from polyaxon_prefect.prefect._artifacts import artifact_key, progress_artifact
from polyaxon_prefect.prefect._client import api_request
from polyaxon_prefect.prefect.watch import _live as live
from polyaxon_prefect.search import JobProgress, job_eta
from polyaxon_prefect.tracking import PROGRESS_FILE, read_progress_file

if TYPE_CHECKING:
    from uuid import UUID

    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.objects import FlowRun

__all__ = [
    "PROGRESS_LABEL",
    "current_flow_run_id",
    "publish_label",
    "read_progress",
    "watch_job_progress",
]

_JOB_POLL_SECONDS = 1.0


def current_flow_run_id() -> UUID | None:
    """The id of the flow run this code runs in, else None."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    return context.flow_run.id if context is not None and context.flow_run is not None else None


def publish_label(
    flow_run_id: UUID | None, progress: dict[str, Any], client: SyncPrefectClient | None = None
) -> None:
    """``progress`` (a `to_dict`) as the flow run's progress label, stamped with now; a view:
    a failure is ignored (the next update tries again). ``client``: an open sync client to
    use (a new one costs several times the PATCH itself)."""
    if flow_run_id is None:
        return
    from prefect.client.orchestration import get_client

    stamped = json.dumps({**progress, UPDATED_KEY: datetime.now(UTC).isoformat()})
    labels: dict[str, Any] = {PROGRESS_LABEL: stamped}
    with contextlib.suppress(Exception):
        if client is not None:
            # a quick retry on `503`: Prefect's client sleeps 2, 4, 8 s there (a sweep's
            # trials writing at the same time), and a sweep's last progress waited for it
            api_request(client, "PATCH", f"/flow_runs/{flow_run_id}/labels", labels)
            return
        with get_client(sync_client=True) as new:
            api_request(new, "PATCH", f"/flow_runs/{flow_run_id}/labels", labels)


def read_progress(run: FlowRun) -> dict[str, Any] | None:
    """The progress a flow run's label holds, for ``get`` (`client.progress_from_labels`)."""
    final = run.state is not None and run.state.is_final()
    return progress_from_labels(getattr(run, "labels", None), final=final)


class _JobWatch:
    """Reads a job's progress file while it runs; publishes each new fraction."""

    def __init__(self, name: str, path: Path, flow_run_id: UUID | None, run_uuid: str) -> None:
        self.name = name
        self.path = path
        self.flow_run_id = flow_run_id
        self.run_uuid = run_uuid
        self.started = time.monotonic()
        self.stamp: Any = None
        self.artifact_id: Any = None
        self.stopped = threading.Event()
        self.client: Any = None

    def run(self) -> None:
        """Poll until stopped, with one client for the job's life (opened at the first
        progress the job logs: a job that never calls `log_progress` costs no client)."""
        from prefect.client.orchestration import get_client

        with contextlib.ExitStack() as stack:
            while not self.stopped.wait(_JOB_POLL_SECONDS):
                self._poll(stack, get_client)
            self._poll(stack, get_client)  # the last value the job wrote before it ended

    def _poll(
        self, stack: contextlib.ExitStack, get_client: Callable[..., SyncPrefectClient]
    ) -> None:
        if self.client is None and (self.path.exists() and self.flow_run_id is not None):
            with contextlib.suppress(Exception):
                self.client = stack.enter_context(get_client(sync_client=True))
        self.poll()

    def poll(self) -> None:
        read = read_progress_file(self.path)
        if read is None or read == self.stamp:
            return
        self.stamp = read
        fraction = read[0]
        progress = JobProgress(fraction, job_eta(fraction, time.monotonic() - self.started))
        live.notify_job(self.name, progress)
        self.artifact_id = progress_artifact(
            100.0 * fraction,
            key=artifact_key(self.name, "progress"),
            description=f"`{self.name}`: {progress.description()} (run {self.run_uuid})",
            artifact_id=self.artifact_id,
            client=self.client,
        )
        publish_label(self.flow_run_id, progress.to_dict(), self.client)


@contextlib.contextmanager
def watch_job_progress(name: str, outputs_path: Path, run_uuid: str) -> Iterator[None]:
    """While the block runs (the job's task), publish the fraction its ``log_progress`` calls
    write under ``outputs_path``: nothing when it never calls it. The thread runs in a copy of
    this context, so the artifact lands on this flow run."""
    watch = _JobWatch(name, outputs_path / PROGRESS_FILE, current_flow_run_id(), run_uuid)
    thread = threading.Thread(
        target=contextvars.copy_context().run,
        args=(watch.run,),
        name="polyaxon-progress",
        daemon=True,
    )
    thread.start()
    try:
        yield
    finally:
        watch.stopped.set()
        thread.join(timeout=10)
