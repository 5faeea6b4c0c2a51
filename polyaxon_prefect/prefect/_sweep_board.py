"""What a sweep shows in the Prefect UI: a progress artifact updated in place while trials
finish, then a leaderboard table (best first by the matrix metric) and a markdown summary of
the best trial.

Apart from the sweep loop, which only says how far it is; this decides how often and in what
form that is published (values masked: a secret in a param never reaches an artifact).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.prefect._artifacts import (
    artifact_key,
    markdown_artifact,
    progress_artifact,
    table_artifact,
)
from polyaxon_prefect.runtime._masking import mask_value
from polyaxon_prefect.search._sweep import best_markdown, leaderboard_rows, trial_dict

if TYPE_CHECKING:
    from polyaxon_prefect.search import SweepStudy

__all__ = ["SweepBoard"]

_PROGRESS_EVERY_SECONDS = 0.5


class SweepBoard:
    """The artifacts of the sweep of op ``name``, whose run has uuid ``run_uuid``."""

    def __init__(self, name: str, run_uuid: str) -> None:
        self.name = name
        self.run_uuid = run_uuid
        self.progress_id: Any = None
        self.progress_at = 0.0

    def progress(self, study: SweepStudy, done: int, running: int, *, final: bool) -> None:
        """``done`` trials finished, ``running`` in flight; at most every half second, but
        always when ``final``."""
        now = time.monotonic()
        if not final and now - self.progress_at < _PROGRESS_EVERY_SECONDS:
            return
        self.progress_at = now
        total = study.total or (done + running) or 1
        value = 100.0 if final else min(100.0, 100.0 * done / total)
        self.progress_id = progress_artifact(
            value,
            key=artifact_key(self.name, "progress"),
            description=f"{done} of {study.total if study.total else '?'} trials done",
            artifact_id=self.progress_id,
        )

    def results(self, study: SweepStudy, history: list[Any], best: Any) -> None:
        """The leaderboard and the best trial, once the sweep is over."""
        metric = study.metric_name
        rows = mask_value(leaderboard_rows(history, metric, study.maximize))
        table_artifact(
            rows or [{"rank": None, "trial": None}],
            key=artifact_key(self.name, "leaderboard"),
            description=f"trials of `{self.name}`" + (f", best {metric} first" if metric else ""),
        )
        trials = mask_value([trial_dict(record) for record in history])
        markdown_artifact(
            best_markdown(self.name, mask_value(best), metric, trials),
            key=artifact_key(self.name, "best"),
            description=f"best trial of `{self.name}` (run {self.run_uuid})",
        )
