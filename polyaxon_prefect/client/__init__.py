"""The thin client: the run verbs that only read the server (``ls``, ``get``), over Prefect's
REST API, without importing Prefect, Optuna or the flow layer (standard library only).

One sub-package per concept, below the command line (`_thin_cli`) that answers a plain ``ls``,
``get``, ``statuses``, ``logs``, ``stop``, ``artifacts``, ``invalidate`` or ``server status``:

- `rest`: the API itself: the calls the readers make (`rest._protocol.Api`), sent over the
  standard library's HTTP (`rest._http`), and what the client needs of the API (`rest._adapter`);
- `runs`: a run read back in Polyaxon's terms, the one code path of both ways in: the state
  mapping (`runs._status_words`), its row and record (`runs._run_reader`), its report's JSON
  section (`runs._reports`), progress label (`runs._progress_label`) and status history
  (`runs._statuses`), the printers (`runs._show`) and the stop request (`runs._stop`);
- `logs`: a run's log lines read (`logs._log_reader`), selected and printed (`logs._log_lines`,
  `logs._logs_verb`);
- `run_files`: what a run left on this machine: where (`run_files._run_paths`), listed and
  copied (`run_files._artifacts_verb`, `run_files._copy_files`), the op cache's records of it
  (`run_files._invalidate`) and the name rule they are checked by (`run_files._name_rule`);
- `server`: which server to ask, known without Prefect (`server._thin_server`), the background
  server's record and leases (`server._local_server`), the sessions' journals that hold a
  database back until its dead runs are settled (`server._session_journals`), the server's
  status (`server._server_status`) and `run`'s side of its warm runner (`server._runner`).

The flow layer (`prefect/`) sends the same requests through Prefect's client; `_thin_cli` sends
them through `rest._http` when the server is known without Prefect, and otherwise leaves the
command to the flow layer (saying why under ``POLYAXON_PREFECT_DEBUG_THIN``: `_declined`).
"""

from polyaxon_prefect.client._declined import ENV_DEBUG_THIN, declined
from polyaxon_prefect.client._thin_cli import ls_args, on_server, thin_main, wants_query
from polyaxon_prefect.client.rest._protocol import Api
from polyaxon_prefect.client.run_files._invalidate import (
    CACHE_DIR_NAME,
    CACHE_KEY,
    drop_cached_runs,
    invalidate_run,
    run_uuids,
)
from polyaxon_prefect.client.run_files._run_paths import (
    DEFAULT_ARTIFACTS_ROOT,
    ENV_ARTIFACTS_ROOT,
    SEGMENT,
    find_run_path,
    resolve_artifacts_root,
)
from polyaxon_prefect.client.runs._progress_label import (
    PROGRESS_LABEL,
    UPDATED_KEY,
    format_eta,
    progress_from_labels,
    progress_words,
)
from polyaxon_prefect.client.runs._reports import (
    DATA_HEADING,
    DISPLAY_DIGITS,
    FENCE,
    display,
    read_data_section,
    trial_results,
)
from polyaxon_prefect.client.runs._run_reader import (
    KIND_LABEL,
    PAGE,
    RECORD_SUFFIX,
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
from polyaxon_prefect.client.runs._show import print_ls, print_run
from polyaxon_prefect.client.runs._status_words import (
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
from polyaxon_prefect.client.runs._statuses import StatusChange, status_changes, status_history
from polyaxon_prefect.client.server._runner import ENV_RUNNER, SOCKET_FILE, warm_run
from polyaxon_prefect.client.server._thin_server import profile_api_url

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
