"""The local runtime's building blocks: processes, run context, outputs and connections.

Nothing here imports Prefect: the flow layer is written on top of these functions. The job
runner and its executors load on first use (they render templates), so importing the package
stays light.
"""

from typing import TYPE_CHECKING

from polyaxon_prefect._lazy import lazy_attributes
from polyaxon_prefect.client.logs._log_lines import (
    LogLine,
    exit_code,
    line_record,
    select_lines,
    shown_line,
)
from polyaxon_prefect.runtime._context import (
    RunContext,
    find_run_path,
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
from polyaxon_prefect.runtime.cache._code_rules import (
    CODE_MAX_BYTES_ENV,
    CODE_MAX_FILES_ENV,
    CodeBudgetError,
    short_code,
)
from polyaxon_prefect.runtime.cache._run_cache import RunCache
from polyaxon_prefect.runtime.logs._log_files import ChildIndex, read_log_files, record_child
from polyaxon_prefect.runtime.metrics._metric_history import (
    History,
    jsonable_history,
    metric_history,
    run_metric_history,
)
from polyaxon_prefect.runtime.metrics._tensorboard import (
    events_path,
    metric_events,
    tensorboard_installed,
)
from polyaxon_prefect.runtime.render._connections import (
    Connection,
    ConnectionResource,
    ConnectionsFile,
    EnvVar,
    connection_env,
    connections_env,
    get_connection,
    load_connections,
)
from polyaxon_prefect.runtime.render._options import PrepareOptions
from polyaxon_prefect.runtime.session._process import ProcessResult, mask_secrets, run_process

if TYPE_CHECKING:
    from polyaxon_prefect.runtime._executors import (
        EXECUTORS,
        Executor,
        executor_for,
        register_executor,
    )
    from polyaxon_prefect.runtime._local_service import (
        ServiceContext,
        announce_serving,
        forget_serving,
        on_serving,
        service_settings,
        service_url,
    )
    from polyaxon_prefect.runtime._one_process import (
        PreparedJob,
        execute_job,
        prepare_job,
    )
    from polyaxon_prefect.runtime._result import RunResult
    from polyaxon_prefect.runtime.cluster._cluster_compile import cluster_manifests
    from polyaxon_prefect.runtime.cluster._cluster_prepare import (
        CONNECTIONS_ENV,
        PreparedManifests,
        prepare_cluster,
        read_connections_file,
    )
    from polyaxon_prefect.runtime.cluster._handback_outcome import handback_outcome
    from polyaxon_prefect.runtime.gpu._gpu_admit import check_gpus_up_front
    from polyaxon_prefect.runtime.logs._run_secrets import run_secrets
    from polyaxon_prefect.runtime.render._init_steps import INIT_HANDLERS
    from polyaxon_prefect.runtime.render._locate import locate_problems
    from polyaxon_prefect.runtime.render._param_values import merge_params
    from polyaxon_prefect.runtime.render._render_run import render_run
    from polyaxon_prefect.runtime.session._session import request_stop, stop_requested

__all__ = [
    "CODE_MAX_BYTES_ENV",
    "CODE_MAX_FILES_ENV",
    "CONNECTIONS_ENV",
    "EXECUTORS",
    "INIT_HANDLERS",
    "ChildIndex",
    "CodeBudgetError",
    "CommandNotFoundError",
    "Connection",
    "ConnectionResource",
    "ConnectionsError",
    "ConnectionsFile",
    "EnvVar",
    "Executor",
    "History",
    "LogLine",
    "OutputsError",
    "PrepareOptions",
    "PreparedJob",
    "PreparedManifests",
    "ProcessResult",
    "ProcessStartError",
    "RunCache",
    "RunContext",
    "RunResult",
    "RunRuntimeError",
    "ServiceContext",
    "UnknownConnectionError",
    "announce_serving",
    "check_gpus_up_front",
    "cluster_manifests",
    "connection_env",
    "connections_env",
    "events_path",
    "execute_job",
    "executor_for",
    "exit_code",
    "find_run_path",
    "forget_serving",
    "get_connection",
    "handback_outcome",
    "jsonable_history",
    "line_record",
    "load_connections",
    "locate_problems",
    "mask_secrets",
    "merge_params",
    "metric_events",
    "metric_history",
    "new_run_context",
    "on_serving",
    "prepare_cluster",
    "prepare_job",
    "project_name",
    "read_connections_file",
    "read_log_files",
    "read_metrics",
    "read_outputs",
    "record_child",
    "register_executor",
    "render_run",
    "request_stop",
    "resolve_artifacts_root",
    "run_metric_history",
    "run_process",
    "run_secrets",
    "select_lines",
    "service_settings",
    "service_url",
    "short_code",
    "shown_line",
    "stop_requested",
    "tensorboard_installed",
    "validate_outputs",
]

__getattr__ = lazy_attributes(
    __name__,
    {
        **dict.fromkeys(
            ("EXECUTORS", "Executor", "executor_for", "register_executor"), "_executors"
        ),
        **dict.fromkeys(("PreparedManifests", "prepare_cluster"), "cluster._cluster_prepare"),
        "RunResult": "_result",
        "run_secrets": "logs._run_secrets",
        **dict.fromkeys(
            (
                "ServiceContext",
                "announce_serving",
                "forget_serving",
                "on_serving",
                "service_settings",
                "service_url",
            ),
            "_local_service",
        ),
        "PreparedJob": "_prepared",
        **dict.fromkeys(("execute_job", "prepare_job"), "_one_process"),
        "render_run": "render._render_run",
        "merge_params": "render._param_values",
        "INIT_HANDLERS": "render._init_steps",
        "locate_problems": "render._locate",
        "cluster_manifests": "cluster._cluster_compile",
        **dict.fromkeys(("CONNECTIONS_ENV", "read_connections_file"), "cluster._cluster_prepare"),
        "handback_outcome": "cluster._handback_outcome",
        "check_gpus_up_front": "gpu._gpu_admit",
        **dict.fromkeys(("request_stop", "stop_requested"), "session._session"),
    },
)
