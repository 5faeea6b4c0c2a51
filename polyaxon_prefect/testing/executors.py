"""The conformance suite of a run kind's executor: what every executor promises its callers.

`polyaxon_prefect.runtime.executor_for` hands any registered executor to the same op code (the
cache, retries, a DAG's scheduler, a sweep), which relies on four promises checked here: a
cancelled run ends ``stopped``, a run past its ``termination.timeout`` ends ``failed`` saying it
timed out, a secret never reaches a log line, and the outputs the process logged come back.

Give ``ExecutorTestCase`` the kind, a function making a run section of that kind whose main
process runs a given argv, and a scratch folder; call ``run_all()`` (or each ``check_*``)::

    @pytest.mark.parametrize("kind", runnable_kinds())
    def test_conformance(kind, tmp_path):
        ExecutorTestCase(kind, RUNS[kind], tmp_path).run_all()

The checks start real processes (a second or so each).
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from polyaxon_prefect.runtime import Executor, PreparedJob

__all__ = ["SECRET", "ExecutorTestCase", "RunSection"]

RunSection = Callable[[list[str]], dict[str, Any]]
"""``run(argv)``: a ``run`` section of the kind whose main process runs ``argv``."""

SECRET = "conformance-Secret-7c1f"
"""The credentials of a URL param: every executor must mask them in the lines it relays."""

_NAMES = itertools.count()
_LOG_OUTPUT = "from polyaxon_prefect import tracking; tracking.log_outputs(loss=0.25)"
_SLEEP = "import time; print('started', flush=True); time.sleep(60)"


class ExecutorTestCase:
    """The checks every executor must pass, for one run kind on one backend.

    Args:
        kind: The run kind, registered on ``backend``.
        run: Makes a run section of that kind around an argv (`RunSection`).
        workdir: An empty folder for the Polyaxonfiles and the runs' artifacts.
        backend: The backend the executor is registered on.
    """

    def __init__(self, kind: str, run: RunSection, workdir: Path, backend: str = "local"):
        self.kind = kind
        self.run = run
        self.workdir = Path(workdir)
        self.backend = backend

    # -- helpers ---------------------------------------------------------------------------

    @property
    def executor(self) -> Executor:
        from polyaxon_prefect.runtime import executor_for

        return executor_for(self.kind, self.backend)

    def prepare(self, argv: list[str], *, timeout: float | None = None) -> PreparedJob:
        """The job of a component of the kind running ``argv``: one declared output ``loss``
        and one ``url`` param with credentials in it."""
        from polyaxon_prefect.loading import load_polyaxonfile
        from polyaxon_prefect.runtime import PrepareOptions, new_run_context

        name = f"conformance-{self.kind}-{next(_NAMES)}"
        component: dict[str, Any] = {
            "version": 1.1,
            "kind": "component",
            "name": name,
            "inputs": [
                {"name": "url", "type": "str", "value": f"https://user:{SECRET}@example.com/x"}
            ],
            "outputs": [{"name": "loss", "type": "float"}],
            "run": self.run(argv),
        }
        if timeout is not None:
            component["termination"] = {"timeout": timeout}
        path = self.workdir / f"{name}.yaml"
        path.write_text(json.dumps(component), encoding="utf-8")  # JSON is YAML
        context = new_run_context(
            name, "conformance", artifacts_root=self.workdir / "runs"
        ).make_dirs()
        options = PrepareOptions(run_context=context, connections={})
        return self.executor.prepare(load_polyaxonfile(path), options)

    def execute(
        self, job: PreparedJob, cancel_event: threading.Event | None = None
    ) -> tuple[Any, list[str]]:
        """Run ``job``; its result and the lines it relayed."""
        lines: list[str] = []
        result = self.executor.execute(
            job, on_line=lambda _stream, line: lines.append(line), cancel_event=cancel_event
        )
        return result, lines

    # -- checks ----------------------------------------------------------------------------

    def check_stamped(self) -> None:
        """What the executor prepares names its kind and backend, so it comes back to it."""
        job = self.prepare([sys.executable, "-c", "pass"])
        assert (job.run_kind, job.backend) == (self.kind, self.backend), (
            job.run_kind,
            job.backend,
        )

    def check_outputs_read(self) -> None:
        """A process that logs its declared outputs succeeds with them."""
        result, lines = self.execute(self.prepare([sys.executable, "-c", _LOG_OUTPUT]))
        assert result.status == "succeeded", (result.status, result.message, lines)
        assert result.outputs == {"loss": 0.25}, result.outputs

    def check_secrets_masked(self) -> None:
        """A secret the process prints reaches neither the relayed lines nor the message."""
        argv = [sys.executable, "-c", "import sys; print(sys.argv[1]); sys.exit(3)", "{{ url }}"]
        result, lines = self.execute(self.prepare(argv))
        assert result.status == "failed", (result.status, result.message)
        assert lines, "the process's line was not relayed"
        assert not any(SECRET in line for line in lines), lines
        assert SECRET not in result.message, result.message

    def check_cancel_stops(self) -> None:
        """A run cancelled while its process runs ends ``stopped``, promptly."""
        cancel = threading.Event()
        job = self.prepare([sys.executable, "-c", _SLEEP])
        timer = threading.Timer(1.0, cancel.set)
        timer.start()
        try:
            result, _ = self.execute(job, cancel)
        finally:
            timer.cancel()
        assert result.status == "stopped", (result.status, result.message)

    def check_timeout(self) -> None:
        """A run past ``termination.timeout`` is killed and ends ``failed``, saying so."""
        result, _ = self.execute(self.prepare([sys.executable, "-c", _SLEEP], timeout=1))
        assert result.status == "failed", (result.status, result.message)
        assert "timed out" in result.message, result.message

    def run_all(self) -> None:
        """Every check, in order."""
        self.check_stamped()
        self.check_outputs_read()
        self.check_secrets_masked()
        self.check_cancel_stops()
        self.check_timeout()
