"""Whether a connection of the agent's catalog can be honoured in a pod, as Polyaxon's docs
describe each kind (pure).

What each kind becomes (`_mounts.add_connection` does it): ``host_path`` and ``volume_claim``
are volumes mounted at ``schema.mountPath``; a bucket (``s3``, ``gcs``, ``wasb``) is its
``schema.bucket`` in env plus its ``secret`` (mounted at ``secret.mountPath``, else its keys as
env); ``git`` and ``registry`` are their ``schema.url`` plus their secret (credentials for the
git init step, the image pull or the build); every kind's ``secret`` / ``configMap`` is mounted
or injected, and ``env`` added. A connection missing what its kind needs would silently mount
nothing; it is a problem here, located where the Polyaxonfile names it, before anything is
created on the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from polyaxon_prefect.exceptions import Problem

__all__ = ["BUCKET_SCHEMES", "connection_problems"]

BUCKET_SCHEMES: dict[str, tuple[str, ...]] = {
    "s3": ("s3://",),
    "gcs": ("gs://",),
    "wasb": ("wasb://", "wasbs://", "abfs://", "abfss://"),
}
"""The URL schemes of each bucket kind's ``schema.bucket``."""

_NEEDS: dict[str, tuple[str, ...]] = {
    "host_path": ("hostPath", "mountPath"),
    "volume_claim": ("volumeClaim", "mountPath"),
    "s3": ("bucket",),
    "gcs": ("bucket",),
    "wasb": ("bucket",),
    "git": ("url",),
    "registry": ("url",),
}
"""The ``schema`` fields without which a kind cannot be honoured in a pod."""


def _problem(
    name: str, path: tuple[str | int, ...], message: str, rule: str, hint: str, value: object = None
) -> Problem:
    return Problem(
        f"connection `{name}` {message}",
        rule=rule,
        path=path,
        value=name if value is None else value,
        hint=hint,
    )


def connection_problems(
    name: str, conn: Mapping[str, Any], path: tuple[str | int, ...]
) -> list[Problem]:
    """Why connection ``name`` (its catalog entry ``conn``) cannot be honoured on the cluster;
    located at ``path`` (where the Polyaxonfile names it). Empty when it can."""
    kind = conn.get("kind")
    if not isinstance(kind, str) or not kind:
        return [
            _problem(
                name,
                path,
                "has no `kind` in the connections catalog",
                "k8s_connection_kind",
                "give it one of Polyaxon's kinds (host_path, volume_claim, s3, gcs, wasb, git, "
                "registry, custom...)",
            )
        ]
    schema = conn.get("schema") or {}
    if not isinstance(schema, Mapping):
        return [
            _problem(
                name,
                path,
                f"of kind `{kind}` has a `schema` that is not a mapping",
                "k8s_connection_schema",
                "write `schema:` as a mapping of its fields",
            )
        ]
    problems: list[Problem] = []
    missing = [key for key in _NEEDS.get(kind, ()) if not schema.get(key)]
    if missing:
        fields = ", ".join(f"`schema.{key}`" for key in missing)
        problems.append(
            _problem(
                name,
                path,
                f"of kind `{kind}` cannot be honoured on Kubernetes without {fields}",
                "k8s_connection_unusable",
                f"add {fields} to its entry in the connections catalog",
            )
        )
    bucket = schema.get("bucket")
    schemes = BUCKET_SCHEMES.get(kind)
    if schemes and isinstance(bucket, str) and bucket and not bucket.startswith(schemes):
        problems.append(
            _problem(
                name,
                path,
                f"of kind `{kind}` has a bucket `{bucket}` that is not a {kind} URL",
                "k8s_connection_bucket",
                f"write it as {schemes[0]}<bucket>",
                value=bucket,
            )
        )
    for key in ("secret", "configMap"):
        resource = conn.get(key)
        if resource is not None and not (isinstance(resource, Mapping) and resource.get("name")):
            problems.append(
                _problem(
                    name,
                    path,
                    f"has a `{key}` without a `name`",
                    "k8s_connection_resource",
                    f"give the {key} of the connection its Kubernetes name",
                )
            )
    return problems
