"""What a sweep shows in the Prefect UI: a progress artifact updated in place while trials
finish, then a leaderboard table (best first by the matrix metric) and a markdown summary of
the best trial.

Apart from the sweep loop, which only says how far it is; this decides how often and in what
form that is published (values masked: a secret in a param never reaches an artifact).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.prefect._artifacts import (
    artifact_key,
    in_background,
    markdown_artifact,
    progress_artifact,
    table_artifact,
)
from polyaxon_prefect.prefect.watch import _live as live
from polyaxon_prefect.prefect.watch._progress_publish import publish_label
from polyaxon_prefect.runtime.logs._masking import mask_value
from polyaxon_prefect.search import SweepProgress, ranked_by
from polyaxon_prefect.search._sweep import best_markdown, leaderboard_rows, trial_dict

if TYPE_CHECKING:
    from uuid import UUID

    from prefect.client.orchestration import SyncPrefectClient

    from polyaxon_prefect.search import SweepStudy

__all__ = ["SweepBoard"]

_PROGRESS_EVERY_SECONDS = 0.5
_FINAL_WAIT_SECONDS = 30.0
"""The longest the final progress waits for the one on its way (a server gone silent)."""


class SweepBoard:
    """The artifacts of the sweep of op ``name``, whose run has uuid ``run_uuid``."""

    def __init__(self, name: str, run_uuid: str, flow_run_id: UUID | None = None) -> None:
        self.name = name
        self.run_uuid = run_uuid
        self.flow_run_id = flow_run_id
        self.progress_id: Any = None
        self.progress_at = 0.0
        self.shown: SweepProgress | None = None
        self._lock = threading.Lock()
        self._latest: tuple[SweepProgress, bool, Any] | None = None
        """The progress still to publish (only the latest counts)."""
        self._idle = threading.Event()
        """Set while no publish is on its way."""
        self._idle.set()

    def progress(
        self, progress: SweepProgress, *, final: bool, client: SyncPrefectClient | None = None
    ) -> None:
        """How far the sweep is: to the terminal's live block when it changed, to the progress
        artifact (its description carries the best and the ETA) and the flow run's progress
        label (what ``get --json`` reads) at most every half second, always when ``final``
        (``client``: the sweep's open client, when it has one).

        The API calls go in the background, the latest progress only: the sweep's loop, which
        launches the next trials, never waits for the server (two calls that a busy server
        answered in seconds, when the loop waited, delayed every trial launch by as much).
        The ``final`` one waits for the one on its way, then is sent, so it is the last.
        Updates go with `api_request`'s quick retry on ``503``: with Prefect's 2, 4, 8 s
        back-off, one collision with a trial's record held every later progress, the final
        one included, for seconds past the last trial."""
        if progress != self.shown:
            live.notify_sweep(self.name, progress, final=final)
        now = time.monotonic()
        if not final and (
            progress == self.shown or now - self.progress_at < _PROGRESS_EVERY_SECONDS
        ):
            return
        self.progress_at, self.shown = now, progress
        if final:
            self._idle.wait(timeout=_FINAL_WAIT_SECONDS)
            self._publish(progress, final=True, client=client)
            return
        with self._lock:
            busy = self._latest is not None or not self._idle.is_set()
            self._latest = (progress, final, client)
            if busy:
                return
            self._idle.clear()
        in_background(self._publish_latest)

    def _publish_latest(self) -> None:
        """Publish the latest progress until no newer one waits (a background thread)."""
        while True:
            with self._lock:
                latest, self._latest = self._latest, None
                if latest is None:
                    self._idle.set()
                    return
            progress, final, client = latest
            try:
                self._publish(progress, final=final, client=client)
            except BaseException:
                with self._lock:
                    self._latest = None
                    self._idle.set()
                raise

    def _publish(
        self, progress: SweepProgress, *, final: bool, client: SyncPrefectClient | None
    ) -> None:
        """The progress artifact and the progress label (views: a failure is a warning)."""
        total = progress.total or (progress.done + progress.running) or 1
        value = 100.0 if final else min(100.0, 100.0 * progress.done / total)
        self.progress_id = progress_artifact(
            value,
            key=artifact_key(self.name, "progress"),
            description=progress.description(),
            artifact_id=self.progress_id,
            client=client,
        )
        publish_label(self.flow_run_id, progress.to_dict(), client)

    def results(
        self,
        study: SweepStudy,
        history: list[Any],
        best: dict[str, Any] | None,
        over_steps: str | None,
    ) -> None:
        """The leaderboard and the best trial, once the sweep is over; both say which value of
        the metric ranks the trials (``over_steps``: the matrix's ``metricOverSteps``)."""
        metric = study.metric_name
        rows = mask_value(leaderboard_rows(history, metric, study.maximize))
        ranked = f", best {metric} first ({ranked_by(over_steps)} value)" if metric else ""
        table_artifact(
            rows or [{"rank": None, "trial": None}],
            key=artifact_key(self.name, "leaderboard"),
            description=f"trials of `{self.name}`{ranked}",
        )
        trials = mask_value([trial_dict(record) for record in history])
        markdown_artifact(
            best_markdown(self.name, mask_value(best), metric, trials, ranked_by(over_steps)),
            key=artifact_key(self.name, "best"),
            description=f"best trial of `{self.name}` (run {self.run_uuid})",
        )
