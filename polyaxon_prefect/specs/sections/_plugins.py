"""``plugins``: switches for the helpers Polyaxon adds around a run (spec 4.9)."""

from typing import Any, Literal

from pydantic import StrictStr, field_validator

from polyaxon_prefect.specs._base import BaseSpec, split_csv
from polyaxon_prefect.specs._or_ref import BoolOrRef, IntOrRef
from polyaxon_prefect.specs._templated import Templated

__all__ = [
    "PLUGIN_DEFAULTS",
    "Notification",
    "NotificationTrigger",
    "Plugins",
    "SidecarContainer",
]

NotificationTrigger = Literal[
    "created",
    "resuming",
    "on_schedule",
    "compiled",
    "queued",
    "scheduled",
    "starting",
    "running",
    "processing",
    "stopping",
    "failed",
    "stopped",
    "succeeded",
    "skipped",
    "warning",
    "unschedulable",
    "upstream_failed",
    "retrying",
    "unknown",
    "done",
]
"""Run statuses a notification can wait for (Polyaxon's ``V1Statuses``)."""


class Notification(BaseSpec):
    """Send a notification through ``connections`` when the run reaches ``trigger``."""

    connections: list[StrictStr]
    trigger: NotificationTrigger | None = None

    @field_validator("connections", mode="before")
    @classmethod
    def _csv(cls, value: object) -> object:
        return split_csv(value)


class SidecarContainer(BaseSpec):
    """Overrides for Polyaxon's log/artifact-collecting sidecar.

    Typed on the fields Polyaxon declares; ``resources`` stays a raw mapping because it is passed
    through to Kubernetes unchanged.
    """

    image: StrictStr | None = None
    image_tag: StrictStr | None = None
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    sleep_interval: IntOrRef | None = None
    sync_interval: IntOrRef | None = None
    monitor_logs: BoolOrRef | None = None
    monitor_spec: BoolOrRef | None = None
    resources: Templated[dict[str, Any]] | None = None


class Plugins(BaseSpec):
    """Switches for auth, log/artifact collection, shm, docker socket, notifications...

    Unset means "use the default" (see :data:`PLUGIN_DEFAULTS`), so a DAG-level value can still
    be pushed down to a child that did not set it.
    """

    auth: BoolOrRef | None = None
    docker: BoolOrRef | None = None
    shm: BoolOrRef | None = None
    tmux: BoolOrRef | None = None
    # Newer Polyaxon versions accept a configuration object here, hence the mapping.
    sandbox: Templated[bool | dict[str, Any]] | None = None
    ssh: Templated[bool | dict[str, Any]] | None = None
    mount_artifacts_store: BoolOrRef | None = None
    collect_artifacts: BoolOrRef | None = None
    collect_logs: BoolOrRef | None = None
    collect_resources: BoolOrRef | None = None
    sync_statuses: BoolOrRef | None = None
    auto_resume: BoolOrRef | None = None
    log_level: StrictStr | None = None
    external_host: BoolOrRef | None = None
    sidecar: Templated[SidecarContainer] | None = None
    notifications: Templated[list[Notification]] | None = None

    def enabled(self, name: str) -> bool | str:
        """The value of a boolean plugin, falling back to its documented default."""
        value = getattr(self, name)
        return PLUGIN_DEFAULTS.get(name, False) if value is None else value


PLUGIN_DEFAULTS: dict[str, bool] = {
    "auth": True,
    "docker": False,
    "shm": True,
    "tmux": False,
    "sandbox": False,
    "ssh": False,
    "mount_artifacts_store": False,
    "collect_artifacts": True,
    "collect_logs": True,
    "collect_resources": True,
    "sync_statuses": True,
    "auto_resume": True,
    "external_host": False,
}
"""Defaults of the boolean plugins (python names); ``mountArtifactsStore`` follows the code."""
