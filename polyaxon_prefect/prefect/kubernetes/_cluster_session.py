"""What the cluster executors share: one op's objects on a cluster, from their creation to their
deletion (`ClusterSession`), run on an event loop of its own (`run_apart`).

A job or distributed op (`_kubernetes`) and a service (`_kubernetes_service`) talk to the API
server alike: every call's answer is plain JSON, every error a message that says what to do
(`polyaxon_prefect.kubernetes.api_error_message`), what was created is deleted in reverse
order, and a pod in trouble is diagnosed once (prefect-kubernetes' ``diagnose_k8s_pod``).
They differ in which objects they create, so in the API clients they open
(`ClusterSession.clients`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import os
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.kubernetes import ApiTarget, api_error_message, pod_diagnosis_message

if TYPE_CHECKING:
    from aiohttp import ClientResponse

    from polyaxon_prefect.runtime import PreparedManifests, RunResult

__all__ = [
    "POLL_ENV",
    "ApiError",
    "ClusterSession",
    "LineCallback",
    "PodError",
    "api_message",
    "poll_seconds",
    "run_apart",
]

POLL_ENV = "POLYAXON_PREFECT_K8S_POLL_INTERVAL"
"""Seconds between two reads of the run's status and pods (default 2)."""

_FATAL_DIAGNOSES = frozenset({"ImagePullError"})
"""Pod diagnoses that end the run at once (it would wait forever); others are reported and
waited on (a cluster autoscaler may still add the GPUs)."""
_PODS = ApiTarget("Pod", "pods", plural="pods")
_TYPED_APIS = {
    "Job": ("batch", "job"),
    "Pod": ("core", "pod"),
    "Deployment": ("apps", "deployment"),
}
"""A built-in kind's client (by its name in `ClusterSession.clients`) and its noun in the
client's method names; any other kind is a Service (``core``)."""

LineCallback = Callable[[str, str], None]


def poll_seconds(given: float | None) -> float:
    """``given``, else ``POLYAXON_PREFECT_K8S_POLL_INTERVAL``, else 2 seconds (never under
    10 ms: the watch loop would spin)."""
    interval = given if given is not None else float(os.environ.get(POLL_ENV, 2))
    return max(interval, 0.01)


def run_apart(session: Coroutine[Any, Any, RunResult], thread_name: str) -> RunResult:
    """``session`` run to its end on its own event loop in a worker thread (with this
    thread's context variables), so it can be awaited from synchronous code inside or outside
    a running loop."""
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=thread_name) as pool:
        return pool.submit(context.run, asyncio.run, session).result()


@dataclass(frozen=True)
class PodError:
    """prefect-kubernetes' diagnosis of a pod in error, as one line."""

    line: str
    ends_run: bool
    """The run cannot recover (`_FATAL_DIAGNOSES`): it ends at once."""


@dataclass(kw_only=True)
class ClusterSession:
    """One op's objects on the cluster: created with `_call`, deleted with `_delete_all`.

    ``clients`` (by name: ``custom``, ``batch``, ``apps``, ``core``) are opened by the
    subclass's ``run``: those of the objects it creates.
    """

    prepared: PreparedManifests
    manifests: list[dict[str, Any]]
    credentials: Any
    on_line: LineCallback
    cancel_event: threading.Event
    interval: float
    created: list[ApiTarget] = field(default_factory=list)
    clients: dict[str, Any] = field(default_factory=dict)
    diagnosed: set[str] = field(default_factory=set)
    """Every diagnosis said (each is said once, however often the pods are read)."""

    @property
    def namespace(self) -> str:
        return str(self.manifests[0]["metadata"]["namespace"])

    def _diagnose(self, name: str, status: dict[str, Any]) -> PodError | None:
        """The error prefect-kubernetes diagnoses in the pod ``name``, said once (a
        `pod_diagnosis_message` line on stderr); None for a pod in no error."""
        from prefect_kubernetes.diagnostics import diagnose_k8s_pod

        diagnosis = diagnose_k8s_pod(status)
        if diagnosis is None or diagnosis.level.value != "error":
            return None
        line = pod_diagnosis_message(
            name,
            diagnosis.category.value,
            diagnosis.summary,
            diagnosis.detail,
            diagnosis.resolution,
        )
        self._say_once(line)
        return PodError(line, diagnosis.category.value in _FATAL_DIAGNOSES)

    def _say_once(self, line: str) -> None:
        if line not in self.diagnosed:
            self.diagnosed.add(line)
            self.on_line("stderr", line)

    async def _delete_all(self) -> None:
        for target in reversed(self.created):
            try:
                await self._call("delete", target)
                self.on_line("stderr", f"deleted {target.describe()}")
            except ApiError as exc:
                if exc.status != 404:
                    self.on_line("stderr", str(exc))

    async def _call(
        self,
        verb: str,
        target: ApiTarget | None,
        body: dict[str, Any] | None = None,
        **extra: str,
    ) -> dict[str, Any]:
        """One API call, its answer as plain JSON; an `ApiError` saying what went wrong."""
        from aiohttp import ClientError
        from kubernetes_asyncio.client.rest import ApiException

        ns = self.namespace
        raw = {"_preload_content": False}  # plain JSON back, not the client's models
        shown = target or _PODS
        said = {"list_pods": "list", "list_events": "list"}.get(verb, verb)
        try:
            if verb == "list_pods":
                response = await self.clients["core"].list_namespaced_pod(
                    ns, label_selector=extra["selector"], **raw
                )
            elif verb == "list_events":
                response = await self.clients["core"].list_namespaced_event(
                    ns, field_selector=f"involvedObject.name={extra['pod']}", **raw
                )
            else:
                assert target is not None
                response = await self._dispatch(verb, target, body, ns, raw)
            data = await response.read()
        except ApiException as exc:  # raised by the client before a response (or with one)
            message = api_message(exc.body, exc.reason)
            text = api_error_message(exc.status, message, shown, verb=said, namespace=ns)
            raise ApiError(exc.status, text) from None
        except (TimeoutError, ClientError, OSError) as exc:
            text = api_error_message(None, str(exc), shown, verb=said, namespace=ns)
            raise ApiError(None, text) from None
        if not 200 <= response.status < 300:
            message = api_message(data, response.reason)
            text = api_error_message(response.status, message, shown, verb=said, namespace=ns)
            raise ApiError(response.status, text)
        if verb == "create" and target is not None:
            self.created.append(target)
        return json.loads(data or b"{}")

    async def _dispatch(
        self,
        verb: str,
        target: ApiTarget,
        body: dict[str, Any] | None,
        ns: str,
        raw: dict[str, Any],
    ) -> ClientResponse:
        """``verb`` (``create``, ``read``, ``delete``) ``target`` with the client of its API:
        by its kind (`_TYPED_APIS`), else ``custom`` for a custom resource (a Kubeflow job)."""
        typed = _TYPED_APIS.get(target.kind)
        if typed is None and target.custom:
            api = self.clients["custom"]
            where = (target.group, target.version, ns, target.plural)
            if verb == "create":
                return await api.create_namespaced_custom_object(*where, body, **raw)
            if verb == "read":
                return await api.get_namespaced_custom_object(*where, target.name, **raw)
            return await api.delete_namespaced_custom_object(
                *where, target.name, propagation_policy="Background", **raw
            )
        client, noun = typed or ("core", "service")
        api = self.clients[client]
        if verb == "create":
            return await getattr(api, f"create_namespaced_{noun}")(ns, body, **raw)
        if verb == "read":
            return await getattr(api, f"read_namespaced_{noun}")(target.name, ns, **raw)
        return await getattr(api, f"delete_namespaced_{noun}")(
            target.name, ns, propagation_policy="Background", **raw
        )


def api_message(body: bytes | str | None, reason: object) -> str:
    """The ``message`` of a Kubernetes ``Status`` body, else the body or HTTP reason."""
    try:
        status = json.loads(body or "{}")
    except (TypeError, ValueError):
        status = None
    if isinstance(status, dict) and status.get("message"):
        return str(status["message"])
    text = body.decode(errors="replace") if isinstance(body, bytes) else str(body or "")
    return text[:500] or str(reason or "")


class ApiError(Exception):
    """An API call that failed; ``status`` is its HTTP status (None: no answer)."""

    def __init__(self, status: int | None, text: str) -> None:
        super().__init__(text)
        self.status = status
