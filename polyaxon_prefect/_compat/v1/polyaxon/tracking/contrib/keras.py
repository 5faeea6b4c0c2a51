"""``polyaxon.tracking.contrib.keras.PolyaxonCallback`` (alias ``PolyaxonKerasCallback``).

Logs each epoch's numeric logs as metrics (step = epoch), the best value of ``monitor`` as
``<log_best_prefix>_<monitor>``, and saves the model under ``outputs/model`` at the end of
training. Works with Keras 3 (any backend) and ``tf.keras``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _polyaxon_prefect_compat import Run, _metrics, warn_once

try:
    import keras
except ImportError:  # pragma: no cover - old TensorFlow images
    from tensorflow import keras  # type: ignore[no-redef]

from polyaxon import tracking

__all__ = ["PolyaxonCallback", "PolyaxonKerasCallback"]


class PolyaxonCallback(keras.callbacks.Callback):  # type: ignore[misc]
    def __init__(
        self,
        run: Run | None = None,
        metrics: list[str] | None = None,
        log_model: bool = True,
        save_weights_only: bool = False,
        log_best_prefix: str | None = "best",
        mode: str = "auto",
        monitor: str = "val_loss",
        use_store_path: bool = False,
    ) -> None:
        super().__init__()
        self.run = tracking.get_or_create_run(run)
        self.metrics = metrics
        self.log_model = log_model
        self.save_weights_only = save_weights_only
        self.log_best_prefix = log_best_prefix
        self.monitor = monitor
        if mode not in ("auto", "min", "max"):
            warn_once("PolyaxonCallback", f"mode {mode!r} is unknown, `auto` is used")
            mode = "auto"
        self._maximise = mode == "max" or (mode == "auto" and "acc" in monitor)
        self.best: float | None = None
        self.filepath = self.run.get_outputs_path("model", is_dir=True)

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        params = {key: value for key, value in (self.params or {}).items() if value is not None}
        if params:
            self.run.log_inputs(**params)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        logs = dict(logs or {})
        if self.metrics:
            logs = {name: logs[name] for name in self.metrics if name in logs}
        values = _metrics(logs)
        current = values.get(self.monitor)
        if self.log_best_prefix and current is not None:
            current = float(current)
            better = self.best is None or (
                current > self.best if self._maximise else current < self.best
            )
            if better:
                self.best = current
                values[f"{self.log_best_prefix}_{self.monitor}"] = current
                values[f"{self.log_best_prefix}_epoch"] = epoch
        if values:
            self.run.log_metrics(step=epoch, **values)

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if not self.log_model or self.model is None:
            return
        suffix = ".weights.h5" if self.save_weights_only else ".keras"
        path = Path(self.filepath) / f"model{suffix}"
        try:
            if self.save_weights_only:
                self.model.save_weights(str(path))
            else:
                self.model.save(str(path))
        except Exception as exc:  # the run must not fail for the model file
            warn_once("PolyaxonCallback.log_model", f"could not save the model: {exc}")
            return
        self.run.log_model_ref(str(path), name="model", framework="keras")


PolyaxonKerasCallback = PolyaxonCallback
