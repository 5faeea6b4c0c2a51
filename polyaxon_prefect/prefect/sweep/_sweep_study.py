"""Opening a sweep's study: a new one, the latest of the same op (``--resume``), or a named
one joined as one more worker.

Kept apart from the sweep loop because it is the one place that decides *which* study a run
belongs to; the loop only asks and tells.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import TYPE_CHECKING

from polyaxon_prefect.prefect._request import OpRequest
from polyaxon_prefect.runtime import resolve_artifacts_root
from polyaxon_prefect.search._sweep import SweepRun
from polyaxon_prefect.search._sweep import study_prefix as _study_prefix
from polyaxon_prefect.specs import DONE_STATUSES

if TYPE_CHECKING:
    from polyaxon_prefect.prefect._settings import RunLogger
    from polyaxon_prefect.search import SweepStudy

__all__ = ["open_sweep_study", "study_prefix"]


def study_prefix(request: OpRequest) -> str:
    """``<op>-<hash>`` of the request's op (see `polyaxon_prefect.search.study_prefix`)."""
    return _study_prefix(request.operation, request.op_name, request.loaded.params, request.params)


def open_sweep_study(request: OpRequest, book: SweepRun, logger: RunLogger) -> SweepStudy:
    """The study ``request`` runs in, opened; a resumed one has its finished trials told to
    ``book`` and the trials a killed parent left running re-queued.

    Raises:
        PolyaxonPrefectError: the study cannot be opened (a damaged journal, ...).
        OSError: its storage cannot be written.
    """
    from polyaxon_prefect.search import SweepStudy

    options = request.sweep
    component = request.operation.component
    inputs = component.inputs if component is not None else None
    input_types = {io.name: str(io.type) for io in (inputs or []) if io.type is not None}
    prefix = study_prefix(request)
    artifacts_root = resolve_artifacts_root()
    resume = options.resume
    name = options.study_name
    if resume and name is None and options.resume_study is not None:
        name = options.resume_study
    elif resume and name is None:
        name = SweepStudy.latest(options.storage, prefix, artifacts_root=artifacts_root)
        if name is None:
            logger.warning(
                "--resume: no earlier sweep of this op in the storage; starting a new one"
            )
            resume = False
    if name is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = f"{prefix}-{stamp}-{secrets.token_hex(2)}"
    study = SweepStudy.open(
        request.operation.matrix,
        study_name=name,
        storage=options.storage,
        resume=resume,
        input_types=input_types,
        artifacts_root=artifacts_root,
    )
    for warning in study.warnings:
        logger.warning(warning)
    if resume and options.study_name is not None:
        # joining a named study as one more worker: the others' running trials are theirs
        logger.info("joining sweep %s as one more worker", name)
    elif resume:
        recreated = study.finish_creation()
        if recreated is not None:
            logger.warning(recreated)
        retried = study.recover()
        done = [r for r in study.history() if r.status in DONE_STATUSES]
        book.resumed(done)
        logger.info(
            "resuming sweep %s: %d trial(s) already done%s",
            name,
            len(done),
            f"; running points {retried} again (a crash or a stop left them unfinished)"
            if retried
            else "",
        )
    else:
        logger.info("sweep %s (study in %s)", name, _safe_url(study.storage_url))
    return study


def _safe_url(url: str) -> str:
    """The storage URL without its password."""
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)
