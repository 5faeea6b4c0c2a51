"""polyaxon-client v0's ``PolyaxonKeras`` callback: each epoch's logs as metrics."""

from __future__ import annotations

from typing import Any

from _polyaxon_prefect_compat import _metrics

try:
    import keras
except ImportError:  # pragma: no cover - old TensorFlow images
    from tensorflow import keras  # type: ignore[no-redef]

from polyaxon_client.tracking import Experiment

__all__ = ["PolyaxonKeras"]


class PolyaxonKeras(keras.callbacks.Callback):  # type: ignore[misc]
    def __init__(
        self, experiment: Experiment | None = None, metrics: list[str] | None = None
    ) -> None:
        super().__init__()
        self.experiment = experiment or Experiment()
        self.metrics = metrics

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        logs = dict(logs or {})
        if self.metrics:
            logs = {name: logs[name] for name in self.metrics if name in logs}
        values = _metrics(logs)
        if values:
            self.experiment.log_metrics(step=epoch, **values)
