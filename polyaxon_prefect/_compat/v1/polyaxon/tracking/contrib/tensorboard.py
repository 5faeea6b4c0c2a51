"""``polyaxon.tracking.contrib.tensorboard``: write TensorBoard events under
``tracking.get_tensorboard_path()`` (``outputs/tensorboard``) or ``get_outputs_path()``, they are
the run's artifacts. Re-parsing TF summaries into Polyaxon events is not done here.
"""

from __future__ import annotations

from typing import Any

from _polyaxon_prefect_compat import warn_once

__all__ = ["PolyaxonTensorboardLogger"]


class PolyaxonTensorboardLogger:
    """Accepted and ignored (one warning): the event files themselves are the record."""

    @classmethod
    def process_summary(cls, *args: Any, **kwargs: Any) -> None:
        warn_once(
            "PolyaxonTensorboardLogger.process_summary",
            "is a no-op: write the events under tracking.get_tensorboard_path() instead",
        )
