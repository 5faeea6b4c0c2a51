"""The conformance suite of an init source's handler: a job's ``init`` step does what it says.

`polyaxon_prefect.runtime.render._init_steps.INIT_HANDLERS` maps each source (``git``, ``file``,
``paths``...)
to the function that runs it before the main process. Every handler promises its job three
things, checked here: its source is registered and its step describes itself (a failure message
says ``init[0] (file a.txt) failed: ...``); a job with the step succeeds and finds
the files the step wrote where the process looks (the context's artifacts folder, the default
``path``); and a broken step fails the job, naming the step, before the process starts.

Give ``InitHandlerTestCase`` an init entry of the source, the files it must write, optionally a
broken entry, and a scratch folder (the Polyaxonfile's folder, where ``paths`` are looked up)::

    @pytest.mark.parametrize("kind", sorted(INIT_HANDLERS))
    def test_conformance(kind, tmp_path):
        InitHandlerTestCase(kind, SAMPLES[kind](tmp_path), tmp_path).run_all()
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from polyaxon_prefect.runtime import Connection, PreparedJob

__all__ = ["InitHandlerTestCase", "InitSample"]

_NAMES = itertools.count()


@dataclass(frozen=True)
class InitSample:
    """One init entry of a source and what it must leave in the run's artifacts folder."""

    entry: dict[str, Any]
    """The ``init`` entry, as written in a Polyaxonfile."""
    writes: Sequence[str] = ()
    """Paths, relative to the run context's artifacts folder (an init step's default ``path``),
    that must exist after the step."""
    broken: dict[str, Any] | None = None
    """An entry of the same source that must fail (a missing file, a bad name); None: the
    source cannot fail (a bare connection)."""
    connections: Mapping[str, Connection] = field(default_factory=dict)
    """The connections the entries name."""


class InitHandlerTestCase:
    """The checks every init handler must pass, for one source.

    Args:
        kind: The init source (a key of ``INIT_HANDLERS``).
        sample: An entry of that source and what it writes (`InitSample`).
        workdir: An empty folder: the Polyaxonfile's folder and the runs' artifacts root.
    """

    def __init__(self, kind: str, sample: InitSample, workdir: Path):
        self.kind = kind
        self.sample = sample
        self.workdir = Path(workdir)

    # -- helpers ---------------------------------------------------------------------------

    def prepare(self, entry: dict[str, Any]) -> PreparedJob:
        """A job whose one init step is ``entry`` and whose process lists what it finds."""
        from polyaxon_prefect.loading import load_polyaxonfile
        from polyaxon_prefect.runtime import PrepareOptions, new_run_context, prepare_job

        name = f"init-{self.kind}-{next(_NAMES)}"
        component = {
            "version": 1.1,
            "kind": "component",
            "name": name,
            "run": {
                "kind": "job",
                "init": [entry],
                "container": {"command": [sys.executable, "-c", "print('main process ran')"]},
            },
        }
        path = self.workdir / f"{name}.yaml"
        path.write_text(json.dumps(component), encoding="utf-8")  # JSON is YAML
        context = new_run_context(
            name, "conformance", artifacts_root=self.workdir / "runs"
        ).make_dirs()
        options = PrepareOptions(
            run_context=context, connections=dict(self.sample.connections), base_dir=self.workdir
        )
        return prepare_job(load_polyaxonfile(path), options)

    def execute(self, job: PreparedJob) -> tuple[Any, list[str]]:
        from polyaxon_prefect.runtime import execute_job

        lines: list[str] = []
        result = execute_job(job, on_line=lambda _stream, line: lines.append(line))
        return result, lines

    # -- checks ----------------------------------------------------------------------------

    def check_registered(self) -> None:
        """The source has a handler, and its step describes itself by its place and source."""
        from polyaxon_prefect.runtime import INIT_HANDLERS

        assert self.kind in INIT_HANDLERS, f"no handler for init source {self.kind!r}"
        [step] = self.prepare(self.sample.entry).init
        assert step.kind == self.kind, (step.kind, self.kind)
        described = step.describe()
        assert described.startswith("init[0] (") and described.endswith(")"), described

    def check_writes(self) -> None:
        """A job with the step succeeds, and finds what the step wrote."""
        job = self.prepare(self.sample.entry)
        result, lines = self.execute(job)
        assert result.status == "succeeded", (result.status, result.message, lines)
        assert "main process ran" in lines, lines
        for relative in self.sample.writes:
            path = job.context.artifacts_path / relative
            assert path.exists(), f"init {self.kind} did not write {relative}"

    def check_broken_fails_naming_the_step(self) -> None:
        """A broken step fails the job before its process starts, naming the step."""
        if self.sample.broken is None:
            return
        result, lines = self.execute(self.prepare(self.sample.broken))
        assert result.status == "failed", (result.status, result.message)
        assert "main process ran" not in lines, lines
        assert result.message.startswith("init[0] ("), result.message

    def run_all(self) -> None:
        """Every check, in order."""
        self.check_registered()
        self.check_writes()
        self.check_broken_fails_naming_the_step()
