"""An op's own ``build:`` section on the ``docker`` backend: the builder op it stands for.

Polyaxon runs an op's ``build`` (a builder hub component, ``kaniko`` by default, with its
``params``, ``runPatch`` and ``connection``) as an operation of its own before the op, and the
op then runs in the image it built. Here that operation is loaded as if it were a file of its
own (`load_build`), so the builder component, its params and its ``dockerfile`` init step are
checked and rendered exactly as a ``build`` op of a DAG;
`polyaxon_prefect.runtime.docker._container`
builds it with the container CLI first and runs the op in its ``destination``.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from polyaxon_prefect.exceptions import PolyaxonfileError

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile

__all__ = ["build_operation", "load_build"]


def build_operation(build: Any, op_name: str) -> dict[str, Any]:
    """The operation a ``build:`` section stands for (``<op>-build``), as a Polyaxonfile."""
    op: dict[str, Any] = {
        "version": 1.1,
        "kind": "operation",
        "name": f"{op_name}-build",
        "hubRef": build.hub_ref,
    }
    for key, value in (
        ("params", build.params),
        ("runPatch", build.run_patch),
        ("patchStrategy", build.patch_strategy),
        ("connection", build.connection),
    ):
        if value:
            op[key] = value
    return op


def load_build(build: object, op_name: str, base_dir: Path | None) -> LoadedPolyaxonfile:
    """The ``build:`` section's operation loaded and validated, its problems located under
    ``build`` (its file is written next to the op's, so relative paths mean the same).

    Raises:
        PolyaxonfileError: the builder component is unknown or its params do not fit.
    """
    from polyaxon_prefect.loading import load_polyaxonfile

    folder = base_dir if base_dir is not None and base_dir.is_dir() else None
    with tempfile.NamedTemporaryFile(
        "w", suffix=".yaml", prefix=".build-", dir=folder, delete=True, encoding="utf-8"
    ) as file:
        yaml.safe_dump(build_operation(build, op_name), file, sort_keys=False)
        file.flush()
        try:
            return load_polyaxonfile(file.name)
        except PolyaxonfileError as exc:
            problems = [
                dataclasses.replace(p, path=("build", *p.path), file=None, line=None, column=None)
                for p in exc.problems
            ]
            raise PolyaxonfileError(problems) from None
