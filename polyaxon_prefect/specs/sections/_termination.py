"""``termination``: retries, timeouts, TTL and idle culling (spec 8.4)."""

from typing import Annotated, Self

from annotated_types import Ge
from pydantic import StrictInt, model_validator

from polyaxon_prefect.specs._base import BaseSpec
from polyaxon_prefect.specs._templated import NonNegativeIntOrRef, Templated
from polyaxon_prefect.specs.kubernetes._k8s import ExecAction, HTTPGetAction, PodFailurePolicy

__all__ = ["ActivityProbe", "Culling", "Termination"]


class Culling(BaseSpec):
    """Stop a service after ``timeout`` idle seconds (idleness decided by ``probe``)."""

    timeout: Annotated[StrictInt, Ge(0)] | None = None


class ActivityProbe(BaseSpec):
    """How to tell whether a service is idle: a command, or an HTTP endpoint (one of the two)."""

    exec: ExecAction | None = None
    http: HTTPGetAction | None = None

    @model_validator(mode="after")
    def _one_probe(self) -> Self:
        if self.exec is not None and self.http is not None:
            raise ValueError("an activity probe is either `exec` or `http`, not both")
        return self


class Termination(BaseSpec):
    """When to give up on a run and how long to keep its resources.

    ``maxRetries`` maps to the number of retries, ``timeout`` to a wall-clock limit in seconds and
    ``ttl`` to how long finished resources are kept.
    """

    max_retries: NonNegativeIntOrRef | None = None
    ttl: NonNegativeIntOrRef | None = None
    timeout: NonNegativeIntOrRef | None = None
    culling: Culling | None = None
    probe: ActivityProbe | None = None
    pod_failure_policy: Templated[PodFailurePolicy] | None = None
