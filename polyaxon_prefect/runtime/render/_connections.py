"""Connections (Polyaxon's agent ``connections``) and what they mean for a local process.

The file is YAML in Polyaxon's agent-config shape, either a list of connections or a mapping with
``connections:`` (and optionally ``artifactsStore:``; other agent keys are ignored, so an existing
agent config can be reused)::

    connections:
      - name: training-data
        kind: host_path
        schema: {hostPath: /data/train, mountPath: /data}
      - name: my-s3
        kind: s3
        schema: {bucket: "s3://my-bucket"}
        secret: {name: aws-creds, items: [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY]}
        env:
          - {name: AWS_DEFAULT_REGION, value: eu-west-1}

Its path comes from the argument, else ``POLYAXON_PREFECT_CONNECTIONS``; with neither there are
no connections.

What a connection gives a local process (there is no Kubernetes to mount anything), with
``<N>`` the connection name upper-cased, non-alphanumerics turned into ``_``:

- ``env``: each ``{name, value}`` as is; ``valueFrom.secretKeyRef`` / ``configMapKeyRef``
  ``{name, key}`` read that key from the named local secret / config map (below).
- ``secret: {name: S, items?}``: a Kubernetes secret is a named set of key/values; locally it is
  the dotenv file ``S.env`` (``KEY=value`` lines) in the secrets directory
  (``POLYAXON_PREFECT_SECRETS_DIR``, default ``~/.polyaxon_prefect/secrets``). Its keys become
  env vars; with ``items``, only those keys, and a key missing from the file is taken from the
  current environment (so CI can inject it); a key found nowhere is an error. Every secret value
  is returned for masking in logs.
- ``secret: {name: S, mountPath: ...}``: mounted as files instead of env vars; locally the
  directory ``S/`` in the secrets directory (one file per key, the layout Kubernetes mounts) is
  exposed as ``POLYAXON_PREFECT_CONNECTION_<N>_SECRET_PATH``. The op must read that variable:
  the fixed ``mountPath`` cannot be created on the local machine.
- ``configMap``: like ``secret`` (same directory, ``_CONFIG_PATH`` for ``mountPath``), not masked.
- ``schema``: ``POLYAXON_PREFECT_CONNECTION_<N>_SCHEMA`` holds it as JSON; in addition
  ``hostPath`` (``host_path`` kind; the local machine is the host) or ``mountPath``
  (``volume_claim``; the claim must already be mounted there) becomes ``..._PATH``,
  ``bucket`` becomes ``..._BUCKET`` and ``url`` becomes ``..._URL``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, StrictStr, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.runtime._errors import ConnectionsError, UnknownConnectionError
from polyaxon_prefect.specs._base import BaseSpec, split_csv

__all__ = [
    "CONNECTION_KINDS",
    "ENV_CONNECTIONS",
    "ENV_SECRETS_DIR",
    "Connection",
    "ConnectionResource",
    "ConnectionsFile",
    "EnvVar",
    "UsedConnections",
    "connection_env",
    "connection_env_prefix",
    "connections_env",
    "get_connection",
    "load_connections",
    "read_dotenv",
    "resolve_secrets_dir",
    "use_connections",
]

ENV_CONNECTIONS = "POLYAXON_PREFECT_CONNECTIONS"
ENV_SECRETS_DIR = "POLYAXON_PREFECT_SECRETS_DIR"
DEFAULT_SECRETS_DIR = "~/.polyaxon_prefect/secrets"

CONNECTION_KINDS = (
    "host_path",
    "volume_claim",
    "gcs",
    "s3",
    "wasb",
    "registry",
    "git",
    "aws",
    "gcp",
    "azure",
    "mysql",
    "postgres",
    "oracle",
    "vertica",
    "sqlite",
    "mssql",
    "redis",
    "presto",
    "mongo",
    "cassandra",
    "ftp",
    "grpc",
    "hdfs",
    "http",
    "pig_cli",
    "hive_cli",
    "hive_metastore",
    "hive_server2",
    "jdbc",
    "jenkins",
    "samba",
    "snowflake",
    "ssh",
    "cloudant",
    "databricks",
    "segment",
    "slack",
    "discord",
    "mattermost",
    "pagerduty",
    "hipchat",
    "webhook",
    "custom",
)
"""Polyaxon's connection kinds (``V1ConnectionKind``)."""

_NAME = re.compile(r"^[a-zA-Z0-9][-a-zA-Z0-9_.]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ConnectionResource(BaseSpec):
    """A secret or config map a connection exposes (Polyaxon ``V1ConnectionResource``)."""

    name: StrictStr
    items: list[StrictStr] | None = None
    mount_path: StrictStr | None = None
    host_path: StrictStr | None = None
    default_mode: int | StrictStr | None = None
    is_requested: bool | None = None


class EnvVar(BaseSpec):
    """A Kubernetes ``EnvVar``: a literal ``value`` or a ``valueFrom`` reference."""

    name: StrictStr
    value: StrictStr | int | float | bool | None = None
    value_from: dict[str, Any] | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not _ENV_NAME.match(name):
            raise ValueError(
                "an environment variable name must be letters, digits and `_`, not starting "
                "with a digit"
            )
        return name

    @model_validator(mode="after")
    def _one_source(self) -> EnvVar:
        if self.value is not None and self.value_from is not None:
            raise ValueError(f"env var `{self.name}` sets both `value` and `valueFrom`; keep one")
        return self


class Connection(BaseSpec):
    """A named external resource (Polyaxon ``V1Connection``)."""

    name: StrictStr
    kind: StrictStr
    description: StrictStr | None = None
    tags: list[StrictStr] | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    secret: ConnectionResource | None = None
    config_map: ConnectionResource | None = None
    env: list[EnvVar] | None = None
    annotations: dict[str, StrictStr] | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError("a connection name must be a slug (letters, digits, `-`, `_`, `.`)")
        return name

    @field_validator("kind")
    @classmethod
    def _check_kind(cls, kind: str) -> str:
        if kind not in CONNECTION_KINDS:
            raise PydanticCustomError(
                "connection_kind",
                "unknown connection kind",
                {
                    "kind": kind,
                    "hint": "use one of Polyaxon's kinds: " + ", ".join(CONNECTION_KINDS),
                },
            )
        return kind

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: object) -> object:
        return split_csv(value)


class ConnectionsFile(BaseSpec):
    """The connections file: ``connections`` plus Polyaxon's ``artifactsStore``."""

    connections: list[Connection] = Field(default_factory=list)
    artifacts_store: Connection | None = None

    @model_validator(mode="after")
    def _unique_names(self) -> ConnectionsFile:
        seen: set[str] = set()
        for conn in self.all():
            if conn.name in seen:
                raise ValueError(f"connection name `{conn.name}` is defined more than once")
            seen.add(conn.name)
        return self

    def all(self) -> list[Connection]:
        extra = [self.artifacts_store] if self.artifacts_store is not None else []
        return [*extra, *self.connections]


def _resolve_path(path: str | os.PathLike[str] | None) -> Path | None:
    if path is not None:
        return Path(path).expanduser()
    raw = os.environ.get(ENV_CONNECTIONS)
    return Path(raw).expanduser() if raw else None


def load_connections(path: str | os.PathLike[str] | None = None) -> dict[str, Connection]:
    """The connections by name, from ``path`` or ``$POLYAXON_PREFECT_CONNECTIONS`` (or none).

    Raises:
        ConnectionsError: the file is missing, not valid YAML, or not valid connections; every
            problem is located by line.
    """
    from polyaxon_prefect._source import parse_yaml, problems_from_validation_error

    resolved = _resolve_path(path)
    if resolved is None:
        return {}
    file = str(resolved)
    try:
        text = _read_text(resolved)
    except OSError as exc:
        source = "given" if path is not None else f"set in ${ENV_CONNECTIONS}"
        raise ConnectionsError(
            [
                Problem(
                    f"cannot read the connections file {source}: {exc.strerror or exc}",
                    rule="connections_file",
                    file=file,
                )
            ]
        ) from exc
    except _NotText as exc:
        raise ConnectionsError([exc.problem]) from None
    try:
        doc = parse_yaml(text, file=file)
    except PolyaxonfileError as exc:  # bad YAML: same located problems, our error type
        raise ConnectionsError(exc.problems) from exc
    data = doc.data
    if data is None:
        return {}
    if isinstance(data, list):
        data = {"connections": data}
        doc.positions.by_path = {
            ("connections", *key): pos for key, pos in doc.positions.by_path.items()
        }
    elif isinstance(data, dict) and ({"connections", "artifactsStore"} & data.keys()):
        data = {k: v for k, v in data.items() if k in ("connections", "artifactsStore")}
    else:
        raise ConnectionsError(
            [
                Problem(
                    "a connections file must be a list of connections or a mapping with a "
                    f"`connections:` list, got {type(data).__name__}",
                    rule="connections_file",
                    file=file,
                    line=1,
                )
            ]
        )
    try:
        parsed = ConnectionsFile.model_validate(data)
    except ValidationError as exc:
        problems = problems_from_validation_error(exc, data, doc.positions, root=ConnectionsFile)
        raise ConnectionsError(problems) from exc
    return {conn.name: conn for conn in parsed.all()}


def get_connection(connections: Mapping[str, Connection], name: str) -> Connection:
    """The connection ``name``, or an error listing the defined ones."""
    try:
        return connections[name]
    except KeyError:
        raise UnknownConnectionError(name, sorted(connections)) from None


def resolve_secrets_dir(value: str | os.PathLike[str] | None = None) -> Path:
    raw = value if value is not None else os.environ.get(ENV_SECRETS_DIR) or DEFAULT_SECRETS_DIR
    return Path(raw).expanduser()


class _NotText(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _read_text(path: Path) -> str:
    """A UTF-8 text file; a file that is not one is a located problem, not a traceback."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _NotText(
            Problem(
                f"{path.name} is not a UTF-8 text file (byte 0x{data[exc.start]:02x})",
                rule="file_encoding",
                file=str(path),
                line=line,
                column=column,
                hint="save the file as UTF-8",
            )
        ) from None


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=value`` lines (``export`` prefix, ``#`` comments and matching quotes allowed)."""
    values: dict[str, str] = {}
    try:
        text = _read_text(path)
    except _NotText as exc:
        raise ConnectionsError([exc.problem]) from None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _ENV_NAME.match(key):
            raise ConnectionsError(
                [
                    Problem(
                        "expected a `KEY=value` line",
                        rule="dotenv_syntax",
                        file=str(path),
                        line=number,
                    )
                ]
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key] = value
    return values


def connection_env_prefix(name: str) -> str:
    """``POLYAXON_PREFECT_CONNECTION_<NAME>_`` for a connection name."""
    return "POLYAXON_PREFECT_CONNECTION_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper() + "_"


def _resource_problem(conn: Connection, message: str, hint: str) -> ConnectionsError:
    return ConnectionsError(
        [Problem(f"connection `{conn.name}`: {message}", rule="connection_local", hint=hint)]
    )


class _LocalResources:
    """Secrets and config maps as local dotenv files / directories, read once each."""

    def __init__(self, directory: Path, environ: Mapping[str, str]) -> None:
        self.directory = directory
        self.environ = environ
        self._cache: dict[str, dict[str, str] | None] = {}

    def values(self, name: str) -> dict[str, str] | None:
        if name not in self._cache:
            path = self.directory / f"{name}.env"
            self._cache[name] = read_dotenv(path) if path.is_file() else None
        return self._cache[name]

    def key(self, conn: Connection, what: str, name: str, key: str) -> str:
        values = self.values(name) or {}
        if key in values:
            return values[key]
        if key in self.environ:
            return self.environ[key]
        raise _resource_problem(
            conn,
            f"{what} `{name}` has no key `{key}`",
            f"add `{key}=...` to {self.directory / (name + '.env')} or export `{key}`",
        )


def _expose(
    conn: Connection,
    resource: ConnectionResource,
    what: str,
    path_suffix: str,
    local: _LocalResources,
    env: dict[str, str],
) -> list[str]:
    """Env vars (or a path) for one secret/config map; returns the values it exposed."""
    if resource.mount_path is not None:
        directory = local.directory / resource.name
        if not directory.is_dir():
            raise _resource_problem(
                conn,
                f"{what} `{resource.name}` is mounted at {resource.mount_path}, but there is no "
                f"local directory {directory}",
                f"create {directory} with one file per key, as Kubernetes would mount it",
            )
        env[connection_env_prefix(conn.name) + path_suffix] = str(directory)
        exposed = []
        for item in sorted(directory.iterdir()):
            if item.is_file() and (resource.items is None or item.name in resource.items):
                try:
                    exposed.append(item.read_text(encoding="utf-8").strip())
                except (OSError, UnicodeDecodeError):
                    continue  # binary keys cannot appear in text logs anyway
        return exposed
    if resource.items is not None:
        for key in resource.items:
            env[key] = local.key(conn, what, resource.name, key)
        return [env[key] for key in resource.items]
    values = local.values(resource.name)
    if values is None:
        raise _resource_problem(
            conn,
            f"{what} `{resource.name}` has no local file {local.directory / resource.name}.env",
            f"create it with `KEY=value` lines, or list the keys under `items` to read them "
            f"from the environment (set ${ENV_SECRETS_DIR} to use another directory)",
        )
    env.update(values)
    return list(values.values())


def connection_env(
    conn: Connection,
    *,
    secrets_dir: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """The env vars a local process gets for ``conn``, and the secret values to mask.

    ``environ`` (default: the current environment) is where ``items`` keys missing from a local
    secret file are looked up. See the module docstring for the full mapping.

    Raises:
        ConnectionsError: a secret, config map or key the connection needs is not available.
    """
    local = _LocalResources(
        resolve_secrets_dir(secrets_dir), os.environ if environ is None else environ
    )
    prefix = connection_env_prefix(conn.name)
    env: dict[str, str] = {}
    secret_values: list[str] = []

    if conn.schema_ is not None:
        schema = conn.schema_
        env[prefix + "SCHEMA"] = json.dumps(schema, sort_keys=True, default=str)
        path = schema.get("hostPath") if conn.kind == "host_path" else schema.get("mountPath")
        if path and conn.kind in ("host_path", "volume_claim"):
            env[prefix + "PATH"] = str(path)
        if schema.get("bucket"):
            env[prefix + "BUCKET"] = str(schema["bucket"])
        if schema.get("url"):
            env[prefix + "URL"] = str(schema["url"])

    if conn.config_map is not None:
        _expose(conn, conn.config_map, "config map", "CONFIG_PATH", local, env)
    if conn.secret is not None:
        secret_values += _expose(conn, conn.secret, "secret", "SECRET_PATH", local, env)

    for var in conn.env or []:
        if var.value_from is None:
            env[var.name] = "" if var.value is None else _env_str(var.value)
            continue
        ref_kind, ref = _value_from(conn, var)
        value = local.key(conn, ref_kind, ref["name"], ref["key"])
        env[var.name] = value
        if ref_kind == "secret":
            secret_values.append(value)
    return env, secret_values


def _env_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _value_from(conn: Connection, var: EnvVar) -> tuple[str, dict[str, Any]]:
    source = var.value_from or {}
    for key, kind in (("secretKeyRef", "secret"), ("configMapKeyRef", "config map")):
        ref = source.get(key)
        if isinstance(ref, dict) and ref.get("name") and ref.get("key"):
            return kind, ref
    raise _resource_problem(
        conn,
        f"env var `{var.name}` uses `valueFrom` {sorted(source)} which has no local meaning",
        "use `secretKeyRef` or `configMapKeyRef` with `name` and `key`, or a literal `value`",
    )


def connections_env(
    connections: Iterable[Connection],
    *,
    secrets_dir: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """`connection_env` over several connections, merged in order (later wins)."""
    env: dict[str, str] = {}
    secrets: list[str] = []
    for conn in connections:
        conn_env, conn_secrets = connection_env(conn, secrets_dir=secrets_dir, environ=environ)
        env.update(conn_env)
        secrets += conn_secrets
    return env, secrets


@dataclass(frozen=True)
class UsedConnections:
    """The connections an op uses, resolved once: their models, env and secret values."""

    used: list[Connection]
    env: dict[str, str]
    secrets: tuple[str, ...]

    @property
    def schemas(self) -> dict[str, dict[str, Any]]:
        """Each connection's ``schema`` by name: ``connections.NAME`` in templates."""
        return {conn.name: dict(conn.schema_ or {}) for conn in self.used}


def use_connections(
    connections: Mapping[str, Connection] | None, names: Iterable[str]
) -> UsedConnections:
    """The connections ``names`` (from ``connections``; None: `load_connections()`), their
    env and secrets.

    Raises:
        UnknownConnectionError: a name the connections do not define.
        ConnectionsError: a connection's local secret or config map is missing.
    """
    if connections is None:
        connections = load_connections()
    used = [get_connection(connections, name) for name in names]
    env, secrets = connections_env(used)
    return UsedConnections(used, env, tuple(dict.fromkeys(secrets)))
