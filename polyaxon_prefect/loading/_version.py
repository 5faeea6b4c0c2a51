"""The top-level ``version`` of a Polyaxonfile: which values load, and how.

Polyaxon 2.x ignores ``version``; public v1 files still say ``version: 1`` with a modern kind, and
legacy v0 files say ``version: 1`` with ``experiment``/``group``. The rule lives here, apart from
the loader, so the one place that decides is small and testable.
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect._source import Document
from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.legacy import looks_legacy

__all__ = ["SUPPORTED_VERSIONS", "TOP_KINDS", "check_version"]

SUPPORTED_VERSIONS = (1.1,)
TOP_KINDS = ("component", "operation")


def check_version(
    doc: Document, data: dict[str, Any], problems: list[Problem], warnings: list[Problem]
) -> bool:
    """Whether the file's ``version`` lets it load, reporting why not into ``problems`` (and
    a ``version: 1`` read as 1.1 into ``warnings``); rewrites that ``1`` in ``data``."""
    version = data.get("version")
    if version is None:
        legacy = looks_legacy(data)
        hint = (
            "add `version: 1` at the top: the file has the legacy v0.x shape "
            f"({', '.join(legacy)}); or rewrite it as `version: 1.1`"
            if legacy
            else "add `version: 1.1` at the top of the file"
        )
        problems.append(
            doc.positions.problem(
                Problem("`version` is missing", rule="missing", path=("version",), hint=hint)
            )
        )
        return False
    try:
        number = float(version)
    except (TypeError, ValueError):
        number = None
    if number in SUPPORTED_VERSIONS:
        return True
    if number == 1.0 and data.get("kind") in TOP_KINDS:
        # Polyaxon 2.x ignores `version` (its CLI says so and checks the file as v1.1), and
        # public v1 files still carry `version: 1` with a modern kind: read them as 1.1.
        warnings.append(
            doc.positions.problem(
                Problem(
                    f"`version: {version}` with `kind: {data['kind']}` is read as "
                    "`version: 1.1`, as Polyaxon 2.x reads it",
                    rule="version",
                    path=("version",),
                    value=version,
                    hint="write `version: 1.1` to silence this",
                    severity="warning",
                )
            )
        )
        data["version"] = SUPPORTED_VERSIONS[0]
        return True
    problems.append(
        doc.positions.problem(
            Problem(
                f"unsupported Polyaxonfile version `{version}`",
                rule="version",
                path=("version",),
                value=version,
                hint="use `version: 1.1` (files with `version: 1` and `kind: "
                "experiment`/`group` are the legacy format and are read as such)",
            )
        )
    )
    return False
