"""The `-f`, `-P` and `--hub` arguments shared by every command that reads a Polyaxonfile."""

from __future__ import annotations

import argparse

__all__ = ["add_file_args"]


def add_file_args(parser: argparse.ArgumentParser, *, params: bool = True) -> None:
    parser.add_argument(
        "-f",
        "--file",
        dest="files",
        action="append",
        required=True,
        metavar="FILE",
        help="the Polyaxonfile; repeat to apply presets on top of it, in order",
    )
    if params:
        parser.add_argument(
            "-P",
            "--param",
            dest="params",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="a param value, parsed by the input's declared type (repeatable)",
        )
    parser.add_argument(
        "--hub",
        dest="hub_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of hub components for hubRef (also $POLYAXON_PREFECT_HUB)",
    )
