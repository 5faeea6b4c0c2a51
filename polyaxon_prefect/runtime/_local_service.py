"""A ``kind: service`` op on this machine: a managed long-running process with a URL.

Polyaxon runs a service (TensorBoard, a notebook, any server with ``ports``) as a pod behind
its proxy at ``globals.base_url`` (``/services/v1/<namespace>/<owner>/<project>/runs/<uuid>``,
``/rewrite-services/v1/...`` when ``rewritePath`` asks the proxy to strip it). Locally there is
no proxy, so:

* ``globals.ports`` are the declared ports, each kept when it is free on this machine, else
  replaced by a free one (two TensorBoards both ask for 6006), with a note; in a DAG a busy
  declared port fails the op instead (its dependents reach it at the port it declares, and
  would reach the other program); ``globals.base_url`` is
  Polyaxon's, so a component written for Polyaxon (``--path_prefix={{globals.base_url}}``)
  runs unchanged;
* its URL is ``http://127.0.0.1:<first port><base_url>/``, or ``http://127.0.0.1:<port>/``
  with ``rewritePath: true`` (the server expects requests at ``/``). ``isExternal`` only
  decides Polyaxon's auth proxy: there is none here, it is recorded and changes nothing.
  The URL is announced (one line) and written to ``<run>/service.json`` once the first port
  accepts connections (at once when the service has no port);
* the process runs until it exits, is stopped (Ctrl-C, ``polyaxon-prefect stop``, its DAG's
  other ops all ended: the cancel event) or reaches ``termination.timeout``. Polyaxon *stops*
  a service at its timeout ("stop a tensorboard after 12 hours"), so a timeout ends the op
  ``stopped`` here, not ``failed`` as a job's does. Its whole process group is stopped in
  every ending (`run_process`, whose groups the session's reaper also knows).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem, UnsupportedFeatureError
from polyaxon_prefect.loading import TemplateError, build_context, render_value
from polyaxon_prefect.runtime._context import RunContext, new_run_context
from polyaxon_prefect.runtime._errors import ProcessStartError
from polyaxon_prefect.runtime._launcher import PROCESS, Launch, Launcher, run_launched
from polyaxon_prefect.runtime._one_process import _before_process
from polyaxon_prefect.runtime._outcome import LOG_FILE, failed
from polyaxon_prefect.runtime._prepared import PreparedJob
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.render._locate import locate_problems
from polyaxon_prefect.runtime.render._options import PrepareOptions
from polyaxon_prefect.runtime.render._param_values import merge_params, template_params
from polyaxon_prefect.runtime.render._render_run import render_run
from polyaxon_prefect.specs import Status, service_run

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile

__all__ = [
    "SERVICE_FILE",
    "PreparedService",
    "ServiceContext",
    "ServiceSettings",
    "announce_serving",
    "base_url",
    "execute_service",
    "forget_serving",
    "on_serving",
    "prepare_service",
    "service_settings",
    "service_url",
]

SERVICE_FILE = "service.json"
"""Written in the run's directory once the service serves: its URL, ports and settings."""

LineCallback = Callable[[str, str], None]
_PROBE_SECONDS = 0.1
_RUN_PATH = ("component", "run")


_SERVING: dict[str, Callable[[], None]] = {}
_SERVING_LOCK = threading.Lock()


def on_serving(uuid: str, callback: Callable[[], None]) -> None:
    """Call ``callback`` (from the service's watcher thread) once the service of run ``uuid``
    serves: how a DAG learns that its service op's dependents may start."""
    with _SERVING_LOCK:
        _SERVING[uuid] = callback


def announce_serving(uuid: str) -> None:
    """The service of run ``uuid`` serves: call what `on_serving` registered for it."""
    with _SERVING_LOCK:
        callback = _SERVING.get(uuid)
    if callback is not None:
        callback()


def forget_serving(uuid: str) -> None:
    with _SERVING_LOCK:
        _SERVING.pop(uuid, None)


@dataclass(frozen=True)
class ServiceContext(RunContext):
    """A service's run context: Polyaxon's extra ``globals.ports`` and ``globals.base_url``."""

    ports: tuple[int, ...] = ()
    base_url: str = ""

    def globals_dict(self) -> dict[str, Any]:
        values = super().globals_dict()
        values["ports"] = list(self.ports)
        values["base_url"] = self.base_url
        return values

    @classmethod
    def of(cls, context: RunContext, ports: tuple[int, ...], rewrite_path: bool) -> ServiceContext:
        """``context`` with the service's ports and its ``base_url``."""
        fields = {f.name: getattr(context, f.name) for f in dataclasses.fields(RunContext)}
        return cls(**fields, ports=ports, base_url=base_url(context, rewrite_path=rewrite_path))


def base_url(context: RunContext, *, rewrite_path: bool = False) -> str:
    """Polyaxon's ``globals.base_url`` of a service run (its proxy path)."""
    root = "rewrite-services/v1" if rewrite_path else "services/v1"
    namespace = context.namespace or "local"
    return f"/{root}/{namespace}/{context.owner_name}/{context.project_name}/runs/{context.uuid}"


def service_url(host: str, ports: tuple[int, ...], path: str, *, rewrite_path: bool) -> str | None:
    """Where a browser reaches the service: its first port, under ``path`` unless the proxy
    would have rewritten it away; None without a port."""
    if not ports:
        return None
    suffix = "/" if rewrite_path else f"{path.rstrip('/')}/"
    return f"http://{host}:{ports[0]}{suffix}"


@dataclass(frozen=True)
class ServiceSettings:
    """The ``ports``, ``rewritePath`` and ``isExternal`` of a service, rendered."""

    ports: tuple[int, ...]
    rewrite_path: bool
    is_external: bool


def _render(value: object, context: Mapping[str, Any], field: str, problems: list[Problem]) -> Any:
    if not isinstance(value, str) or "{" not in value:
        return value
    try:
        return render_value(value, context)
    except TemplateError as exc:
        problems.append(Problem(str(exc), rule="template", path=(*_RUN_PATH, field), value=value))
        return None


def service_settings(
    loaded: LoadedPolyaxonfile, params: Mapping[str, Any], context: RunContext
) -> ServiceSettings:
    """The service's settings with the op's params (and ``context``'s globals) rendered in.

    Raises:
        PolyaxonfileError: a template that does not render, a port out of 1-65535 (located).
    """
    operation = loaded.operation
    component = operation.component
    run = service_run(operation)
    if run is None or component is None:
        kind = getattr(getattr(component, "run", None), "kind", None)
        raise UnsupportedFeatureError(
            [
                Problem(
                    f"run kind `{kind}` is not a service",
                    rule="unsupported_kind",
                    path=(*_RUN_PATH, "kind"),
                )
            ]
        )
    values = merge_params(component, operation, getattr(loaded, "params", {}) or {}, params)
    given: frozenset[str] = getattr(loaded, "given_params", frozenset())
    problems: list[Problem] = []
    try:
        typed = template_params(component, operation, values, context.globals_dict(), given)
        scope = build_context(typed, globals=context.globals_dict())
    except TemplateError as exc:
        raise PolyaxonfileError([Problem(str(exc), rule="template")]) from None
    ports = _render(run.ports, scope, "ports", problems) or []
    found: list[int] = []
    for i, port in enumerate(ports if isinstance(ports, list) else [ports]):
        port = _render(port, scope, "ports", problems)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            problems.append(
                Problem(
                    f"a service port must be a whole number from 1 to 65535, got {port!r}",
                    rule="service_port",
                    path=(*_RUN_PATH, "ports", i),
                    value=port,
                    hint="e.g. `ports: [6006]`",
                )
            )
            continue
        found.append(port)
    rewrite = _render(run.rewrite_path, scope, "rewritePath", problems)
    external = _render(run.is_external, scope, "isExternal", problems)
    if problems:
        raise PolyaxonfileError(locate_problems(problems, loaded))
    return ServiceSettings(tuple(found), bool(rewrite), bool(external))


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _any_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def local_ports(declared: tuple[int, ...]) -> tuple[tuple[int, ...], list[str]]:
    """Each declared port when it is free here, else a free one; and a note per change."""
    chosen: list[int] = []
    notes: list[str] = []
    for port in declared:
        local = port if _free(port) and port not in chosen else _any_port()
        if local != port:
            notes.append(f"port {port} is in use on this machine; the service gets {local}")
        chosen.append(local)
    return tuple(chosen), notes


def _refuse_busy_ports(declared: tuple[int, ...], loaded: LoadedPolyaxonfile) -> None:
    """A DAG's service never moves to another port: its dependents reach it at the port it
    declares (nothing tells them another one), and would reach the program holding it.

    Raises:
        PolyaxonfileError: a declared port another program holds (located at that port).
    """
    problems = [
        Problem(  # the how-to in the message: a DAG's op shows its problems' messages only
            f"port {port} (`ports[{i}]`) is held by another program on this machine, and the "
            "op's dependents would reach that program, not this service: stop that program, "
            "or declare a free port in `ports` (or pass the param it comes from with -P)",
            rule="service_port_busy",
            path=(*_RUN_PATH, "ports", i),
            value=port,
        )
        for i, port in enumerate(declared)
        if not _free(port)
    ]
    if problems:
        raise PolyaxonfileError(locate_problems(problems, loaded))


@dataclass(frozen=True)
class PreparedService(PreparedJob):
    """A service ready to run locally: the job fields, plus its ports and URL."""

    ports: tuple[int, ...] = ()
    declared_ports: tuple[int, ...] = ()
    url: str | None = None
    base_url: str = ""
    rewrite_path: bool = False
    is_external: bool = False


def prepare_service(
    loaded: LoadedPolyaxonfile,
    options: PrepareOptions = PrepareOptions(),
    launcher: Launcher = PROCESS,
) -> PreparedService:
    """Render a service's container, env and init as a job's (`render_run`), with
    ``globals.ports`` (free local ports) and ``globals.base_url``, for ``launcher`` (default: a
    process on this machine). Never cached: a service's run is its process, not outputs to
    reuse.

    Where the launcher's processes are hosts of their own (a container), its declared ports
    are always free: ``globals.ports`` are those, as in its pod, and ``ports`` the local ones
    they are published at (the URL's).

    Raises what `render_run` raises, and `PolyaxonfileError` for bad ports.
    """
    operation = loaded.operation
    own_network = launcher.separate_hosts
    name = operation.name or (operation.component.name if operation.component else None) or "job"
    base = options.run_context or new_run_context(name)
    settings = service_settings(loaded, options.params or {}, base)
    if options.in_pipeline and not own_network:
        _refuse_busy_ports(settings.ports, loaded)
    ports, notes = local_ports(settings.ports)
    inside = settings.ports if own_network else ports
    if own_network:
        notes = [note.replace("the service gets", "it is published at") for note in notes]
    context = ServiceContext.of(base, inside, settings.rewrite_path)
    # a service holds the GPUs it asks for as long as it serves (a notebook's, a model
    # server's), from the machine's pool like a job's: exactly those, and none without a request
    job = render_run(loaded, dataclasses.replace(options, run_context=context))
    run = loaded.operation.component.run if loaded.operation.component else None
    url = service_url("127.0.0.1", ports, context.base_url, rewrite_path=settings.rewrite_path)
    fields = {f.name: getattr(job, f.name) for f in dataclasses.fields(PreparedJob)}
    fields.update(cache_key=None, cache_ttl=None, notes=(*job.notes, *notes))
    service = PreparedService(
        **fields,
        ports=ports,
        declared_ports=settings.ports,
        url=url,
        base_url=context.base_url,
        rewrite_path=settings.rewrite_path,
        is_external=settings.is_external,
    )
    [ready] = launcher.prepare(loaded, options, [service], [getattr(run, "container", None)])
    assert isinstance(ready, PreparedService)  # a launcher adds its settings, keeps the shape
    return ready


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
        return True
    return False


def _write_record(service: PreparedService, **extra: object) -> None:
    record = {
        "name": service.op_name,
        "uuid": service.context.uuid,
        "url": service.url,
        "ports": list(service.ports),
        "declared_ports": list(service.declared_ports),
        "base_url": service.base_url,
        "rewrite_path": service.rewrite_path,
        "is_external": service.is_external,
        **extra,
    }
    path = service.context.run_artifacts_path / SERVICE_FILE
    with contextlib.suppress(OSError):
        path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


class _Watch:
    """The threads around the service's process: the announcement once it serves, and the
    stop (the caller's cancel event, or the timeout)."""

    def __init__(
        self,
        service: PreparedService,
        on_line: LineCallback,
        cancel_event: threading.Event | None,
    ) -> None:
        self.service = service
        self.on_line = on_line
        self.outer = cancel_event or threading.Event()
        self.stop = threading.Event()
        self.ended = threading.Event()
        self.reason = ""
        self.served_at: str | None = None

    def start(self) -> None:
        threading.Thread(target=self._announce, name="service-url", daemon=True).start()
        threading.Thread(target=self._guard, name="service-stop", daemon=True).start()

    def _announce(self) -> None:
        ports = self.service.ports
        while ports and not self.ended.is_set() and not _accepts(ports[0]):
            time.sleep(_PROBE_SECONDS)
        if self.ended.is_set():
            return
        self.served_at = datetime.now(UTC).isoformat()
        _write_record(self.service, status="running", serving_since=self.served_at)
        where = self.service.url or "(no port)"
        self.on_line("stdout", f"service `{self.service.op_name}` is running at {where}")
        announce_serving(self.service.context.uuid)

    def _guard(self) -> None:
        timeout = self.service.timeout
        deadline = time.monotonic() + timeout if timeout else None
        while not self.ended.is_set():
            if self.outer.is_set():
                self.reason = self.reason or "was stopped"
                self.stop.set()
                return
            if deadline is not None and time.monotonic() >= deadline:
                self.reason = f"was stopped at its termination.timeout ({timeout:g}s)"
                self.stop.set()
                return
            self.outer.wait(_PROBE_SECONDS)


def execute_service(
    service: PreparedJob,
    *,
    on_line: LineCallback | None = None,
    cancel_event: threading.Event | None = None,
    launcher: Launcher = PROCESS,
) -> RunResult:
    """Run the service's init steps, then its process (started by ``launcher``, the one it
    was prepared for) until it exits or is stopped.

    ``succeeded`` when the process exits 0 on its own, ``stopped`` when it was stopped (the
    cancel event, a stop of the session, its timeout), ``failed`` otherwise.
    """
    if not isinstance(service, PreparedService):
        raise TypeError("a service runs what `prepare_service` prepared")
    relay = on_line or (lambda _stream, _line: None)
    try:
        return _serve(service, launcher, relay, cancel_event)
    finally:
        launcher.close()


def _serve(
    service: PreparedService,
    launcher: Launcher,
    relay: LineCallback,
    cancel_event: threading.Event | None,
) -> RunResult:
    ended = _before_process(service, relay, cancel_event)
    if ended is None:
        ended = launcher.ready([service], relay, cancel_event)
    if ended is not None:
        return ended
    publish = tuple(zip(service.ports, service.declared_ports, strict=True))
    watch = _Watch(service, relay, cancel_event)
    watch.start()
    try:
        result = run_launched(
            launcher,
            Launch(service, service.argv, service.env, publish=publish),
            timeout=None,  # its termination.timeout stops it (`_Watch`): `stopped`, not `failed`
            on_line=relay,
            secrets=service.secrets,
            cancel_event=watch.stop,
            log_path=service.context.run_artifacts_path / "logs" / LOG_FILE,
        )
    except ProcessStartError as exc:
        return failed(str(exc), service.secrets)
    finally:
        watch.ended.set()
    if result.cancelled:
        reason = watch.reason or "was stopped"
        status, message = Status.STOPPED, f"service `{service.op_name}` {reason}"
    elif result.returncode == 0:
        status, message = Status.SUCCEEDED, f"service `{service.op_name}` exited"
    else:
        status, message = Status.FAILED, ""
    _write_record(
        service,
        status=str(status),
        serving_since=watch.served_at,
        ended_at=datetime.now(UTC).isoformat(),
    )
    return RunResult(status, message=message, process=result)
