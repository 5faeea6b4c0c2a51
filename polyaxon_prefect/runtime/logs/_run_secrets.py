"""Every secret of a run made of ops (a DAG, a sweep, DAGs nested in them), found up front.

Masking is per op when an op is prepared (its own connections' secrets), but a secret follows
its value: op ``a`` outputs a token read from its connection, op ``down`` receives it as a
param and prints it, and ``down`` has no connection to mask it by. So a run of several ops
masks, in every op's lines, ``job.log``, messages and artifacts, every secret of *any* of its
ops: the connections they name (their ``connections``, an init entry's or a param's
``connection``, a hook's), at any depth of nesting, and the credentials written into a URL
anywhere in the operation. They are collected before the first op starts: an op whose
upstream is reused on a restart, or served from the cache, masks them too.

A connection named by a template (``{{ ... }}``) is only known when its op renders it; that op
masks it then (and this process remembers it). A connection that cannot be read here (its
secret file missing) is left to the op that uses it, which fails with a located error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from polyaxon_prefect.runtime._errors import ConnectionsError
from polyaxon_prefect.runtime.logs._masking import remember_secrets, with_url_credentials
from polyaxon_prefect.runtime.render._connections import (
    Connection,
    connection_env,
    load_connections,
)
from polyaxon_prefect.specs import Operation

__all__ = ["run_secrets"]


def run_secrets(
    operation: Operation, connections: Mapping[str, Connection] | None = None
) -> tuple[str, ...]:
    """The secrets of every op of ``operation`` (its whole tree, as loaded), remembered by
    this process's masking; ``connections``: by name, None: the connections file's."""
    tree = operation.to_dict()
    names = set(_connection_names(tree))
    found: list[str] = []
    if names:
        try:
            known = load_connections() if connections is None else connections
        except ConnectionsError:  # the ops say so, located, when they are prepared
            known = {}
        for name in sorted(names & known.keys()):
            conn = known[name]
            try:
                found += connection_env(conn)[1]
            except ConnectionsError:
                continue
            found += with_url_credentials((), dict(conn.schema_ or {}))
    secrets = with_url_credentials(tuple(found), tree)
    remember_secrets(secrets)
    return secrets


def _connection_names(value: object) -> Iterator[str]:
    """Literal connection names anywhere in a dumped operation: ``connections: [...]`` and
    ``connection: ...`` (an init entry's, a param's, a hook's)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "connection" and isinstance(item, str):
                yield from _literal([item])
            elif key == "connections" and isinstance(item, list):
                yield from _literal(item)
            else:
                yield from _connection_names(item)
    elif isinstance(value, list):
        for item in value:
            yield from _connection_names(item)


def _literal(names: list[Any]) -> Iterator[str]:
    for name in names:
        if isinstance(name, str) and "{{" not in name:
            yield name
