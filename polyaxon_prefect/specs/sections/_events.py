"""``events``: start an op when another run reaches some statuses (spec 5.5)."""

import re
from enum import StrEnum

from pydantic import StrictStr, field_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import BaseSpec

__all__ = ["WIRED_EVENT_KINDS", "EventKind", "EventTrigger"]


class EventKind(StrEnum):
    """Every event kind Polyaxon declares; only the ``run_status_*`` ones are wired to statuses."""

    RUN_STATUS_CREATED = "run_status_created"
    RUN_STATUS_RESUMING = "run_status_resuming"
    RUN_STATUS_COMPILED = "run_status_compiled"
    RUN_STATUS_ON_SCHEDULE = "run_status_on_schedule"
    RUN_STATUS_QUEUED = "run_status_queued"
    RUN_STATUS_SCHEDULED = "run_status_scheduled"
    RUN_STATUS_STARTING = "run_status_starting"
    RUN_STATUS_RUNNING = "run_status_running"
    RUN_STATUS_PROCESSING = "run_status_processing"
    RUN_STATUS_STOPPING = "run_status_stopping"
    RUN_STATUS_FAILED = "run_status_failed"
    RUN_STATUS_STOPPED = "run_status_stopped"
    RUN_STATUS_SUCCEEDED = "run_status_succeeded"
    RUN_STATUS_SKIPPED = "run_status_skipped"
    RUN_STATUS_WARNING = "run_status_warning"
    RUN_STATUS_UNSCHEDULABLE = "run_status_unschedulable"
    RUN_STATUS_UPSTREAM_FAILED = "run_status_upstream_failed"
    RUN_STATUS_RETRYING = "run_status_retrying"
    RUN_STATUS_UNKNOWN = "run_status_unknown"
    RUN_STATUS_DONE = "run_status_done"
    RUN_APPROVED_ACTOR = "run_approved_actor"
    RUN_INVALIDATED_ACTOR = "run_invalidated_actor"
    RUN_NEW_ARTIFACTS = "run_new_artifacts"
    CONNECTION_GIT_COMMIT = "connection_git_commit"
    CONNECTION_DATASET_VERSION = "connection_dataset_version"
    CONNECTION_REGISTRY_IMAGE = "connection_registry_image"
    ALERT_INFO = "alert_info"
    ALERT_WARNING = "alert_warning"
    ALERT_CRITICAL = "alert_critical"
    MODEL_VERSION_NEW_METRIC = "model_version_new_metric"
    PROJECT_CUSTOM_EVENT = "project_custom_event"
    ORG_CUSTOM_EVENT = "org_custom_event"

    @property
    def status(self) -> str | None:
        """The run status this kind waits for (``run_status_running`` -> ``running``)."""
        prefix = "run_status_"
        return self.value[len(prefix) :] if self.value.startswith(prefix) else None


WIRED_EVENT_KINDS = frozenset(kind for kind in EventKind if kind.status is not None)

_OPS_REF = re.compile(r"^ops\.(?P<name>[-a-zA-Z0-9_]+)$")
_RUNS_REF = re.compile(r"^runs\.(?P<uuid>[0-9a-fA-F]{32}|[0-9a-fA-F-]{36})$")


class EventTrigger(BaseSpec):
    """``{ref: ops.NAME | runs.UUID, kinds: [run_status_...]}``: an edge that fires on status.

    Unlike ``dependencies``, the downstream starts as soon as the upstream *reaches* one of the
    statuses (e.g. start a tensorboard when training is ``running``), not when it is done.
    """

    kinds: list[EventKind]
    ref: StrictStr

    @field_validator("kinds", mode="before")
    @classmethod
    def _only_status_kinds(cls, value: object) -> object:
        if isinstance(value, list):
            if not value:
                raise ValueError("an event needs at least one kind, e.g. [run_status_running]")
            declared = {kind.value for kind in EventKind}
            for item in value:
                wired = not isinstance(item, str) or item.startswith("run_status_")
                if not wired and item in declared:
                    raise PydanticCustomError(
                        "event_kind_not_wired",
                        "event kind '{kind}' is declared by Polyaxon but is not wired to any "
                        "run status, so it would never fire",
                        {"kind": item, "hint": "use a run_status_* kind such as run_status_done"},
                    )
        return value

    @field_validator("ref")
    @classmethod
    def _ref_form(cls, value: str) -> str:
        if not (_OPS_REF.match(value) or _RUNS_REF.match(value)):
            raise PydanticCustomError(
                "event_ref",
                "an event ref must be `ops.<op name>` or `runs.<uuid>`, got '{ref}'",
                {"ref": value},
            )
        return value

    @property
    def entity(self) -> str:
        """``ops`` or ``runs``."""
        return self.ref.split(".", 1)[0]

    @property
    def entity_ref(self) -> str:
        """The op name or run uuid after the ``ops.``/``runs.`` prefix."""
        return self.ref.split(".", 1)[1]

    @property
    def statuses(self) -> tuple[str, ...]:
        """The run statuses that fire this event, in declaration order."""
        return tuple(kind.status for kind in self.kinds if kind.status is not None)
