"""The commands of the CLI that talk to Prefect: each one's parser (built without importing
Prefect: ``check`` and ``--help`` stay fast) and its function (which imports Prefect when it
runs). `polyaxon_prefect.cli` registers them from here, the one public door to the modules
that define them, so a new verb is a line here and a line there.
"""

from __future__ import annotations

from polyaxon_prefect.prefect.cli._cli import add_run_parser, cmd_run
from polyaxon_prefect.prefect.cli._deploy_cli import add_deploy_parser, cmd_deploy
from polyaxon_prefect.prefect.cli._logs_cli import add_logs_parsers, cmd_logs, cmd_statuses
from polyaxon_prefect.prefect.cli._metrics_cli import (
    add_metrics_parsers,
    cmd_metrics,
    cmd_tensorboard,
)
from polyaxon_prefect.prefect.cli._restart_cli import add_restart_parsers, cmd_restart, cmd_resume
from polyaxon_prefect.prefect.cli._run_files_cli import (
    add_run_files_parsers,
    cmd_artifacts,
    cmd_invalidate,
)
from polyaxon_prefect.prefect.cli._runs_cli import add_runs_parsers, cmd_get, cmd_ls, cmd_server
from polyaxon_prefect.prefect.cli._stop_cli import add_stop_parser, cmd_stop

__all__ = [
    "add_deploy_parser",
    "add_logs_parsers",
    "add_metrics_parsers",
    "add_restart_parsers",
    "add_run_files_parsers",
    "add_run_parser",
    "add_runs_parsers",
    "add_stop_parser",
    "cmd_artifacts",
    "cmd_deploy",
    "cmd_get",
    "cmd_invalidate",
    "cmd_logs",
    "cmd_ls",
    "cmd_metrics",
    "cmd_restart",
    "cmd_resume",
    "cmd_run",
    "cmd_server",
    "cmd_statuses",
    "cmd_stop",
    "cmd_tensorboard",
]
