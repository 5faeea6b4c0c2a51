"""Build ops on the local runtime, which has no image builder: refused, or skipped on request.

One place decides what counts as a build, so a job, a DAG op and a trial skip the same ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from polyaxon_prefect.exceptions import Problem, UnsupportedFeatureError
from polyaxon_prefect.runtime._prepared import InitStep
from polyaxon_prefect.runtime.render._problem_collector import first
from polyaxon_prefect.specs import Component, Operation

__all__ = ["BuildNotSupportedError", "check_build", "is_build_op"]

_KANIKO_NAMES = ("kaniko",)


class BuildNotSupportedError(UnsupportedFeatureError):
    """A build operation on the local runtime, which has no image builder."""


def is_build_op(operation: Operation, component: Component, steps: Sequence[InitStep]) -> bool:
    """A kaniko hub component, or a dockerfile init step in a component with a ``destination``."""
    hub_ref = (operation.hub_ref or "").split(":")[0].split("/")[-1]
    if hub_ref in _KANIKO_NAMES or (component.name or "").split(":")[0] in _KANIKO_NAMES:
        return True
    has_destination = component.get_io("destination") is not None
    return has_destination and any(step.kind == "dockerfile" for step in steps)


def check_build(
    operation: Operation,
    component: Component,
    steps: Sequence[InitStep],
    op_name: str,
    skip_builds: bool,
) -> tuple[bool, list[str]]:
    """Whether the op is itself a build, and the notes for a build it needs that is skipped.

    Raises:
        BuildNotSupportedError: the op is, or needs, a build and ``skip_builds`` is off.
    """
    notes: list[str] = []
    is_build = is_build_op(operation, component, steps)
    build = first(operation.build, component.build)
    if is_build or build is not None:
        what = (
            f"the op needs an image built by `{getattr(build, 'hub_ref', build)}` first"
            if not is_build
            else f"`{op_name}` is an image build"
        )
        if not skip_builds:
            raise BuildNotSupportedError(
                [
                    Problem(
                        f"{what}, and the local runtime has no image builder",
                        rule="build_unsupported",
                        path=("component", "build") if not is_build else ("component", "run"),
                        hint="skip builds with `--skip-builds` (`skip_builds=True`); the job then "
                        "runs with the commands on this machine, whatever the image",
                    )
                ]
            )
        if not is_build:
            notes.append(f"build skipped: {what}; running the job locally without it")
    return is_build, notes
