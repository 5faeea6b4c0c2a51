"""The ``kubeflow`` and ``native`` executors: a job or distributed op submitted to Kubernetes.

Its API clients come from prefect-kubernetes' `KubernetesCredentials` (a named block,
``KUBECONFIG``, the in-cluster service account or ``~/.kube/config``, in that order), its calls,
deletions and pod diagnoses (prefect-kubernetes' own ``diagnose_k8s_pod``) from
`_cluster_session.ClusterSession`, shared with a service's; what it decides (which API, the
pool's settings, when a run is over, what an error means) is pure, in
`polyaxon_prefect.kubernetes._cluster`.

A run: the manifests (`runtime.prepare_cluster`) get the work pool's settings where
the Polyaxonfile sets none (namespace, service account, image pull secrets, node selector,
tolerations: the pool's base job template, then the deployment's and the flow run's job
variables), are created in order, then watched until the resource's conditions (Kubeflow) or
the Jobs (native) say the run is over, while every replica pod's log streams into the run with
a ``[worker-1]`` prefix and every pod failure is diagnosed. What was created is deleted when
the op is cancelled, times out or fails here (an image that cannot be pulled never starts), and
for the native backend when the run ends (its parameter servers never exit on their own).
A job's Job is deleted whatever the ending (with its pod: ``propagationPolicy: Background``).

Scheduling: the Kueue label and a ``podFailurePolicy`` (`kubernetes.schedule_manifests`), else
GPU-class slots (`_gpu_slots`); pending pods and disruptions (`_kubernetes_scheduling`); a run
a disruption failed submitted again (`_Submission._resubmit`).

A job's pod prints its outputs and metrics in one block at the end of its log
(`polyaxon_prefect.kubernetes.HandbackParser` reads it out of the stream, so users never see
it); once the run is over they are written into the run on this machine
(`runtime.handback_outcome`), as a local job leaves them.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.kubernetes import (
    KUEUE_QUEUE_LABEL,
    NATIVE_KINDS,
    ApiTarget,
    Backend,
    Handback,
    HandbackParser,
    PoolSettings,
    RunState,
    api_target,
    apply_pool_settings,
    disruption_budget,
    exit_diagnosis,
    job_variables,
    kubeflow_state,
    native_state,
    replica_name,
    resubmission,
    run_selector,
    schedule_manifests,
)
from polyaxon_prefect.prefect.kubernetes._cluster_session import (
    POLL_ENV,
    ApiError,
    ClusterSession,
    LineCallback,
    poll_seconds,
    run_apart,
)
from polyaxon_prefect.prefect.kubernetes._gpu_slots import in_gpu_slots
from polyaxon_prefect.prefect.kubernetes._gpu_wait import pod_wait_callbacks
from polyaxon_prefect.prefect.kubernetes._kubernetes_scheduling import PodScheduling
from polyaxon_prefect.runtime import PrepareOptions, handback_outcome
from polyaxon_prefect.runtime._executors import register_executor
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.cluster._cluster_prepare import PreparedManifests, prepare_cluster
from polyaxon_prefect.runtime.session._session import stop_requested
from polyaxon_prefect.specs import KUBEFLOW_KINDS, Status

if TYPE_CHECKING:
    from prefect_kubernetes.credentials import KubernetesCredentials

    from polyaxon_prefect.runtime import PreparedJob
    from polyaxon_prefect.specs import LoadedPolyaxonfile

__all__ = [
    "CREDENTIALS_ENV",
    "POLL_ENV",
    "ClusterExecutor",
    "load_credentials",
    "pool_settings",
    "register_cluster_executors",
    "run_on_cluster",
]

CREDENTIALS_ENV = "POLYAXON_PREFECT_K8S_CREDENTIALS"
"""The name of a prefect-kubernetes ``KubernetesCredentials`` block to use."""

_IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
_DRAIN_SECONDS = 5.0
_DELETE_WAIT_SECONDS = 60.0  # a new attempt waits so long for the previous one's objects


@dataclass(frozen=True)
class ClusterExecutor:
    """Runs a distributed op's manifests on the ``backend`` (``kubeflow`` or ``native``)."""

    backend: Backend

    def prepare(
        self, loaded: LoadedPolyaxonfile, options: PrepareOptions = PrepareOptions()
    ) -> PreparedManifests:
        return prepare_cluster(loaded, self.backend, options)

    def execute(
        self,
        prepared: PreparedJob,
        *,
        on_line: LineCallback | None = None,
        cancel_event: threading.Event | None = None,
    ) -> RunResult:
        assert isinstance(prepared, PreparedManifests)  # what `prepare` made
        return self.submit(prepared, on_line=on_line, cancel_event=cancel_event)

    def submit(self, prepared: PreparedManifests, **options: Any) -> RunResult:
        """The manifests run to their end (`run_on_cluster`, given ``execute``'s options); a
        subclass running other objects on the cluster says how."""
        return run_on_cluster(prepared, **options)


def register_cluster_executors() -> None:
    """Register the ``kubeflow`` executor for every Kubeflow kind and the ``native`` one for
    the kinds that run without an operator (not ``mpijob``, whose launcher needs it): called
    by the dispatcher for a run on a Kubernetes backend, so a local run never loads this
    module; calling it again changes nothing."""
    for kind in sorted(KUBEFLOW_KINDS):
        register_executor(kind, "kubeflow", ClusterExecutor("kubeflow"))
    for kind in sorted(NATIVE_KINDS):
        register_executor(kind, "native", ClusterExecutor("native"))
    for backend in ("kubeflow", "native"):  # a job is one batch/v1 Job on either
        register_executor("job", backend, ClusterExecutor(backend))


def load_credentials() -> KubernetesCredentials:
    """The named block (``POLYAXON_PREFECT_K8S_CREDENTIALS``), else ``KUBECONFIG``'s current
    context, else prefect-kubernetes' default (in-cluster, then ``~/.kube/config``)."""
    from prefect_kubernetes.credentials import KubernetesClusterConfig, KubernetesCredentials

    name = os.environ.get(CREDENTIALS_ENV)
    if name:
        loaded: KubernetesCredentials = KubernetesCredentials.load(name)
        return loaded
    path = (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0]
    if path:
        return KubernetesCredentials(cluster_config=KubernetesClusterConfig.from_file(Path(path)))
    return KubernetesCredentials()


def pool_settings() -> PoolSettings:
    """The work pool's and deployment's settings for the flow run this runs in: the pool's
    base job template defaults, overridden by the deployment's job variables, then the flow
    run's. Outside a deployment's flow run: none (plus the pod's own namespace in a cluster)."""
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    template: dict[str, Any] = {}
    deployment_variables: dict[str, Any] = {}
    if flow_run is not None and (flow_run.work_pool_name or flow_run.deployment_id):
        with get_client(sync_client=True) as client:
            if flow_run.work_pool_name:
                template = client.read_work_pool(flow_run.work_pool_name).base_job_template
            if flow_run.deployment_id:
                deployment = client.read_deployment(flow_run.deployment_id)
                deployment_variables = dict(deployment.job_variables or {})
    run_variables = flow_run.job_variables if flow_run is not None else None
    variables = job_variables(template, deployment_variables, run_variables)
    if not variables.get("namespace") and _IN_CLUSTER_NAMESPACE.is_file():
        variables["namespace"] = _IN_CLUSTER_NAMESPACE.read_text().strip()
    return PoolSettings.from_variables(variables)


def run_on_cluster(
    prepared: PreparedManifests,
    *,
    on_line: LineCallback | None = None,
    cancel_event: threading.Event | None = None,
    credentials: KubernetesCredentials | None = None,
    settings: PoolSettings | None = None,
    poll_interval: float | None = None,
) -> RunResult:
    """Submit ``prepared``'s manifests, watch them to the end, and say how the run ended.

    Never raises for what the cluster did: API errors and pod failures become a failed
    `RunResult` whose message says what to do. Runs its own event loop in a worker thread, so
    it can be called from synchronous code inside or outside a running loop.
    """
    settings = settings if settings is not None else pool_settings()
    manifests = schedule_manifests(
        apply_pool_settings(prepared.manifests, settings, namespace=prepared.namespace),
        settings.queue,
    )
    if credentials is None:
        from kubernetes_asyncio.config import ConfigException

        try:
            credentials = load_credentials()
        except (ConfigException, OSError, ValueError) as exc:
            return RunResult(Status.FAILED, message=_no_cluster(exc))
    said = on_line or (lambda _stream, _line: None)
    submission = _Submission(
        prepared=prepared,
        manifests=manifests,
        credentials=credentials,
        on_line=said,
        cancel_event=cancel_event or threading.Event(),
        interval=poll_seconds(poll_interval),
        scheduling=PodScheduling(said, pod_wait_callbacks(), disruption_budget(os.environ)),
    )
    return run_apart(in_gpu_slots(submission), "k8s-submit")


@dataclass(kw_only=True)
class _Submission(ClusterSession):
    scheduling: PodScheduling
    streams: dict[str, asyncio.Task[bool]] = field(default_factory=dict)
    ended_in_cluster: bool = False
    """The cluster said the run is over (so the operator, not this run, cleans up)."""
    parsers: dict[str, HandbackParser] = field(default_factory=dict)
    """The handback reader of each pod whose log is read (a job's pods)."""
    attempt: int = 1

    @property
    def kubeflow(self) -> bool:
        return api_target(self.manifests[0]).custom

    def say(self, text: str) -> None:
        self.on_line("stdout", text)

    async def run(self) -> RunResult:
        from kubernetes_asyncio.config import ConfigException

        try:
            async with (
                self.credentials.get_client("custom_objects") as custom,
                self.credentials.get_client("batch") as batch,
                self.credentials.get_client("core") as core,
            ):
                self.clients = {"custom": custom, "batch": batch, "core": core}
                return await self._run()
        except ConfigException as exc:  # before anything was created
            return RunResult(Status.FAILED, message=_no_cluster(exc))

    async def _owner(self) -> dict[str, Any] | None:
        """The flow run's own pod, when this runs in one: it owns what the run creates, so
        Kubernetes deletes the run's objects when the pod goes (a flow run cancelled from the
        UI, or a pod killed before this code could clean up)."""
        pod_name = os.environ.get("HOSTNAME")
        if not pod_name or not _IN_CLUSTER_NAMESPACE.is_file():
            return None
        if _IN_CLUSTER_NAMESPACE.read_text().strip() != self.namespace:
            return None  # owner references only work within one namespace
        try:
            pod = await self._call("read", ApiTarget("Pod", pod_name, plural="pods"))
        except ApiError as exc:
            self.on_line("stderr", f"the run's objects are not owned by its pod: {exc}")
            return None
        uid = (pod.get("metadata") or {}).get("uid")
        if not uid:
            return None
        return {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid}

    async def _run(self) -> RunResult:
        status, message = await self._submit_and_watch()
        result = RunResult(status, message=message)
        if self.prepared.handback is not None:
            result = handback_outcome(self.prepared, result, self._handback())
        return result

    def _handback(self) -> Handback | None:
        """The block of the pod that succeeded (a retried Job has several), else the last."""
        blocks = [p.result() for p in self.parsers.values()]
        found = [b for b in blocks if b is not None]
        succeeded = [b for b in found if b.exit_code == 0]
        chosen = succeeded or found
        return chosen[-1] if chosen else None

    async def _submit_and_watch(self) -> tuple[Status, str]:
        status, message = Status.FAILED, ""
        try:
            owner = await self._owner()
            if owner is not None:
                for manifest in self.manifests:
                    manifest["metadata"].setdefault("ownerReferences", []).append(owner)
            await self._create()
            status, message = await self._watch()
        except ApiError as exc:
            message = str(exc)
        finally:
            await self._drain()
            # a Kubeflow run the cluster ended is the operator's to clean (cleanPodPolicy, TTL)
            if self.created and not (self.kubeflow and self.ended_in_cluster):
                await self._delete_all()
        return status, message

    async def _create(self) -> None:
        for manifest in self.manifests:
            await self._call("create", api_target(manifest), manifest)
        names = ", ".join(t.describe() for t in self.created)
        again = f" (attempt {self.attempt})" if self.attempt > 1 else ""
        self.say(f"created {names} in namespace `{self.namespace}`{again}")
        labels = self.manifests[0].get("metadata", {}).get("labels") or {}
        if labels.get(KUEUE_QUEUE_LABEL):
            self.say(
                f"queued in Kueue LocalQueue `{labels[KUEUE_QUEUE_LABEL]}`: its pods start "
                "once Kueue admits the whole workload"
            )

    async def _watch(self) -> tuple[Status, str]:
        timeout = self.prepared.timeout
        deadline = time.monotonic() + timeout if timeout else None
        while True:
            if self.cancel_event.is_set() or stop_requested():
                return Status.STOPPED, "was cancelled; deleted what it created"
            if deadline is not None and time.monotonic() > deadline:
                return Status.FAILED, f"timed out after {timeout:g}s"
            fatal = await self._pods() or self.scheduling.judge()
            if fatal:
                return Status.FAILED, fatal
            state = await self._state()
            if state.done:
                await self._pods()  # the last pods' logs and diagnoses
                spent = self.scheduling.judge()
                if spent:
                    return Status.FAILED, spent
                if state.phase == "failed" and self.scheduling.attempt_disrupted:
                    await self._resubmit()  # taken away, not failed: on the disruption budget
                    continue
                self.ended_in_cluster = True
                if state.phase == "succeeded":
                    return Status.SUCCEEDED, state.message
                return Status.FAILED, self._failure(state)
            await asyncio.sleep(self.interval)

    async def _resubmit(self) -> None:
        """The run the cluster failed after taking a pod away, submitted again (same names,
        once the previous attempt's objects are gone), told where its outputs are."""
        handback = self.prepared.handback
        await self._delete_all()
        gone = list(self.created)
        self.created.clear()
        deadline = time.monotonic() + _DELETE_WAIT_SECONDS
        for target in gone:
            while time.monotonic() < deadline:
                try:
                    await self._call("read", target)
                except ApiError as exc:
                    if exc.status == 404:
                        break
                    raise
                await asyncio.sleep(self.interval)
        self.manifests = resubmission(
            self.manifests, handback.outputs_dir if handback is not None else None
        )
        self.attempt += 1
        self.scheduling.attempt_disrupted = False
        await self._create()

    def _failure(self, state: RunState) -> str:
        diagnoses = sorted(self.diagnosed)
        text = state.message or "the run failed"
        return "\n".join([text, *diagnoses]) if diagnoses else text

    async def _state(self) -> RunState:
        if self.kubeflow:
            obj = await self._call("read", self.created[0])
            return kubeflow_state(obj)
        jobs = [await self._call("read", t) for t in self.created if t.kind == "Job"]
        return native_state(self.prepared.run_kind, jobs)

    async def _pods(self) -> str | None:
        """Start streaming the logs of pods that have some, diagnose the ones in trouble;
        the message of a failure that would never resolve, if any."""
        selector = run_selector(self.manifests)
        key, _, value = selector.partition("=")
        listing = await self._call("list_pods", None, selector=selector)
        fatal = None
        pending: list[str] = []
        started = False
        for pod in listing.get("items") or []:
            if (pod.get("metadata", {}).get("labels") or {}).get(key) != value:
                continue  # not this run's (a selector the server did not apply)
            name = replica_name(pod)
            status = pod.get("status") or {}
            if status.get("phase") in ("Running", "Succeeded", "Failed"):
                self._stream(pod, name)
                started = True
            elif status.get("phase") == "Pending":
                reason = await self.scheduling.reason(pod, status, self._events)
                if reason:
                    pending.append(f"[{name}] {reason}")
            self.scheduling.saw(pod, name, status)
            error = self._diagnose(name, status)
            if error is None:
                exited = exit_diagnosis(name, status)
                if exited is not None:
                    self._say_once(exited)
            elif error.ends_run:
                fatal = error.line
        await self.scheduling.say_pending(sorted(pending), started)
        return fatal

    async def _events(self, pod: str) -> list[Mapping[str, Any]] | None:
        try:
            listing = await self._call("list_events", None, pod=pod)
        except ApiError:
            return None
        return list(listing.get("items") or [])

    def _stream(self, pod: Mapping[str, Any], name: str) -> None:
        pod_name = str(pod["metadata"]["name"])
        task = self.streams.get(pod_name)
        if task is not None and not (task.done() and task.result() is False):
            return
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        self.streams[pod_name] = asyncio.create_task(
            self._follow(pod_name, containers[0].get("name"), name)
        )

    async def _follow(self, pod: str, container: str | None, name: str) -> bool:
        from kubernetes_asyncio.client.rest import ApiException

        kwargs: dict[str, Any] = {"follow": True, "_preload_content": False}
        if container:
            kwargs["container"] = container
        handback = self.prepared.handback
        speaks = handback is not None and name == handback.replica  # the main pod's block
        parser = HandbackParser(handback.nonce) if handback is not None and speaks else None
        try:
            response = await self.clients["core"].read_namespaced_pod_log(
                pod, self.namespace, **kwargs
            )
            async for raw in response.content:
                text = raw.decode(errors="replace")
                lines = parser.feed(text) if parser is not None else [text.rstrip("\r\n")]
                for line in lines:
                    self.on_line("stdout", f"[{name}] {line.rstrip()}")
            for line in parser.close() if parser is not None else []:
                self.on_line("stdout", f"[{name}] {line.rstrip()}")
        except ApiException:
            return False  # not ready yet (container creating): tried again next round
        except (TimeoutError, OSError):
            return False
        if parser is not None:
            self.parsers[pod] = parser
        return True

    async def _drain(self) -> None:
        pending = [t for t in self.streams.values() if not t.done()]
        if pending:
            _done, still = await asyncio.wait(pending, timeout=_DRAIN_SECONDS)
            for task in still:
                task.cancel()


def _no_cluster(exc: BaseException) -> str:
    return (
        f"cannot reach a Kubernetes cluster: {exc}; hint: set KUBECONFIG, name a "
        f"KubernetesCredentials block in {CREDENTIALS_ENV}, or run in a pod with a service "
        "account (or run without `--backend` to run locally)"
    )
