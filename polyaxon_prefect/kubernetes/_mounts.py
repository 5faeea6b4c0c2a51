"""Connections and init steps as pod parts: volumes, mounts, env vars and init containers.

A connection is a name in the Polyaxonfile; what it *is* (a host path, a claim, a secret) lives
in the agent's connections catalog, given here as plain dicts in Polyaxon's agent shape
(``{name, kind, schema, secret, configMap, env}``), the same file the local runtime reads. On
Kubernetes it is mounted, where the local runtime can only point at it with env vars; the
``POLYAXON_PREFECT_CONNECTION_<N>_*`` variables are set the same way so one script runs in both.

Init steps become init containers that write into one ``emptyDir`` (the run context, Polyaxon's
``/plx-context``) that the main container mounts too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs import DockerfileType, FileType, GitType, Init

from ._connection_kinds import connection_problems

__all__ = [
    "ARTIFACTS_PATH",
    "CONTEXT_PATH",
    "GIT_IMAGE",
    "SHELL_IMAGE",
    "PodParts",
    "add_connection",
    "add_context_volume",
    "add_init",
]

CONTEXT_PATH = "/plx-context"
ARTIFACTS_PATH = f"{CONTEXT_PATH}/artifacts"
"""Where init steps put what they fetch (Polyaxon's ``globals.artifacts_path`` in a pod)."""
GIT_IMAGE = "alpine/git:2.45.2"
SHELL_IMAGE = "busybox:1.36"
_CONTEXT_VOLUME = "plx-context"
_STORE_VOLUME = "plx-artifacts-store"
_STORE_PATH = "/plx-artifacts-store"
_NOT_ENV = re.compile(r"[^A-Z0-9]+")


@dataclass
class PodParts:
    """What connections and init steps add to a pod, collected before it is assembled."""

    volumes: list[dict[str, Any]] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    env: list[dict[str, Any]] = field(default_factory=list)
    env_from: list[dict[str, Any]] = field(default_factory=list)
    init_containers: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def add_volume(self, volume: dict[str, Any], mount: dict[str, Any] | None = None) -> None:
        """A pod volume (once per name) and, optionally, its mount in the main container."""
        if all(v["name"] != volume["name"] for v in self.volumes):
            self.volumes.append(volume)
        if mount is not None and mount not in self.mounts:
            self.mounts.append(mount)


def _env_prefix(name: str) -> str:
    return "POLYAXON_PREFECT_CONNECTION_" + _NOT_ENV.sub("_", name.upper()).strip("_")


def _resource(
    parts: PodParts, conn_name: str, what: str, resource: Mapping[str, Any], volume_name: str
) -> None:
    """A connection's secret or config map: mounted files, chosen keys as env, or all keys."""
    name = resource.get("name")
    ref_key = "secretKeyRef" if what == "secret" else "configMapKeyRef"
    mount_path = resource.get("mountPath")
    if mount_path:
        source = {"secretName": name} if what == "secret" else {"name": name}
        volume_key = "secret" if what == "secret" else "configMap"
        parts.add_volume(
            {"name": volume_name, volume_key: source},
            {"name": volume_name, "mountPath": mount_path, "readOnly": True},
        )
        suffix = "SECRET_PATH" if what == "secret" else "CONFIG_PATH"
        parts.env.append({"name": f"{_env_prefix(conn_name)}_{suffix}", "value": mount_path})
    elif resource.get("items"):
        for key in resource["items"]:
            parts.env.append({"name": key, "valueFrom": {ref_key: {"name": name, "key": key}}})
    else:
        ref = "secretRef" if what == "secret" else "configMapRef"
        parts.env_from.append({ref: {"name": name}})


def add_connection(
    parts: PodParts,
    name: str,
    catalog: Mapping[str, Mapping[str, Any]],
    path: tuple[str | int, ...],
) -> str | None:
    """Mount connection ``name`` into the pod; its mount path (claims, host paths), if any.

    A name missing from the catalog is a problem at ``path``: nothing else says what to mount.
    """
    conn = catalog.get(name)
    if conn is None:
        known = ", ".join(f"`{n}`" for n in sorted(catalog)) or "none"
        parts.problems.append(
            Problem(
                f"connection `{name}` is not in the connections catalog (known: {known})",
                rule="k8s_unknown_connection",
                path=path,
                value=name,
                hint="pass the agent's connections file with `--connections FILE`",
            )
        )
        return None
    unusable = connection_problems(name, conn, path)
    if unusable:
        parts.problems.extend(unusable)
        return None
    volume = f"conn-{re.sub(r'[^a-z0-9-]+', '-', name.lower()).strip('-')}"[:63]
    schema = conn.get("schema") or {}
    prefix = _env_prefix(name)
    parts.env.append({"name": f"{prefix}_SCHEMA", "value": json.dumps(schema, sort_keys=True)})
    for item in conn.get("env") or []:
        parts.env.append(dict(item))
    mount_path = schema.get("mountPath")
    if conn.get("kind") == "host_path" and schema.get("hostPath") and mount_path:
        parts.add_volume(
            {"name": volume, "hostPath": {"path": schema["hostPath"]}},
            {"name": volume, "mountPath": mount_path, "readOnly": bool(schema.get("readOnly"))},
        )
    elif conn.get("kind") == "volume_claim" and schema.get("volumeClaim") and mount_path:
        claim = {"claimName": schema["volumeClaim"], "readOnly": bool(schema.get("readOnly"))}
        parts.add_volume(
            {"name": volume, "persistentVolumeClaim": claim},
            {"name": volume, "mountPath": mount_path},
        )
    else:
        mount_path = None
    if mount_path:
        parts.env.append({"name": f"{prefix}_PATH", "value": mount_path})
    for what, key in (("secret", "secret"), ("configMap", "configMap")):
        if conn.get(key):
            _resource(parts, name, what, conn[key], f"{volume}-{what.lower()}"[:63])
    return mount_path


# --- init steps ------------------------------------------------------------------------------


def _context_mount() -> dict[str, Any]:
    return {"name": _CONTEXT_VOLUME, "mountPath": CONTEXT_PATH}


def add_context_volume(parts: PodParts) -> None:
    """The run context ``emptyDir`` mounted at ``/plx-context`` in the main container: where a
    job's tracking writes its outputs (the image's own file system may be read-only or not
    writable by its user), and where init steps leave what they fetched."""
    parts.add_volume({"name": _CONTEXT_VOLUME, "emptyDir": {}}, _context_mount())


def _writer(name: str, content: str, dest: str, chmod: str | None) -> dict[str, Any]:
    """A busybox init container that writes ``content`` to ``dest``."""
    script = 'mkdir -p "$(dirname "$1")" && printf "%s" "$0" > "$1"'
    if chmod:
        script += f' && chmod {chmod} "$1"'
    return {
        "name": name,
        "image": SHELL_IMAGE,
        "command": ["sh", "-c", script, content, dest],
    }


def _git(name: str, git: GitType, dest_root: str | None, root: str) -> dict[str, Any]:
    url = git.url or ""
    repo = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git") or "repo"
    dest = dest_root or f"{root}/{repo}"
    flags = " ".join(git.flags or []) if isinstance(git.flags, list) else ""
    script = f'git clone {flags} "$0" "$1"'.replace("  ", " ")
    args = [url, dest]
    if git.revision:
        script += ' && git -C "$1" checkout "$2"'
        args.append(git.revision)
    return {"name": name, "image": GIT_IMAGE, "command": ["sh", "-c", script, *args]}


def _dockerfile_text(spec: DockerfileType) -> str:
    """The Dockerfile a ``dockerfile`` init step describes (Polyaxon's layout, simplified)."""
    lines = [f"FROM {spec.image}"]
    if spec.lang_env:
        lines += [f"ENV LC_ALL {spec.lang_env}", f"ENV LANG {spec.lang_env}"]
    for key, value in (spec.env or {}).items() if isinstance(spec.env, dict) else ():
        lines.append(f"ENV {key} {json.dumps(value) if not isinstance(value, str) else value}")
    if isinstance(spec.path, list):
        lines += [f'ENV PATH="$PATH:{item}"' for item in spec.path]
    if spec.workdir:
        lines.append(f"WORKDIR {spec.workdir}")
    for item in spec.copy_ or [] if isinstance(spec.copy_, list) else []:
        pair = item if isinstance(item, list) else [item, item]
        lines.append(f"COPY {pair[0]} {pair[1]}")
    if isinstance(spec.run, list):
        lines += [f"RUN {command}" for command in spec.run]
    return "\n".join(lines) + "\n"


def _artifacts(name: str, init: Init, dest_root: str | None, root: str) -> dict[str, Any]:
    """Copy files/dirs from the artifacts store (mounted at ``_STORE_PATH``) into the context."""
    items: list[Any] = []
    if init.artifacts is not None and not isinstance(init.artifacts, str):
        items = [*(init.artifacts.files or []), *(init.artifacts.dirs or [])]
    elif isinstance(init.paths, list):
        items = list(init.paths)
    copies = []
    for item in items:
        source, target = (item[0], item[1]) if isinstance(item, list) else (item, item)
        dest = f"{dest_root or root}/{str(target).lstrip('/')}"
        copies.append(f'mkdir -p "$(dirname "{dest}")" && cp -r "{_STORE_PATH}/{source}" "{dest}"')
    script = " && ".join(copies) or "true"
    mounts = [_context_mount(), {"name": _STORE_VOLUME, "mountPath": _STORE_PATH}]
    return {
        "name": name,
        "image": SHELL_IMAGE,
        "command": ["sh", "-c", script],
        "volumeMounts": mounts,
    }


def add_init(
    parts: PodParts,
    index: int,
    init: Init,
    store: Mapping[str, Any] | None,
    path: tuple[str | int, ...],
    root: str = ARTIFACTS_PATH,
) -> None:
    """One init step as one init container (sharing the context volume with the main one).

    ``root`` is where a step without its own ``path`` puts what it fetches: the pod's
    ``globals.artifacts_path`` when the run is known (so ``{{ globals.artifacts_path }}/repo``
    in the command finds the clone), else the context's artifacts directory."""
    name = f"init-{index}"
    parts.add_volume({"name": _CONTEXT_VOLUME, "emptyDir": {}}, _context_mount())
    container: dict[str, Any] | None
    if init.container is not None and not isinstance(init.container, str) and not init.source:
        container = {"name": name, **init.container.to_dict()}
    elif isinstance(init.git, GitType):
        container = _git(name, init.git, init.path, root)
    elif isinstance(init.file, FileType):
        dest = f"{init.path or root}/{init.file.filename or 'file'}"
        container = _writer(name, init.file.content, dest, init.file.chmod)
    elif isinstance(init.dockerfile, DockerfileType):
        filename = init.dockerfile.filename or "Dockerfile"
        dest = f"{init.path or root}/{filename}"
        container = _writer(name, _dockerfile_text(init.dockerfile), dest, None)
    elif init.source in ("artifacts", "paths") and store is not None:
        container = _artifacts(name, init, init.path, root)
        _store_volume(parts, store)
    else:
        container = None
    if container is None:
        parts.problems.append(_unsupported_init(init, store, path))
        return
    mounts = container.setdefault("volumeMounts", [])
    if _context_mount() not in mounts:
        mounts.insert(0, _context_mount())
    parts.init_containers.append(container)


def _store_volume(parts: PodParts, store: Mapping[str, Any]) -> None:
    schema = store.get("schema") or {}
    if store.get("kind") == "volume_claim" and schema.get("volumeClaim"):
        source: dict[str, Any] = {"persistentVolumeClaim": {"claimName": schema["volumeClaim"]}}
    else:
        source = {"hostPath": {"path": schema.get("hostPath") or schema.get("mountPath") or "/"}}
    parts.add_volume({"name": _STORE_VOLUME, **source})


def _unsupported_init(
    init: Init, store: Mapping[str, Any] | None, path: tuple[str | int, ...]
) -> Problem:
    source = init.source or "connection"
    if source in ("artifacts", "paths") and store is None:
        return Problem(
            f"an `{source}` init step copies from the artifacts store, and none is configured",
            rule="k8s_init_no_store",
            path=path,
            hint="give `artifactsStore` (a host_path or volume_claim) in the connections file",
        )
    return Problem(
        f"an init step with `{source}` cannot be rendered as a Kubernetes init container yet",
        rule="k8s_init_unsupported",
        path=path,
        hint="use a `git`, `file`, `dockerfile`, `artifacts` or `container` init step",
    )
