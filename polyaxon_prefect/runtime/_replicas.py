"""A distributed op (``tfjob``, ``pytorchjob``, ...) on this machine: one process per replica.

The local backend of the distributed kinds. What the replicas are, which variables each one
gets and when the job is over are pure decisions (`polyaxon_prefect.distributed`); this module
only makes them happen:

* `prepare_replicas` prepares each replica's container with `render_run` (params,
  rendering, env, connections, init, cache settings: nothing is re-implemented), so a replica
  behaves exactly like a job would; GPU requests and ``mpirun`` are checked here, so a job that
  cannot start fails before any flow run exists (each replica's GPUs are taken from the
  machine's pool when the op runs: `polyaxon_prefect.runtime.gpu._gpu_admit`).
* `execute_replicas` takes free loopback ports (or the launcher's network: containers),
  starts one `run_process` thread per replica through the op's `Launcher` with one shared
  stop event, relays their lines (``[worker-1] ...``) from the calling thread,
  and asks `decide` each time a replica ends: the first failure stops the others at once (a
  rank that is gone hangs the collectives of the rest) and names the replica.

The op's outputs and metrics are the main replica's (it writes where a job would); every other
replica writes its own under ``<run>/replicas/<name>/outputs``, and each replica's whole output
is in ``<run>/logs/<name>.log``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from polyaxon_prefect import tracking
from polyaxon_prefect.distributed import (
    Cluster,
    Decision,
    Replica,
    ReplicaPlan,
    decide,
    gpu_request,
    loopback_cluster,
    mpi_hostfile,
    plan_replicas,
    replica_env,
    torchrun_env,
    visible_env,
)
from polyaxon_prefect.exceptions import PolyaxonfileError, UnsupportedFeatureError
from polyaxon_prefect.runtime._context import new_run_context
from polyaxon_prefect.runtime._errors import InitStepError, RunRuntimeError
from polyaxon_prefect.runtime._launcher import PROCESS, Launch, Launcher, run_launched
from polyaxon_prefect.runtime._mpi import LAUNCHED, check_mpirun, launcher_env, mpirun_argv
from polyaxon_prefect.runtime._one_process import LOCAL, _before_process
from polyaxon_prefect.runtime._outcome import (
    failed,
    finish_ttl,
    job_outcome,
    last_lines,
    process_message,
)
from polyaxon_prefect.runtime._prepared import PreparedJob
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.gpu._gpu_admit import check_gpu_capacity
from polyaxon_prefect.runtime.render._init_steps import run_init
from polyaxon_prefect.runtime.render._locate import locate_problems
from polyaxon_prefect.runtime.render._options import PrepareOptions
from polyaxon_prefect.runtime.render._render_run import render_run
from polyaxon_prefect.runtime.session._process import ProcessResult
from polyaxon_prefect.specs import Status
from polyaxon_prefect.tracking import METRICS_FILE, OUTPUTS_FILE

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile

__all__ = ["PreparedReplica", "PreparedReplicas", "execute_replicas", "prepare_replicas"]

SUCCESS_GRACE_SECONDS = 1.0
"""Once the job has succeeded, how long the other replicas may take to end by themselves
before they are stopped (a TF ps never ends by itself; a DDP worker ends right after the
master)."""
_POLL_SECONDS = 0.05
_TAIL_LINES = 10
_OUTPUT_VARS = (tracking.ENV_OUTPUTS_PATH, tracking.POLYAXON_ENV_OUTPUTS_PATH)


@dataclass(frozen=True)
class PreparedReplica:
    """One replica's process, prepared: its job (its container, via `render_run`) and the
    GPUs it sees (its ``CUDA_VISIBLE_DEVICES``: given when the op takes its GPUs, `admitted`)."""

    replica: Replica
    job: PreparedJob
    gpus: str

    @property
    def name(self) -> str:
        return self.replica.name


@dataclass(frozen=True)
class PreparedReplicas(PreparedJob):
    """A distributed op prepared for the local backend: the op's view is its main replica's
    (outputs, params, cache), ``replicas`` are the processes to start."""

    plan: ReplicaPlan | None = None
    replicas: tuple[PreparedReplica, ...] = ()


# ----------------------------------------------------------------------------- prepare


def prepare_replicas(
    loaded: LoadedPolyaxonfile,
    options: PrepareOptions = PrepareOptions(),
    launcher: Launcher = PROCESS,
    *,
    every_replica: bool | None = None,
) -> PreparedReplicas:
    """Prepare every replica of ``loaded``'s distributed run, like `prepare_job` a job, for
    ``launcher`` (default: processes on this machine).

    An MPI job's workers are left out (its launcher's ``mpirun`` starts every rank here, so
    ``mpirun`` must be installed) unless ``every_replica`` (default: where each process is a
    host of its own, containers), where the workers are processes of their own that
    ``mpirun`` in the launcher's reaches over the network.

    Raises:
        PolyaxonfileError: what `render_run` raises, located at the replica's section.
        NotEnoughGpusError: more GPUs requested than this machine has.
        UnsupportedFeatureError: an MPI job on a machine without ``mpirun``.
    """
    operation = loaded.operation
    component = operation.component
    assert component is not None  # a loaded operation has its component inlined
    plan = plan_replicas(component.run)
    if options.run_context is None:  # one run context for every replica
        name = operation.name or component.name or "job"
        options = dataclasses.replace(options, run_context=new_run_context(name))
    requests = {r.name: gpu_request(r) for r in plan.replicas}
    biggest = max(plan.replicas, key=lambda r: requests[r.name])
    path = ("component", "run", biggest.type, "container", "resources")
    check_gpu_capacity(list(requests.values()), path, loaded, list(requests))
    if every_replica is None:
        every_replica = launcher.separate_hosts
    launched = None if every_replica else LAUNCHED.get(plan.kind)
    by_spec: dict[int, PreparedJob] = {}
    replicas: list[PreparedReplica] = []
    for replica in plan.replicas:
        if launched is not None and replica.type not in launched:
            continue
        job = by_spec.get(id(replica.spec))
        if job is None:
            job = by_spec[id(replica.spec)] = _prepare_one(loaded, replica, options)
        own = _own_outputs(job, replica, plan)
        replicas.append(PreparedReplica(replica, own, ""))
    if launched is not None:
        check_mpirun(replicas[0].job.argv, replicas[0].job.env)
    op = _as_op(plan, tuple(replicas))
    specs = [getattr(one.replica.spec, "container", None) for one in replicas]
    names = [one.name for one in replicas]
    jobs = launcher.prepare(loaded, options, [one.job for one in replicas], specs, names)
    ready = tuple(
        dataclasses.replace(one, job=job) for one, job in zip(replicas, jobs, strict=True)
    )
    gpus = tuple(requests[r.name] for r in replicas)
    return dataclasses.replace(op, replicas=ready, gpu_requests=gpus)


def _as_op(plan: ReplicaPlan, replicas: tuple[PreparedReplica, ...]) -> PreparedReplicas:
    """The op: its main replica's job, with every replica's secrets and one cache key over
    all of them (a change to any replica is a different run)."""
    main = replicas[0].job
    fields = {f.name: getattr(main, f.name) for f in dataclasses.fields(PreparedJob)}
    jobs = list({id(r.job): r.job for r in replicas}.values())
    fields["secrets"] = tuple(dict.fromkeys(s for job in jobs for s in job.secrets))
    keys = [job.cache_key for job in jobs]
    if main.cache_key is not None and all(key is not None for key in keys):
        counts = ",".join(f"{g.type}={g.count}" for g in plan.groups)
        text = "|".join([plan.kind, counts, *(key or "" for key in keys)])
        fields["cache_key"] = hashlib.sha256(text.encode()).hexdigest()
    codes = list(dict.fromkeys(job.code_hash for job in jobs))
    if len(codes) > 1:  # replicas run other folders or programs: the op's code is all of them
        known = all(code is not None for code in codes)
        text = "|".join(code or "" for code in codes)
        fields["code_hash"] = hashlib.sha256(text.encode()).hexdigest() if known else None
    fields.update(run_kind=plan.kind, backend=LOCAL)
    return PreparedReplicas(**fields, plan=plan, replicas=replicas)


def _own_outputs(job: PreparedJob, replica: Replica, plan: ReplicaPlan) -> PreparedJob:
    """The main replica writes the op's outputs; any other one its own, under
    ``<run>/replicas/<name>/`` (same run, same params: only the outputs folder differs)."""
    if replica.name == plan.main.name:
        return job
    run = job.context
    context = dataclasses.replace(
        run, artifacts_root=run.run_path, project_name="replicas", uuid=replica.name
    )
    env = dict(job.env)
    env.update(dict.fromkeys(_OUTPUT_VARS, str(context.run_outputs_path)))
    return dataclasses.replace(job, context=context, env=env)


def _prepare_one(loaded: Any, replica: Replica, options: PrepareOptions) -> PreparedJob:
    """``replica``'s container prepared as a job's; its problems located at its section."""
    try:
        return render_run(loaded, options, run=replica.spec)
    except PolyaxonfileError as exc:
        if type(exc) not in (PolyaxonfileError, UnsupportedFeatureError):
            raise
        moved = [
            dataclasses.replace(
                p,
                path=(*p.path[:2], replica.type, *p.path[2:]),
                file=None,
                line=None,
                column=None,
            )
            if p.path[:2] == ("component", "run")
            else p
            for p in exc.problems
        ]
        raise type(exc)(locate_problems(moved, loaded)) from None


# ----------------------------------------------------------------------------- execute


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports nobody listens on now (held open together, so the
    kernel cannot hand out the same one twice)."""
    with contextlib.ExitStack() as stack:
        sockets = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]


@dataclass
class _Ended:
    """How one replica's thread ended: its process's result, or why it could not start."""

    result: ProcessResult | None = None
    error: str | None = None

    @property
    def status(self) -> str:
        if self.result is None:
            return Status.FAILED
        if self.result.succeeded:
            return Status.SUCCEEDED
        return Status.STOPPED if self.result.cancelled else Status.FAILED


def execute_replicas(
    prepared: PreparedJob,
    *,
    on_line: Callable[[str, str], None] | None = None,
    cancel_event: threading.Event | None = None,
    launcher: Launcher = PROCESS,
) -> RunResult:
    """Start every replica of ``prepared`` (a `PreparedReplicas`, prepared for ``launcher``)
    and wait for the job's end.

    Never raises for what the replicas did: the result is the main replica's (`job_outcome`)
    when the job succeeded, else ``failed`` naming the replica that failed it, its exit and
    its last lines, or ``stopped`` when ``cancel_event`` was set. No replica outlives it.
    """
    if not isinstance(prepared, PreparedReplicas) or prepared.plan is None:
        raise TypeError("replicas run what `prepare_replicas` prepared")
    ended = _before_replicas(prepared, on_line, cancel_event)
    if ended is None:
        jobs = [one.job for one in prepared.replicas]
        ended = launcher.ready(jobs, on_line, cancel_event)
    if ended is None:
        ended = _run_replicas(prepared, launcher, on_line, cancel_event)
    finish_ttl(prepared)
    return ended


def _before_replicas(
    prepared: PreparedReplicas,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult | None:
    """The main replica's directories and init steps (as a job's), then each other replica's
    folders and the init steps it does not share with the main one."""
    ended = _before_process(prepared, on_line, cancel_event)
    if ended is not None:
        return ended
    try:
        for one in prepared.replicas[1:]:
            context = one.job.context.make_dirs()
            for name in (OUTPUTS_FILE, METRICS_FILE):
                with contextlib.suppress(FileNotFoundError):
                    (context.run_outputs_path / name).unlink()
            if one.job.init and one.job.init != prepared.init:
                run_init(one.job, on_line, cancel_event)
    except InitStepError as exc:
        return failed(str(exc), prepared.secrets)
    except OSError as exc:
        return failed(f"cannot prepare the replicas' directories: {exc}", prepared.secrets)
    return None


Launches = dict[str, tuple[list[str], dict[str, str]]]
"""Each replica's argv and whole environment, by name."""


def _launch(
    prepared: PreparedReplicas, plan: ReplicaPlan, cluster: Cluster | None = None
) -> Launches:
    """Each replica's argv and environment: its job's, the operator's contract on loopback
    ports (or on ``cluster``'s hosts: containers on their run's network), its GPUs. An MPI
    launcher gets ``mpirun`` over the hostfile (written here)."""
    if cluster is None:
        cluster = loopback_cluster(plan, free_ports(plan.size), prepared.context.uuid)
    wrap: Callable[[list[str]], list[str]] = list
    launchers = LAUNCHED.get(plan.kind, ())
    if launchers:
        hostfile = prepared.context.run_path / "replicas" / "hostfile"
        hostfile.parent.mkdir(parents=True, exist_ok=True)
        content = mpi_hostfile(plan, cluster)
        hostfile.write_text(content, encoding="utf-8")
        cluster = dataclasses.replace(cluster, hostfile=str(hostfile))
        slots = sum(int(line.rsplit("=", 1)[1]) for line in content.splitlines())

        def wrap(argv: list[str]) -> list[str]:
            return mpirun_argv(argv, hostfile, slots)

    launch: Launches = {}
    for one in prepared.replicas:  # locally only the launcher runs; in containers, all
        env = {
            **one.job.env,
            **replica_env(plan, one.replica, cluster),
            **torchrun_env(plan, one.replica),
            **visible_env(one.gpus.split(",") if one.gpus else []),
        }
        if one.replica.type in launchers:
            launch[one.name] = (wrap(list(one.job.argv)), launcher_env(env))
        else:
            launch[one.name] = (list(one.job.argv), env)
    return launch


class _Replicas:
    """The replicas' threads, the queue their lines and ends come through, the shared stop."""

    def __init__(
        self,
        prepared: PreparedReplicas,
        on_line: Callable[[str, str], None] | None,
        launcher: Launcher,
    ) -> None:
        self.prepared = prepared
        self.on_line = on_line
        self.launcher = launcher
        self.stop = threading.Event()
        self.events: queue.Queue[tuple[str, str, str | None]] = queue.Queue()
        self.ended: dict[str, _Ended] = {}
        self.threads: list[threading.Thread] = []

    def start(self, launch: Launches) -> None:
        for one in self.prepared.replicas:
            argv, env = launch[one.name]
            thread = threading.Thread(
                target=self._run, args=(one, argv, env), name=f"replica-{one.name}"
            )
            thread.daemon = True
            self.threads.append(thread)
            thread.start()

    def _run(self, one: PreparedReplica, argv: list[str], env: Mapping[str, str]) -> None:
        prefix = f"[{one.name}] "

        def relay(stream: str, line: str) -> None:
            self.events.put((stream, prefix + line, None))

        try:
            result = run_launched(
                self.launcher,
                Launch(one.job, argv, env, name=one.name),
                timeout=one.job.timeout,
                on_line=relay,
                secrets=self.prepared.secrets,
                cancel_event=self.stop,
                log_path=self.prepared.context.run_artifacts_path / "logs" / f"{one.name}.log",
            )
            self.ended[one.name] = _Ended(result=result)
        except (RunRuntimeError, OSError) as exc:
            self.ended[one.name] = _Ended(error=str(exc))
        finally:
            self.events.put(("end", one.name, None))

    def alive(self) -> bool:
        return any(thread.is_alive() for thread in self.threads)

    def next_event(self) -> tuple[str, str, str | None] | None:
        try:
            return self.events.get(timeout=_POLL_SECONDS)
        except queue.Empty:
            return None

    def stop_all(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()


def _run_replicas(
    prepared: PreparedReplicas,
    launcher: Launcher,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult:
    plan = prepared.plan
    assert plan is not None
    group = _Replicas(prepared, on_line, launcher)
    try:
        cluster = launcher.cluster(plan, prepared.context.uuid, on_line)
        group.start(_launch(prepared, plan, cluster))
        decision, cancelled = _wait(group, plan, cancel_event)
    finally:  # an interrupt (Ctrl-C, a task timeout) must not leave a replica behind
        group.stop_all()
        launcher.close()
    while (event := group.next_event()) is not None:  # lines that came after the decision
        _relay(event, on_line)
    return _outcome(prepared, plan, group.ended, decision, cancelled)


def _relay(event: tuple[str, str, str | None], on_line: Callable[[str, str], None] | None) -> None:
    stream, text, _ = event
    if stream != "end" and on_line is not None:
        on_line(stream, text)


def _wait(
    group: _Replicas, plan: ReplicaPlan, cancel_event: threading.Event | None
) -> tuple[Decision, bool]:
    """Relay lines until the job is decided (then give the rest `SUCCESS_GRACE_SECONDS` after
    a success, none after a failure) or cancelled from outside."""
    decision = Decision("running")
    decided_at: float | None = None
    while group.alive() or not group.events.empty():
        if cancel_event is not None and cancel_event.is_set():
            return decision, True
        if decided_at is not None and (
            decision.state == "failed" or time.monotonic() - decided_at >= SUCCESS_GRACE_SECONDS
        ):
            break
        event = group.next_event()
        if event is None:
            continue
        _relay(event, group.on_line)
        if event[0] == "end" and decided_at is None:
            statuses = {name: ended.status for name, ended in group.ended.items()}
            decision = decide(plan, statuses)
            if decision.state != "running":
                decided_at = time.monotonic()
                if decision.state == "failed":
                    group.stop.set()
    if decision.state == "running":  # every process ended without the deciders succeeding
        statuses = {name: ended.status for name, ended in group.ended.items()}
        decision = decide(plan, statuses)
    return decision, False


def _outcome(
    prepared: PreparedReplicas,
    plan: ReplicaPlan,
    ended: Mapping[str, _Ended],
    decision: Decision,
    cancelled: bool,
) -> RunResult:
    main = ended.get(prepared.replicas[0].name)
    if cancelled:
        process = main.result if main is not None else None
        message = "cancelled: every replica was stopped"
        return RunResult(Status.STOPPED, message=message, process=process)
    if decision.state == "succeeded" and main is not None and main.result is not None:
        return job_outcome(prepared, main.result)
    name = decision.replica or plan.main.name
    culprit = ended.get(name, _Ended(error="did not run"))
    if culprit.result is None:
        return failed(f"replica `{name}` could not start: {culprit.error}", prepared.secrets)
    message = f"replica `{name}` {process_message(culprit.result, prepared.timeout)}"
    tail = last_lines(culprit.result.stdout_tail, _TAIL_LINES)
    if tail and not culprit.result.stderr_tail:
        message += "; last lines of its output:\n" + "\n".join(tail)
    return dataclasses.replace(failed(message, prepared.secrets), process=culprit.result)
