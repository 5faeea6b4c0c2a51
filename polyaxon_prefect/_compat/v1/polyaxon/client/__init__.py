"""``from polyaxon.client import RunClient``: the run object, as far as tracking goes.

Methods that talk to a Polyaxon API (create, list, approve, ...) do not exist here: calling one
raises ``AttributeError`` naming it.
"""

from _polyaxon_prefect_compat import Run

RunClient = Run

__all__ = ["RunClient"]
