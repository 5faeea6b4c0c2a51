"""The local runtime's building blocks: processes, run context, outputs and connections.

Nothing here imports Prefect: the flow layer is written on top of these functions.
"""

from polyaxon_prefect.runtime._connections import (
    Connection,
    ConnectionResource,
    ConnectionsFile,
    EnvVar,
    connection_env,
    connections_env,
    get_connection,
    load_connections,
)
from polyaxon_prefect.runtime._context import (
    RunContext,
    create_run_context,
    new_run_context,
    project_name,
    resolve_artifacts_root,
)
from polyaxon_prefect.runtime._errors import (
    CommandNotFoundError,
    ConnectionsError,
    OutputsError,
    ProcessStartError,
    RunRuntimeError,
    UnknownConnectionError,
)
from polyaxon_prefect.runtime._outputs import read_metrics, read_outputs, validate_outputs
from polyaxon_prefect.runtime._process import ProcessResult, mask_secrets, run_process

__all__ = [
    "CommandNotFoundError",
    "Connection",
    "ConnectionResource",
    "ConnectionsError",
    "ConnectionsFile",
    "EnvVar",
    "OutputsError",
    "ProcessResult",
    "ProcessStartError",
    "RunContext",
    "RunRuntimeError",
    "UnknownConnectionError",
    "connection_env",
    "connections_env",
    "create_run_context",
    "get_connection",
    "load_connections",
    "mask_secrets",
    "new_run_context",
    "project_name",
    "read_metrics",
    "read_outputs",
    "resolve_artifacts_root",
    "run_process",
    "validate_outputs",
]
