"""The `-f`, `-P` and `--hub` arguments shared by every command that reads a Polyaxonfile, and
the argument types every command checks its flags with."""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeAlias

__all__ = [
    "Subparsers",
    "add_file_args",
    "add_params_arg",
    "add_run_arg",
    "deployment_ref",
    "json_object",
    "k8s_namespace",
    "port",
    "prefect_name",
    "seconds",
    "text_value",
    "whole_number",
]

Subparsers: TypeAlias = "argparse._SubParsersAction[Any]"
"""What ``parser.add_subparsers()`` returns, which each command adds its parser to (of the
main parser's own class: ``Any``; a string: the class is not subscriptable at run time)."""


def add_file_args(
    parser: argparse.ArgumentParser, *, params: bool = True, file_required: bool = True
) -> None:
    """``-f``, ``-P`` and ``--hub``; ``file_required=False`` where another flag can name the
    Polyaxonfile (``run --url``: every ``-f`` is then a preset), checked by the command."""
    parser.add_argument(
        "-f",
        "--file",
        dest="files",
        action="append",
        required=file_required,
        default=None if file_required else [],
        metavar="FILE",
        help="the Polyaxonfile; repeat to apply presets on top of it, in order",
    )
    if params:
        add_params_arg(parser)
    parser.add_argument(
        "--hub",
        dest="hub_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of hub components for hubRef (also $POLYAXON_PREFECT_HUB)",
    )


def add_run_arg(parser: argparse.ArgumentParser) -> None:
    """The positional ``run`` of every verb on one run (``get``, ``logs``, ``stop``...)."""
    parser.add_argument(
        "run",
        type=text_value,
        help="the flow run's id or name, or the Polyaxon run uuid that `run` printed",
    )


def add_params_arg(
    parser: argparse.ArgumentParser,
    help: str = "a param value, parsed by the input's declared type (repeatable)",
) -> None:
    """``-P/--param NAME=VALUE``, repeatable, into ``params`` (Polyaxon's flag)."""
    parser.add_argument(
        "-P",
        "--param",
        dest="params",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=help,
    )


# Argument types: a bad value is argparse's one-line usage error (exit 2) naming the rule,
# never a traceback from deep inside Prefect or a server that started for nothing.

_BANNED_IN_NAMES = "/%&<>"
"""What Prefect refuses in the name of a deployment, flow or work pool."""
_K8S_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _no_control(text: str, what: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{what} must not be empty")
    if any(ord(char) < 32 or ord(char) == 127 for char in text):
        raise argparse.ArgumentTypeError(f"{what} must not hold control characters: {text!r}")
    return text


def port(text: str) -> int:
    """A TCP port: a whole number from 1 to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a port is a whole number, not {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is from 1 to 65535, not {value}")
    return value


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argument type: a whole number from ``low`` (to ``high``), its name in the message
    argparse prints (``--tail``: ``whole_number(0)``, ``--more``: ``whole_number(1)``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < low or (high is not None and value > high):
            wanted = f"from {low} to {high}" if high is not None else f"{low} or more"
            raise argparse.ArgumentTypeError(f"must be {wanted}, not {value}")
        return value

    parse.__name__ = "whole number"  # argparse names the type by it in "invalid ... value"
    return parse


def seconds(text: str) -> float:
    """A duration: a finite number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, not {text!r}")
    return value


def text_value(text: str) -> str:
    """Any one-line text that is not blank (a host, a tag, a run's id or name)."""
    return _no_control(text, "the value")


def prefect_name(text: str) -> str:
    """A deployment's or work pool's name, as Prefect accepts it (checked here, before a server
    is used: Prefect's own check is a validation traceback)."""
    _no_control(text, "a name")
    banned = sorted({char for char in text if char in _BANNED_IN_NAMES})
    if banned:
        raise argparse.ArgumentTypeError(
            f"{text!r} holds {' '.join(banned)}: a Prefect name may hold any character but "
            f"{' '.join(_BANNED_IN_NAMES)} and control characters"
        )
    return text


def deployment_ref(text: str) -> str:
    """``FLOW/DEPLOYMENT``: two Prefect names and one slash."""
    flow, sep, name = text.partition("/")
    if not sep or not flow or not name:
        raise argparse.ArgumentTypeError(f"expected FLOW/DEPLOYMENT, got {text!r}")
    prefect_name(flow)
    prefect_name(name)
    return text


def json_object(text: str) -> dict[str, Any]:
    """A JSON object, e.g. ``'{"gpu_count": 1}'``."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object ({{...}}), not {text!r}")
    return value


def k8s_namespace(text: str) -> str:
    """A Kubernetes namespace: a DNS label (a-z, 0-9, `-`; 63 at most, alphanumeric ends)."""
    if not _K8S_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a namespace: lowercase a-z, 0-9 and `-`, at most 63 characters, "
            "starting and ending with a letter or digit"
        )
    return text
