"""How a run ended: one type for an executor's run, a job, a DAG op, a sweep trial, a DAG and a
sweep.

`RunResult` is what every executor reports, what `polyaxon_prefect.run` returns and what every
runner hands to its caller (a DAG's scheduler, a sweep, the CLI), so a status, its message and
the outputs are carried the same way at every depth. Polyaxon's status words are
`polyaxon_prefect.specs.Status`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.runtime.logs._masking import mask_value
from polyaxon_prefect.specs import Status

if TYPE_CHECKING:
    from polyaxon_prefect.exceptions import Problem
    from polyaxon_prefect.runtime.session._process import ProcessResult

__all__ = ["RunResult"]


@dataclass(frozen=True)
class RunResult:
    """How a run ended, with Polyaxon's status words.

    ``status``: ``succeeded``, ``failed``, ``stopped`` or ``skipped`` (``upstream_failed`` for a
    DAG op that never ran). ``uuid`` and ``artifacts_path`` are the run's (the earlier run's on a
    cache hit, since its outputs are the ones returned); ``flow_run_id`` finds it in Prefect.
    """

    status: Status
    uuid: str | None = None
    name: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts_path: str | None = None
    message: str = ""
    flow_run_id: str | None = None
    cached: bool = False
    ops: dict[str, Any] | None = None
    """A DAG's ops: ``{name: {"status", "outputs", "uuid", ...}}``."""
    trials: list[dict[str, Any]] | None = None
    """A sweep's trials: ``[{"index", "params", "status", "outputs", "uuid", ...}]``."""
    best: dict[str, Any] | None = None
    """A sweep's best trial by its metric."""
    reason: str = ""
    """Why a DAG or a sweep ended early, empty otherwise."""
    gpu_hours: float | None = None
    """GPUs held x wall time, in hours (a sweep: its trials' sum); None: it asked for none."""
    code_hash: str | None = None
    """A job op's code hash (`PreparedJob.code_hash`): what a DAG's ``ops.json`` records, so a
    restart reuses an op only while its code is the same; in `to_dict` only when set."""
    timed_out: bool = field(default=False, compare=False)
    """The job was killed at its deadline (its Prefect state is named ``TimedOut``); not part of
    `to_dict`, the message says it."""
    process: ProcessResult | None = field(default=None, compare=False, repr=False)
    """How the op's (main) process ended, as its executor saw it; None when none ran. Not part
    of `to_dict`."""
    problems: list[Problem] = field(default_factory=list, compare=False)
    """What was wrong with what the process left (an invalid outputs file); not part of
    `to_dict`, the message says it."""

    def __post_init__(self) -> None:
        # A status word given as a plain string ("succeeded") is one of Polyaxon's.
        object.__setattr__(self, "status", Status(self.status))

    @property
    def succeeded(self) -> bool:
        return self.status == Status.SUCCEEDED

    def with_(self, **changes: Any) -> RunResult:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``--json`` prints exactly this): ``ops`` only for a DAG, ``trials`` and
        ``best`` only for a sweep, ``reason`` only when the run was stopped early."""
        # a shallow dict of the fields: `mask_value` below copies every container (and turns a
        # dataclass inside into its dict), so `asdict`'s deep copy of a DAG's thousands of ops
        # was made only to be copied again
        skip = ("timed_out", "process", "problems")
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        for key in ("ops", "trials", "best"):
            if data[key] is None:
                del data[key]
        if not data["reason"]:
            del data["reason"]
        for key in ("gpu_hours", "code_hash"):
            if data[key] is None:
                del data[key]
        # For people and files: secrets and URL credentials masked. The attributes keep the
        # values the ops produced (data, as passed between ops).
        masked: dict[str, Any] = mask_value(data)
        return masked
