"""``polyaxon.tracking.contrib.pytorch_lightning.PolyaxonCallback`` (alias ``PolyaxonLogger``):
a Lightning logger writing metrics (with the trainer's step) and hyperparameters to the run.
"""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from _polyaxon_prefect_compat import Run, _metrics

try:
    from lightning.pytorch.loggers import Logger as _Logger
    from lightning.pytorch.utilities import rank_zero_only
except ImportError:  # the standalone ``pytorch_lightning`` package
    from pytorch_lightning.loggers import Logger as _Logger  # type: ignore[no-redef]
    from pytorch_lightning.utilities import rank_zero_only  # type: ignore[no-redef]

from polyaxon import tracking

__all__ = ["PolyaxonCallback", "PolyaxonLogger"]


class PolyaxonCallback(_Logger):  # type: ignore[misc]
    def __init__(
        self,
        owner: str | None = None,
        project: str | None = None,
        run_uuid: str | None = None,
        client: Any = None,
        *args: Any,
        run: Run | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self._run = run or tracking.get_or_create_run()

    @property
    def experiment(self) -> Run:
        return self._run

    @rank_zero_only
    def log_hyperparams(
        self, params: dict[str, Any] | Namespace, *args: Any, **kwargs: Any
    ) -> None:
        values = vars(params) if isinstance(params, Namespace) else dict(params or {})
        if values:
            self._run.log_inputs(**{str(k): v for k, v in values.items()})

    @rank_zero_only
    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        values = _metrics(dict(metrics))
        if values:
            self._run.log_metrics(step=step, **values)

    @property
    def save_dir(self) -> str:
        return self._run.get_outputs_path()

    @property
    def name(self) -> str:
        return str(self._run.project or "default")

    @property
    def version(self) -> str:
        return str(self._run.run_uuid or "local")

    def finalize(self, status: str) -> None:
        """The run's status comes from the process's exit."""


PolyaxonLogger = PolyaxonCallback
