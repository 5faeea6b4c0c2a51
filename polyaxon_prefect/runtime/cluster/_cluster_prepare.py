"""A job or distributed op prepared for a Kubernetes backend: templates rendered, then manifests.

The runtime's half of the ``kubeflow`` and ``native`` executors, so everything that can fail
before a cluster is called fails here, located in the file, like a local prepare: params are
merged and typed, every ``{{ template }}`` of the run section is rendered (``globals.*`` point
at the pod's paths under ``/plx-context``, not this machine's), and the pure builder of
`polyaxon_prefect.kubernetes` turns the rendered operation into manifests. Submitting them is
the Prefect layer's job (``polyaxon_prefect.prefect.kubernetes._kubernetes``), which talks to the
cluster.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.kubernetes import (
    ARTIFACTS_PATH,
    Backend,
    PodHandback,
    base_name,
    build_manifests,
    handback_replica,
    hands_back,
    new_nonce,
)
from polyaxon_prefect.loading import TemplateError, build_context, render_value
from polyaxon_prefect.runtime._context import RunContext, new_run_context
from polyaxon_prefect.runtime._prepared import PreparedJob
from polyaxon_prefect.runtime.render._locate import locate_problems
from polyaxon_prefect.runtime.render._options import PrepareOptions
from polyaxon_prefect.runtime.render._param_values import (
    jsonable_params,
    merge_params,
    set_values,
    template_params,
)
from polyaxon_prefect.runtime.render._problem_collector import PathT, Problems
from polyaxon_prefect.runtime.render._render_sections import (
    has_template,
    render_argv,
    render_text_value,
)
from polyaxon_prefect.specs import LoadedPolyaxonfile

__all__ = [
    "ARGV_KEYS",
    "CONNECTIONS_ENV",
    "PreparedManifests",
    "cluster_context",
    "prepare_cluster",
    "read_connections_file",
    "render_run",
]

CONNECTIONS_ENV = "POLYAXON_PREFECT_K8S_CONNECTIONS"
"""A YAML file with the cluster's connections catalog (the format of ``compile
--connections``), read by a Kubernetes run when set."""

_RUN_PATH: PathT = ("component", "run")
ARGV_KEYS = frozenset({"command", "args"})


@dataclass(frozen=True)
class PreparedManifests(PreparedJob):
    """A distributed op ready to submit: its manifests in apply order, plus the job fields the
    op runner reads (name, params, outputs, run context, timeout...)."""

    manifests: tuple[dict[str, Any], ...] = ()
    namespace: str | None = None
    """The namespace the Polyaxonfile asks for; None leaves it to the work pool (or
    ``default``)."""
    handback: PodHandback | None = None
    """The marker of the block the pod's wrapper prints its outputs in (None: no wrapper)."""


def cluster_context(run_context: RunContext) -> RunContext:
    """``run_context`` as the pods see it: the same run, its artifacts under ``/plx-context``."""
    return dataclasses.replace(run_context, artifacts_root=Path(ARTIFACTS_PATH))


def _render(
    value: object, context: Mapping[str, Any], path: PathT, problems: Problems, key: object = None
) -> Any:
    """Render every template under ``value``: ``command``/``args`` one argument per element
    (as a job's), ``env`` values as text, anything else read back as a literal (so
    ``replicas: '{{ workers }}'`` becomes a number)."""
    if key in ARGV_KEYS and (isinstance(value, list) or has_template(value)):
        return render_argv(value, context, path, problems)
    if isinstance(value, dict):
        text_value = "name" in value and "value" in value  # an env var: its value is text
        return {
            k: (
                _text(v, context, (*path, k), problems)
                if text_value and k == "value"
                else _render(v, context, (*path, k), problems, k)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_render(v, context, (*path, i), problems) for i, v in enumerate(value)]
    if isinstance(value, str) and has_template(value):
        try:
            return render_value(value, context)
        except TemplateError as exc:
            problems.template(exc, path)
    return value


def _text(value: object, context: Mapping[str, Any], path: PathT, problems: Problems) -> Any:
    if not has_template(value):
        return value
    try:
        return render_text_value(value, context)
    except TemplateError as exc:
        problems.template(exc, path)
        return value


def render_run(run: Any, context: Mapping[str, Any], problems: Problems) -> Any:
    """``run`` (a distributed run model) with every template rendered, validated back into
    its model; problems are collected, located under ``component.run``."""
    data = run.model_dump(by_alias=True, exclude_unset=True, exclude_none=True)
    data["kind"] = run.kind
    rendered = _render(data, context, _RUN_PATH, problems)
    if problems.items:
        return run
    try:
        return type(run).model_validate(rendered)
    except ValueError as exc:
        problems.add(f"the rendered run section is not valid: {exc}", "invalid_rendered", _RUN_PATH)
        return run


def read_connections_file(path: str | Path | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The cluster's connections file (a list, or ``connections:`` plus ``artifactsStore:``)
    as a catalog by name, and the artifacts store."""
    if path is None:
        return {}, None
    import yaml

    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    items = data if isinstance(data, list) else data.get("connections") or []
    store = data.get("artifactsStore") if isinstance(data, dict) else None
    catalog = {item["name"]: item for item in items if isinstance(item, dict) and "name" in item}
    if isinstance(store, dict) and store.get("name"):
        catalog.setdefault(store["name"], store)
    return catalog, store if isinstance(store, dict) else None


def _rendered_run(loaded: Any, values: Mapping[str, Any], run_context: RunContext) -> Any:
    """The run section with the op's params and the pods' ``globals`` rendered in."""
    operation = loaded.operation
    component = operation.component
    given: frozenset[str] = getattr(loaded, "given_params", frozenset())
    globals_ = run_context.globals_dict()
    typed = template_params(component, operation, dict(values), globals_, given)
    problems = Problems()
    try:
        context = build_context(typed, globals=globals_)
    except TemplateError as exc:
        raise PolyaxonfileError([Problem(str(exc), rule="template")]) from None
    run = render_run(component.run, context, problems)
    if problems.items:
        raise PolyaxonfileError(locate_problems(problems.items, loaded))
    return run


def prepare_cluster(
    loaded: LoadedPolyaxonfile, backend: Backend, options: PrepareOptions = PrepareOptions()
) -> PreparedManifests:
    """Render ``loaded``'s distributed run and build its ``backend`` manifests.

    The objects are named after the op plus the run's short uuid, so two runs of one file
    never collide in a namespace. ``connections`` (this machine's) are not used: a cluster's
    come from the file named by ``POLYAXON_PREFECT_K8S_CONNECTIONS``; ``in_pipeline`` and
    ``skip_builds`` are this machine's too.

    Raises:
        PolyaxonfileError: bad params, template errors, and every problem the manifest builder
            finds (each located in the file).
    """
    operation = loaded.operation
    component = operation.component
    if component is None:
        raise PolyaxonfileError(
            [Problem("the operation has no component to run", rule="no_component")]
        )
    op_name = operation.name or component.name or "job"
    values = merge_params(
        component, operation, getattr(loaded, "params", {}) or {}, options.params or {}
    )
    local_context = options.run_context or new_run_context(op_name)
    run_context = cluster_context(local_context)
    run = _rendered_run(loaded, values, run_context)
    params = jsonable_params(set_values(component, values))
    handback, env = _handback(run, run_context, params)
    named = operation.model_copy(
        update={
            "name": f"{base_name(op_name)[:31]}-{run_context.uuid[:8]}",
            "component": component.model_copy(update={"run": run}),
        }
    )
    catalog, store = read_connections_file(os.environ.get(CONNECTIONS_ENV) or None)
    try:
        manifests = build_manifests(
            named,
            backend=backend,
            connections=catalog,
            artifacts_store=store,
            env=env,
            handback=handback,
            init_root=str(run_context.artifacts_path),
        )
    except PolyaxonfileError as exc:
        raise PolyaxonfileError(locate_problems(exc.problems, loaded)) from None
    termination = operation.termination or component.termination
    timeout = getattr(termination, "timeout", None)
    return PreparedManifests(
        op_name=op_name,
        argv=[],
        env={},
        cwd=options.base_dir or Path.cwd(),
        image=_image(run),
        secrets=options.secrets,  # the DAG's: its ops' log lines are masked here
        timeout=float(timeout) if isinstance(timeout, int | float) else None,
        max_retries=0,  # the cluster retries (runPolicy.backoffLimit, the Jobs' backoffLimit)
        ttl=None,
        cache_key=None,
        cache_ttl=None,
        params=params,
        outputs=list(component.outputs or []),
        context=local_context,
        tags=tuple(str(tag) for tag in (operation.tags or component.tags or []) if tag),
        run_kind=run.kind,
        backend=backend,
        manifests=tuple(manifests),
        namespace=operation.namespace,
        handback=handback,
    )


def _handback(
    run: object, run_context: RunContext, params: Mapping[str, Any]
) -> tuple[PodHandback | None, dict[str, str]]:
    """How the run's pod hands its outputs back (its block's marker, the pod that prints it)
    and the tracking env it writes them with; none for a run whose pods do not."""
    if not hands_back(run):
        return None, {}
    handback = PodHandback(
        str(run_context.run_outputs_path),
        run_context.uuid,
        new_nonce(),
        replica=handback_replica(run),
    )
    return handback, run_context.env_vars(params)


def _image(run: object) -> str | None:
    container = getattr(run, "container", None)
    image = getattr(container, "image", None)
    return image if isinstance(image, str) else None
