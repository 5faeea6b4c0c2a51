"""The tuner of an ``iterative`` matrix: its hub component loaded and run as a subflow, its
``suggestions`` output handed to the study as the next trials.

Apart from the sweep loop because it is a whole op run of its own (loading, a run context, a
child flow run) that only an iterative sweep needs.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect._request import Children, OpRequest, SweepOptions
from polyaxon_prefect.runtime import new_run_context, project_name
from polyaxon_prefect.specs import Status

__all__ = ["TunerFailedError", "tuner_suggestions"]


class TunerFailedError(Exception):
    """The tuner gave no suggestions: it is missing, could not be loaded, or its run failed."""


def tuner_suggestions(
    request: OpRequest, children: Children, tuner_params: dict[str, Any]
) -> list[dict[str, Any]]:
    """Run the tuner of the sweep ``request`` for one iteration; its ``suggestions``.

    Raises:
        TunerFailedError: with the reason the sweep fails for.
    """
    from polyaxon_prefect.loading import hub_dirs_from_env, load_polyaxonfile

    tuner = getattr(request.operation.matrix, "tuner", None)
    if tuner is None:
        raise TunerFailedError("the iterative matrix has no `tuner`")
    iteration = tuner_params.get("iteration", 0)
    files = request.loaded.files
    base = Path(files[0]).absolute().parent if files and "://" not in files[0] else Path.cwd()
    op: dict[str, Any] = {"version": 1.1, "kind": "operation", "hubRef": tuner.hub_ref}
    if tuner.params:
        op["params"] = dict(tuner.params)
    with tempfile.TemporaryDirectory(prefix="polyaxon-tuner-") as folder:
        path = Path(folder) / "tuner.json"
        path.write_text(json.dumps(op), encoding="utf-8")
        try:
            loaded = load_polyaxonfile(
                path,
                params=tuner_params,
                hub_dirs=[base, base / "hub", *hub_dirs_from_env()],
            )
        except PolyaxonPrefectError as exc:
            raise TunerFailedError(f"the tuner could not be loaded: {exc}") from None
    loaded = dataclasses.replace(loaded, files=tuple(files))
    tuner_request = request.with_(
        loaded=loaded,
        params={},
        run_context=new_run_context(f"{request.op_name}-tuner", project_name()).make_dirs(),
        name=f"tuner-{iteration}",
        cancel_event=None,
        sweep=SweepOptions(),
    )
    result = children.subflow(tuner_request)
    suggestions = result.outputs.get("suggestions")
    if result.status != Status.SUCCEEDED or not isinstance(suggestions, list):
        reason = (
            f"the tuner (iteration {iteration}) ended {result.status}"
            if result.status != Status.SUCCEEDED
            else "the tuner did not output a `suggestions` list"
        )
        raise TunerFailedError(f"{reason}: {result.message}")
    return [dict(s) for s in suggestions]
