"""Errors raised while running an op locally (processes, outputs, connections)."""

from __future__ import annotations

from polyaxon_prefect.exceptions import PolyaxonfileError, PolyaxonPrefectError

__all__ = [
    "CommandNotFoundError",
    "ConnectionsError",
    "InitStepError",
    "OutputsError",
    "ProcessStartError",
    "RunRuntimeError",
    "UnknownConnectionError",
]


class RunRuntimeError(PolyaxonPrefectError):
    """Root of the errors raised while executing a run (as opposed to checking a file)."""


class ProcessStartError(RunRuntimeError, OSError):
    """The operating system refused to start the op's process (bad cwd, not executable, ...)."""


class CommandNotFoundError(ProcessStartError):
    """The first element of ``command`` is neither on ``PATH`` nor an existing file."""

    def __init__(self, command: str, hint: str) -> None:
        self.command = command
        self.hint = hint
        super().__init__(f"command `{command}` was not found; {hint}")


class OutputsError(RunRuntimeError, ValueError):
    """A run's ``outputs.json`` (written by the user's code) cannot be read."""


class ConnectionsError(PolyaxonfileError):
    """The connections file is invalid; carries every problem found, located by line."""


class UnknownConnectionError(RunRuntimeError, KeyError):
    """An op refers to a connection name that the connections file does not define."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        listed = ", ".join(f"`{k}`" for k in known) if known else "none are defined"
        super().__init__(f"connection `{name}` is not defined (known connections: {listed})")

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class InitStepError(Exception):
    """An init step failed; the message names the step and the cause.

    Not a `RunRuntimeError`: it never leaves the runtime, `execute_job` turns it into a failed
    `RunResult` whose message is this one.
    """
