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
import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.kubernetes import (
    PoolSettings,
    api_target,
    apply_pool_settings,
    port_forward_command,
    run_selector,
)
from polyaxon_prefect.prefect.kubernetes._cluster_session import (
    ApiError,
    ClusterSession,
    LineCallback,
    poll_seconds,
    run_apart,
)
from polyaxon_prefect.prefect.kubernetes._kubernetes import (
    ClusterExecutor,
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
    register_executor,
    service_settings,
    service_url,
    stop_requested,
)
from polyaxon_prefect.specs import Status

if TYPE_CHECKING:
    from prefect_kubernetes.credentials import KubernetesCredentials

    from polyaxon_prefect.loading import LoadedPolyaxonfile

__all__ = ["ServiceClusterExecutor", "register_service_executors", "serve_on_cluster"]


@dataclass(frozen=True)
class ServiceClusterExecutor(ClusterExecutor):
    """Runs a ``kind: service`` op as a Deployment and a Service on the ``backend``."""

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
        prepared = super().prepare(loaded, dataclasses.replace(options, run_context=context))
        return dataclasses.replace(prepared, run_kind="service")

    def submit(self, prepared: PreparedManifests, **options: Any) -> RunResult:
        return serve_on_cluster(prepared, **options)


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
    serving = _Serving(
        prepared=prepared,
        manifests=manifests,
        credentials=credentials or load_credentials(),
        on_line=on_line or (lambda _stream, _line: None),
        cancel_event=cancel_event or threading.Event(),
        interval=poll_seconds(poll_interval),
    )
    return run_apart(serving.run(), "k8s-service")


@dataclass(kw_only=True)
class _Serving(ClusterSession):
    announced: bool = False

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
        except ApiError as exc:
            message = str(exc)
        finally:
            await self._delete_all()
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
            error = self._diagnose(str(metadata.get("name")), status)
            if error is not None and error.ends_run:
                fatal = error.line
        return fatal
