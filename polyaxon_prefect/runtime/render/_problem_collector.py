"""The problem collector shared by the steps of `prepare_job`.

Every step adds to one collector instead of raising, so a user sees every problem of a file at
once (each located at its field), not one per attempt.
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.loading import TemplateError

__all__ = ["PathT", "Problems", "first"]

PathT = tuple[str | int, ...]


class Problems:
    """Collects problems so that every one of them is reported at once."""

    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, message: str, rule: str, path: PathT, hint: str | None = None) -> None:
        self.items.append(Problem(message, rule=rule, path=path, hint=hint))

    def template(self, exc: TemplateError, prefix: PathT) -> None:
        self.items.append(exc.problem(prefix))


def first(*values: object) -> Any:
    """The first value that is set: the operation's setting over the component's, say."""
    return next((value for value in values if value is not None), None)
