"""The one-process shape: a job (or a notifier) prepared, then run as one process.

Two steps with a clean boundary, so the flow layer, DAG ops and matrix trials can all reuse them:

* `prepare_job` does everything that can fail *before* anything runs: the one render pass
  (`render_run`: params, container, ``env``, ``init``, connections, run settings, cache key;
  every template error reported at once, located at its field), the GPU request, and what the
  launcher needs (an image's settings). It refuses the kinds that do not run as one
  terminating process.
* `execute_job` runs the init steps and the process through the launcher (no shell: a param
  value like ``"; touch pwned"`` stays one literal argument), then reads back the outputs and
  metrics (`job_outcome`). Nothing here imports Prefect.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.exceptions import Problem, UnsupportedFeatureError
from polyaxon_prefect.runtime._context import DEFAULT_PROJECT
from polyaxon_prefect.runtime._errors import InitStepError, ProcessStartError
from polyaxon_prefect.runtime._launcher import PROCESS, Launch, Launcher, run_launched
from polyaxon_prefect.runtime._outcome import LOG_FILE, failed, finish_ttl, job_outcome
from polyaxon_prefect.runtime._prepared import InitStep, PreparedJob
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.docker._build_ops import BuildNotSupportedError
from polyaxon_prefect.runtime.docker._dockerfile import render_dockerfile
from polyaxon_prefect.runtime.render._init_steps import run_init
from polyaxon_prefect.runtime.render._options import PrepareOptions
from polyaxon_prefect.runtime.render._param_values import merge_params
from polyaxon_prefect.runtime.render._render_run import component_of, render_run
from polyaxon_prefect.specs import LOCAL, ONE_PROCESS_KINDS, Status, runs_as_one_process
from polyaxon_prefect.tracking import METRICS_FILE, OUTPUTS_FILE

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile

__all__ = [
    "DEFAULT_PROJECT",
    "LOCAL",
    "LOG_FILE",
    "ONE_PROCESS_KINDS",
    "BuildNotSupportedError",
    "InitStep",
    "PrepareOptions",
    "PreparedJob",
    "execute_job",
    "merge_params",
    "prepare_job",
    "render_dockerfile",
    "render_run",
    "run_one_process",
]


# --------------------------------------------------------------------------------------------------
# prepare_job


def prepare_job(
    loaded: LoadedPolyaxonfile,
    options: PrepareOptions | None = None,
    launcher: Launcher = PROCESS,
    **keywords: Any,
) -> PreparedJob:
    """Resolve a loaded job operation into argv, env, cwd, init steps and run settings, for
    ``launcher`` (default: a process on this machine).

    ``options`` says how (`PrepareOptions`); its fields may be given as ``keywords`` instead
    (``prepare_job(loaded, params={"lr": 0.1})``), not both.

    Raises:
        PolyaxonfileError: bad or missing params, template errors (every one, located).
        UnsupportedFeatureError: a run kind that does not run as one process (it has replicas,
            ops or a server), or an init source that cannot run locally.
        BuildNotSupportedError: a build op without ``skip_builds``, where nothing builds images.
        UnknownConnectionError: a connection name the connections file does not define.
        ConnectionsError: a connection's local secret/config map is missing.
    """
    if options is not None and keywords:
        raise TypeError("give `options` or its fields as keywords, not both")
    options = options or PrepareOptions(**keywords)
    kind = getattr(component_of(loaded.operation).run, "kind", None)
    if not runs_as_one_process(kind):
        raise UnsupportedFeatureError([_not_one_process(kind)])
    # a launcher that builds images decides about build ops itself (`Launcher.prepare`)
    local = dataclasses.replace(options, skip_builds=True) if launcher.builds_images else options
    job = render_run(loaded, local)
    container = getattr(component_of(loaded.operation).run, "container", None)
    [job] = launcher.prepare(loaded, options, [job], [container])
    return job


def _not_one_process(kind: str | None) -> Problem:
    one_process = " or ".join(f"`{k}`" for k in ONE_PROCESS_KINDS)
    return Problem(
        f"run kind `{kind}` cannot run as one process: only {one_process} can",
        rule="unsupported_kind",
        path=("component", "run", "kind"),
        hint=f"run it through its executor: `executor_for({kind!r}).prepare(...)`, "
        "as `polyaxon_prefect.run` does",
    )


# --------------------------------------------------------------------------------------------------
# execute_job


def execute_job(
    job: PreparedJob,
    *,
    on_line: Callable[[str, str], None] | None = None,
    cancel_event: threading.Event | None = None,
    launcher: Launcher = PROCESS,
) -> RunResult:
    """Run the init steps and the process of ``job`` (started by ``launcher``, the one it was
    prepared for), then read back its outputs and metrics.

    Never raises for what the job itself did: a failed init step, a command that does not
    exist, a non-zero exit, a timeout or invalid outputs all come back as a `RunResult` with
    status ``failed`` (``stopped`` when ``cancel_event`` was set, ``skipped`` for a build op
    prepared with ``skip_builds``) and a message a user can act on. Secrets are masked in
    every line given to ``on_line`` and in the message; outputs and metrics are the values
    the job produced, unmasked, because they are data for the ops downstream: whoever shows
    them to people masks them (`polyaxon_prefect.runtime.logs._masking.mask_value`).

    Each call is one attempt: outputs left by an earlier attempt in the same run directory are
    removed first, so a retry never reports stale values.
    """
    if job.is_build:
        return RunResult(Status.SKIPPED, message=launcher.skipped_build.format(op=job.op_name))
    try:
        ended = run_one_process(job, launcher, on_line, cancel_event)
    finally:
        launcher.close()
    finish_ttl(job)
    return ended


def run_one_process(
    job: PreparedJob,
    launcher: Launcher,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult:
    """The one-process shape: the op's own image built first (its ``build:`` section), the
    run's directories and init steps, the launcher's checks, then ``job``'s process to its end
    and what it left (`job_outcome`)."""
    builder = job.image_run.build_job if job.image_run is not None else None
    ended = _build_first(job, builder, launcher, on_line, cancel_event) if builder else None
    if ended is None:
        ended = _before_process(job, on_line, cancel_event)
    if ended is None:
        ended = launcher.ready([job], on_line, cancel_event)
    if ended is not None:
        return ended
    try:
        result = run_launched(
            launcher,
            Launch(job, job.argv, job.env),
            timeout=job.timeout,
            on_line=on_line,
            secrets=job.secrets,
            cancel_event=cancel_event,
            log_path=job.context.run_artifacts_path / "logs" / LOG_FILE,
        )
    except ProcessStartError as exc:
        return failed(str(exc), job.secrets)
    return job_outcome(job, result)


def _build_first(
    job: PreparedJob,
    builder: PreparedJob,
    launcher: Launcher,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult | None:
    """The op's own ``build:`` (its init steps, then the image build); None once the image
    is built, else the op's failure saying the build failed."""
    ended = run_one_process(builder, launcher, on_line, cancel_event)
    if ended.status == Status.SUCCEEDED:
        return None
    if ended.status == Status.STOPPED:
        return ended
    return failed(f"the build of `{job.op_name}`'s image failed: {ended.message}", job.secrets)


def _before_process(
    job: PreparedJob,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult | None:
    """Make the run's directories, drop an earlier attempt's outputs and run the init steps;
    the result of a job that ends here (failed, or cancelled), else None."""
    ctx = job.context
    try:
        # a run folder made now holds no earlier attempt's outputs to drop
        if not ctx.make_new_dirs():
            for name in (OUTPUTS_FILE, METRICS_FILE):
                with contextlib.suppress(FileNotFoundError):
                    (ctx.run_outputs_path / name).unlink()
        run_init(job, on_line, cancel_event)
    except InitStepError as exc:
        return failed(str(exc), job.secrets)
    except OSError as exc:
        return failed(f"cannot prepare the run directory: {exc}", job.secrets)
    if cancel_event is not None and cancel_event.is_set():
        return RunResult(Status.STOPPED, message="cancelled before the process started")
    return None
