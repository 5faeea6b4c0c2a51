"""``environment``: the pod-level settings of a job or of one replica (spec 4.8)."""

from typing import Literal

from pydantic import Field, StrictStr

from polyaxon_prefect.specs._base import BaseSpec
from polyaxon_prefect.specs._or_ref import BoolOrRef, IntOrRef
from polyaxon_prefect.specs._templated import Templated
from polyaxon_prefect.specs.kubernetes._k8s import (
    Affinity,
    HostAlias,
    PodDNSConfig,
    PodSecurityContext,
    Toleration,
)

__all__ = ["Environment", "RestartPolicy"]

RestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]


class Environment(BaseSpec):
    """Scheduling and identity settings copied onto the pod spec.

    The plain string fields accept templates anyway (they are strings); the non-string ones take
    ``OrRef`` so that a ``{{ param }}`` can stand in until the templates are rendered.
    """

    labels: dict[StrictStr, StrictStr] | None = None
    annotations: dict[StrictStr, StrictStr] | None = None
    node_selector: dict[StrictStr, StrictStr] | None = None
    affinity: Templated[Affinity] | None = None
    tolerations: Templated[list[Toleration]] | None = None
    node_name: StrictStr | None = None
    service_account_name: StrictStr | None = None
    host_aliases: Templated[list[HostAlias]] | None = None
    security_context: Templated[PodSecurityContext] | None = None
    image_pull_secrets: Templated[list[StrictStr]] | None = None
    host_network: BoolOrRef | None = None
    # ``to_camel`` would give ``hostPid``; Kubernetes and Polyaxon spell it ``hostPID``.
    host_pid: BoolOrRef | None = Field(default=None, alias="hostPID")
    dns_policy: StrictStr | None = None
    dns_config: Templated[PodDNSConfig] | None = None
    scheduler_name: StrictStr | None = None
    priority_class_name: StrictStr | None = None
    priority: IntOrRef | None = None
    restart_policy: RestartPolicy | None = None
