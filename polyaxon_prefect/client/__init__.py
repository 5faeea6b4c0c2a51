"""The thin client: the run verbs that only read the server (``ls``, ``get``), over Prefect's
REST API, without importing Prefect, Optuna or the flow layer (standard library only).

The pure parts here are the one code path of both ways in: the state mapping (`_states`),
how a run's row and record are read from the API's JSON (`_runs`, `_reports`), how they are
printed (`_show`) and where a run's directory is (`_paths`). The flow layer (`prefect/`) sends
the same requests through Prefect's client; `_cli` sends them through `_http` when the server
is known without Prefect (`_server`), and otherwise leaves the command to the flow layer.
"""

from polyaxon_prefect.client._cli import ls_args, on_server, thin_main, wants_query
from polyaxon_prefect.client._declined import ENV_DEBUG_THIN, declined
from polyaxon_prefect.client._invalidate import (
    CACHE_DIR_NAME,
    CACHE_KEY,
    drop_cached_runs,
    invalidate_run,
    run_uuids,
)
from polyaxon_prefect.client._paths import (
    DEFAULT_ARTIFACTS_ROOT,
    ENV_ARTIFACTS_ROOT,
    SEGMENT,
    find_run_path,
    resolve_artifacts_root,
)
from polyaxon_prefect.client._progress import (
    PROGRESS_LABEL,
    UPDATED_KEY,
    format_eta,
    progress_from_labels,
    progress_words,
)
from polyaxon_prefect.client._reports import (
    DATA_HEADING,
    DISPLAY_DIGITS,
    FENCE,
    display,
    read_data_section,
    trial_results,
)
from polyaxon_prefect.client._runner import ENV_RUNNER, SOCKET_FILE, warm_run
from polyaxon_prefect.client._runs import (
    KIND_LABEL,
    PAGE,
    RECORD_SUFFIX,
    Api,
    artifacts_of,
    get_run,
    list_runs,
    name_note,
    read_details,
    read_record,
    row,
    seconds_run,
    task_ops,
)
from polyaxon_prefect.client._server import profile_api_url
from polyaxon_prefect.client._show import print_ls, print_run
from polyaxon_prefect.client._states import (
    BY_NAME,
    BY_TYPE,
    CACHED_STATE_NAME,
    SKIPPED_STATE_NAME,
    STATE_TYPES,
    STATUSES,
    TIMED_OUT_STATE_NAME,
    UPSTREAM_FAILED_STATE_NAME,
    status_of,
)
from polyaxon_prefect.client._statuses import StatusChange, status_changes, status_history

__all__ = [
    "BY_NAME",
    "BY_TYPE",
    "CACHED_STATE_NAME",
    "CACHE_DIR_NAME",
    "CACHE_KEY",
    "DATA_HEADING",
    "DEFAULT_ARTIFACTS_ROOT",
    "DISPLAY_DIGITS",
    "ENV_ARTIFACTS_ROOT",
    "ENV_DEBUG_THIN",
    "ENV_RUNNER",
    "FENCE",
    "KIND_LABEL",
    "PAGE",
    "PROGRESS_LABEL",
    "RECORD_SUFFIX",
    "SEGMENT",
    "SKIPPED_STATE_NAME",
    "SOCKET_FILE",
    "STATE_TYPES",
    "STATUSES",
    "TIMED_OUT_STATE_NAME",
    "UPDATED_KEY",
    "UPSTREAM_FAILED_STATE_NAME",
    "Api",
    "StatusChange",
    "artifacts_of",
    "declined",
    "display",
    "drop_cached_runs",
    "find_run_path",
    "format_eta",
    "get_run",
    "invalidate_run",
    "list_runs",
    "ls_args",
    "name_note",
    "on_server",
    "print_ls",
    "print_run",
    "profile_api_url",
    "progress_from_labels",
    "progress_words",
    "read_data_section",
    "read_details",
    "read_record",
    "resolve_artifacts_root",
    "row",
    "run_uuids",
    "seconds_run",
    "status_changes",
    "status_history",
    "status_of",
    "task_ops",
    "thin_main",
    "trial_results",
    "wants_query",
    "warm_run",
]
