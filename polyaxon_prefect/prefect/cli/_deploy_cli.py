"""``polyaxon-prefect deploy``: the command line of `prefect._deploy.deploy`.

Light at import (the CLI builds its parser before Prefect is imported); Prefect loads when the
command runs.
"""

from __future__ import annotations

import argparse
import sys

from polyaxon_prefect._cli_args import (
    Subparsers,
    add_file_args,
    json_object,
    prefect_name,
    text_value,
)
from polyaxon_prefect.exceptions import PolyaxonfileError

__all__ = ["add_deploy_parser", "cmd_deploy"]


def add_deploy_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "deploy",
        help="create or update a Prefect deployment of a Polyaxonfile (typed form, schedule)",
        description=(
            "Deploy a Polyaxonfile to a work pool: the deployment's form is the component's "
            "inputs (types, defaults, descriptions, options, bounds; enforced by the server), "
            "its schedule is the file's `schedule`, and each run reads the file again. The "
            "deployment is named after the operation; deploying the same operation again "
            "updates it, and a name another operation's deployment has is refused unless "
            "--force. Start runs with `prefect deployment run FLOW/NAME --param name=value` "
            "or from the UI."
        ),
    )
    add_file_args(parser)
    parser.add_argument(
        "--pool", required=True, type=prefect_name, help="the work pool the runs go to"
    )
    parser.add_argument(
        "--name",
        default=None,
        type=prefect_name,
        help="the deployment's name (default: the operation's `name`, else the component's)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="take the name even if another operation's deployment has it (replacing it)",
    )
    parser.add_argument(
        "--tag",
        dest="tags",
        action="append",
        default=[],
        type=text_value,
        help="a tag (repeatable)",
    )
    parser.add_argument(
        "--backend",
        choices=("local", "kubeflow", "native", "docker"),
        default=None,
        help="where the runs' distributed ops go (default: local processes in the flow run)",
    )
    parser.add_argument(
        "--job-variables",
        default=None,
        type=json_object,
        metavar="JSON",
        help="the pool's job variables for this deployment, e.g. '{\"gpu_count\": 1}'",
    )
    return parser


def cmd_deploy(args: argparse.Namespace) -> int:
    from polyaxon_prefect.loading import parse_cli_params
    from polyaxon_prefect.prefect._api import BACKEND_ENV
    from polyaxon_prefect.prefect.deployments._deploy import deploy

    variables = dict(args.job_variables or {})  # a JSON object: checked by its argument type
    if args.backend:
        variables["env"] = {**dict(variables.get("env") or {}), BACKEND_ENV: args.backend}
    try:
        deployed = deploy(
            args.files[0],
            args.files[1:],
            pool=args.pool,
            name=args.name,
            tags=args.tags,
            params=parse_cli_params(args.params or []),
            job_variables=variables,
            replace=args.force,
        )
    except PolyaxonfileError as error:
        for problem in [*error.problems, *error.warnings]:
            print(problem.format(), file=sys.stderr)
        count = len(error.problems)
        print(f"{count} problem{'s' if count != 1 else ''} found.", file=sys.stderr)
        return 1
    for warning in deployed.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(
        f"{deployed.action} deployment {deployed.full_name} (id {deployed.deployment_id}) "
        f"on pool `{args.pool}`"
    )
    if deployed.previous is not None:
        print(f"it replaced the deployment of {deployed.previous}")
    planned = deployed.schedule
    if planned is not None and planned.schedule is not None:
        print(f"schedule: {planned.schedule}")
    if planned is not None and planned.run_at is not None:
        print(f"one run scheduled at {planned.run_at.isoformat()}")
    print(f"run it: prefect deployment run '{deployed.full_name}' --param NAME=VALUE")
    return 0
