"""A ``kind: service`` op on Kubernetes (``--backend native`` or ``kubeflow``): a Deployment and
a ClusterIP Service, kept while the op runs, deleted when it ends.

The manifests are `polyaxon_prefect.kubernetes.build_manifests`' (a service is the same on both
backends: no operator is involved); the work pool's settings fill what the file leaves open, as
for every cluster run (`apply_pool_settings`). Once created, the run prints the ``kubectl
port-forward`` line that reaches the service from this machine (there is no Polyaxon proxy) and
the URL it then answers at, and watches the pods (prefect-kubernetes' ``diagnose_k8s_pod``: an
image that cannot be pulled ends the op at once). A service never ends on its own here: it is
stopped (the cancel event: Ctrl-C, ``stop``, its DAG's other ops done), or at
``termination.timeout`` (Polyaxon stops it: ``stopped``), and both objects are deleted in every
ending, a failed creation included.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.kubernetes import (
    ApiTarget,
    Backend,
    PoolSettings,
    api_error_message,
    api_target,
    apply_pool_settings,
    pod_diagnosis_message,
    port_forward_command,
    run_selector,
)
from polyaxon_prefect.prefect.kubernetes._kubernetes import (
    POLL_ENV,
    load_credentials,
    pool_settings,
)
from polyaxon_prefect.runtime import (
    PreparedManifests,
    PrepareOptions,
    RunResult,
    ServiceContext,
    announce_serving,
    new_run_context,
    prepare_cluster,
    register_executor,
    service_settings,
    service_url,
    stop_requested,
)
from polyaxon_prefect.specs import Status

if TYPE_CHECKING:
    from prefect_kubernetes.credentials import KubernetesCredentials

    from polyaxon_prefect.loading import LoadedPolyaxonfile
    from polyaxon_prefect.runtime import PreparedJob

__all__ = ["ServiceClusterExecutor", "register_service_executors", "serve_on_cluster"]

LineCallback = Callable[[str, str], None]
_FATAL = frozenset({"ImagePullError"})


@dataclass(frozen=True)
class ServiceClusterExecutor:
    """Runs a ``kind: service`` op as a Deployment and a Service on the ``backend``."""

    backend: Backend

    def prepare(
        self, loaded: LoadedPolyaxonfile, options: PrepareOptions = PrepareOptions()
    ) -> PreparedManifests:
        """The manifests, every template rendered with the pod's ``globals`` (``ports``,
        ``base_url`` included); a container without an image and a connection that cannot be
        honoured are located problems here, before anything is created."""
        operation = loaded.operation
        component = operation.component
        name = operation.name or (component.name if component else None) or "service"
        base = options.run_context or new_run_context(name)
        # the pool's namespace is known when the run starts, after rendering: `default` then
        namespace = base.namespace or operation.namespace or "default"
        base = dataclasses.replace(base, namespace=namespace)
        settings = service_settings(loaded, options.params or {}, base)
        context = ServiceContext.of(base, settings.ports, settings.rewrite_path)
        prepared = prepare_cluster(
            loaded, self.backend, dataclasses.replace(options, run_context=context)
        )
        return dataclasses.replace(prepared, run_kind="service")

    def execute(
        self,
        prepared: PreparedJob,
        *,
        on_line: LineCallback | None = None,
        cancel_event: threading.Event | None = None,
    ) -> RunResult:
        assert isinstance(prepared, PreparedManifests)  # what `prepare` made
        return serve_on_cluster(prepared, on_line=on_line, cancel_event=cancel_event)


def register_service_executors() -> None:
    """The service executor of both Kubernetes backends (repeatable)."""
    for backend in ("kubeflow", "native"):
        register_executor("service", backend, ServiceClusterExecutor(backend))


def serve_on_cluster(
    prepared: PreparedManifests,
    *,
    on_line: LineCallback | None = None,
    cancel_event: threading.Event | None = None,
    credentials: KubernetesCredentials | None = None,
    settings: PoolSettings | None = None,
    poll_interval: float | None = None,
) -> RunResult:
    """Create the service's objects, keep them until the op is stopped or times out, delete
    them; never raises for what the cluster did (an API error is a failed result)."""
    settings = settings if settings is not None else pool_settings()
    manifests = apply_pool_settings(prepared.manifests, settings, namespace=prepared.namespace)
    interval = poll_interval if poll_interval is not None else float(os.environ.get(POLL_ENV, 2))
    serving = _Serving(
        prepared=prepared,
        manifests=manifests,
        credentials=credentials or load_credentials(),
        on_line=on_line or (lambda _stream, _line: None),
        cancel_event=cancel_event or threading.Event(),
        interval=max(interval, 0.01),
    )
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="k8s-service") as pool:
        return pool.submit(context.run, asyncio.run, serving.run()).result()


class _ApiError(Exception):
    def __init__(self, status: int | None, text: str) -> None:
        super().__init__(text)
        self.status = status


def _message(body: bytes | str | None, reason: object) -> str:
    try:
        status = json.loads(body or "{}")
    except (TypeError, ValueError):
        status = None
    if isinstance(status, dict) and status.get("message"):
        return str(status["message"])
    text = body.decode(errors="replace") if isinstance(body, bytes) else str(body or "")
    return text[:500] or str(reason or "")


@dataclass
class _Serving:
    prepared: PreparedManifests
    manifests: list[dict[str, Any]]
    credentials: KubernetesCredentials
    on_line: LineCallback
    cancel_event: threading.Event
    interval: float
    created: list[ApiTarget] = field(default_factory=list)
    clients: dict[str, Any] = field(default_factory=dict)
    diagnosed: set[str] = field(default_factory=set)
    announced: bool = False

    @property
    def namespace(self) -> str:
        return str(self.manifests[0]["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.manifests[0]["metadata"]["name"])

    async def run(self) -> RunResult:
        async with (
            self.credentials.get_client("apps") as apps,
            self.credentials.get_client("core") as core,
        ):
            self.clients = {"apps": apps, "core": core}
            return await self._run()

    async def _run(self) -> RunResult:
        status, message = Status.FAILED, ""
        try:
            for manifest in self.manifests:
                await self._call("create", api_target(manifest), manifest)
            names = ", ".join(t.describe() for t in self.created)
            self.on_line("stdout", f"created {names} in namespace `{self.namespace}`")
            self._reach()
            status, message = await self._watch()
        except _ApiError as exc:
            message = str(exc)
        finally:
            for target in reversed(self.created):
                try:
                    await self._call("delete", target)
                    self.on_line("stderr", f"deleted {target.describe()}")
                except _ApiError as exc:
                    if exc.status != 404:
                        self.on_line("stderr", str(exc))
        return RunResult(status, message=message)

    def _reach(self) -> None:
        """Print how to reach the service: the port-forward line, then its URL."""
        context = self.prepared.context
        ports = list(context.ports) if isinstance(context, ServiceContext) else []
        if not ports:
            return
        command = port_forward_command(self.namespace, self.name, ports)
        rewrite = isinstance(context, ServiceContext) and "/rewrite-" in context.base_url
        path = context.base_url if isinstance(context, ServiceContext) else ""
        url = service_url("127.0.0.1", tuple(ports), path, rewrite_path=rewrite)
        self.on_line("stdout", f"reach service `{self.prepared.op_name}`: {command}")
        self.on_line("stdout", f"then open {url}")

    async def _watch(self) -> tuple[Status, str]:
        timeout = self.prepared.timeout
        deadline = time.monotonic() + timeout if timeout else None
        op = self.prepared.op_name
        while True:
            if self.cancel_event.is_set() or stop_requested():
                return Status.STOPPED, f"service `{op}` was stopped; deleted what it created"
            if deadline is not None and time.monotonic() >= deadline:
                return (
                    Status.STOPPED,
                    f"service `{op}` was stopped at its termination.timeout ({timeout:g}s); "
                    "deleted what it created",
                )
            fatal = await self._pods()
            if fatal:
                return Status.FAILED, fatal
            await asyncio.sleep(self.interval)

    async def _pods(self) -> str | None:
        """Diagnose the run's pods; the first one running announces the service (a DAG's
        dependents may start); the message of a failure that would never resolve, if any."""
        from prefect_kubernetes.diagnostics import diagnose_k8s_pod

        selector = run_selector(self.manifests)
        key, _, value = selector.partition("=")
        listing = await self._call("list_pods", None, selector=selector)
        fatal = None
        for pod in listing.get("items") or []:
            metadata = pod.get("metadata") or {}
            if (metadata.get("labels") or {}).get(key) != value:
                continue
            status = pod.get("status") or {}
            if status.get("phase") == "Running" and not self.announced:
                self.announced = True
                announce_serving(self.prepared.context.uuid)
            diagnosis = diagnose_k8s_pod(status)
            if diagnosis is None or diagnosis.level.value != "error":
                continue
            line = pod_diagnosis_message(
                str(metadata.get("name")),
                diagnosis.category.value,
                diagnosis.summary,
                diagnosis.detail,
                diagnosis.resolution,
            )
            if line not in self.diagnosed:
                self.diagnosed.add(line)
                self.on_line("stderr", line)
            if diagnosis.category.value in _FATAL:
                fatal = line
        return fatal

    async def _call(
        self,
        verb: str,
        target: ApiTarget | None,
        body: dict[str, Any] | None = None,
        **extra: str,
    ) -> dict[str, Any]:
        from aiohttp import ClientError
        from kubernetes_asyncio.client.rest import ApiException

        ns = self.namespace
        raw = {"_preload_content": False}
        shown = target or ApiTarget("Pod", "pods", plural="pods")
        try:
            if verb == "list_pods":
                response = await self.clients["core"].list_namespaced_pod(
                    ns, label_selector=extra["selector"], **raw
                )
            else:
                assert target is not None
                api, noun = (
                    (self.clients["apps"], "deployment")
                    if target.kind == "Deployment"
                    else (self.clients["core"], "service")
                )
                if verb == "create":
                    response = await getattr(api, f"create_namespaced_{noun}")(ns, body, **raw)
                else:
                    response = await getattr(api, f"delete_namespaced_{noun}")(
                        target.name, ns, propagation_policy="Background", **raw
                    )
            data = await response.read()
        except ApiException as exc:
            text = api_error_message(
                exc.status, _message(exc.body, exc.reason), shown, verb=verb, namespace=ns
            )
            raise _ApiError(exc.status, text) from None
        except (TimeoutError, ClientError, OSError) as exc:
            raise _ApiError(
                None, api_error_message(None, str(exc), shown, verb=verb, namespace=ns)
            ) from None
        if not 200 <= response.status < 300:
            text = api_error_message(
                response.status,
                _message(data, response.reason),
                shown,
                verb="list" if verb == "list_pods" else verb,
                namespace=ns,
            )
            raise _ApiError(response.status, text)
        if verb == "create" and target is not None:
            self.created.append(target)
        return json.loads(data or b"{}")
