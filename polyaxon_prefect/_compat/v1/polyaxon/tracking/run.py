"""``polyaxon.tracking.run.Run`` (v1): the tracking run object."""

from _polyaxon_prefect_compat import Run

__all__ = ["Run"]
