"""How a pod hands its outputs and metrics back: one delimited block at the end of its log.

A local job writes ``outputs.json`` and ``metrics.jsonl`` into the run's directory, where the
runner reads them. A pod writes them into its own ``emptyDir``, which is gone when the pod is,
and nothing else reaches this machine from a cluster *for sure*: an artifacts store may not be
configured, a shared volume needs a claim both sides can mount. The pod's log does: the
watcher already streams it (``read_namespaced_pod_log``), every cluster keeps it until the pod
is deleted, and reading it needs no more RBAC than the logs the user sees. So the pod's command
is wrapped by a POSIX ``sh`` script (no Python, no extra tool in the image: ``sed``, ``tail``,
``wc``, ``printf``) that runs the user's command, then prints::

    ::polyaxon-prefect:<nonce>:: begin <uuid>
    ::polyaxon-prefect:<nonce>:: outputs <one line of outputs.json>
    ::polyaxon-prefect:<nonce>:: metrics <one line of metrics.jsonl>
    ::polyaxon-prefect:<nonce>:: end <exit code>

and exits with the command's exit code. Every line of the block carries the marker, so it
survives being interleaved with stderr and split across log chunks; the marker holds a nonce
chosen when the manifest is built, and the *last* complete block wins, so a user's program
that prints something looking like a block (even with the run's uuid) cannot stand for it: the
wrapper's block always comes after everything the command printed. The channel is bounded
(`LIMIT_BYTES` for ``outputs.json``; the last `METRICS_LINES` metrics lines), and a file over
the bound is reported as such (``too-big``), which fails the op with a message saying so rather
than passing truncated values downstream.

`wrap_command` builds the pod's command; `HandbackParser` reads a log fed in any chunks.
Both are pure: the watcher feeds the parser, the runtime writes what it found into the run.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "LIMIT_BYTES",
    "METRICS_LINES",
    "Handback",
    "HandbackParser",
    "marker",
    "new_nonce",
    "wrap_command",
]

LIMIT_BYTES = 1024 * 1024
"""The largest ``outputs.json`` the log channel carries (1 MiB): API servers and log
backends cut longer logs, and outputs are values for refs and conditions, not data sets."""
METRICS_LINES = 1000
"""How many of the last ``metrics.jsonl`` lines come back (the last value of each metric is
what a run reports; a sweep's objective and early stopping read those)."""

_PREFIX = "::polyaxon-prefect:"

# $1: the outputs directory, $2: the marker, $3: the run's uuid; then the user's command.
_SCRIPT = """\
d="$1"; m="$2"; u="$3"; shift 3
"$@"
code=$?
printf '\\n%s begin %s\\n' "$m" "$u"
f="$d/outputs.json"
if [ -f "$f" ]; then
  size=$(wc -c < "$f" | tr -d ' ')
  if [ "$size" -gt {limit} ]; then
    printf '%s too-big outputs %s\\n' "$m" "$size"
  else
    { cat "$f"; printf '\\n'; } | sed "s|^|$m outputs |"
  fi
fi
f="$d/metrics.jsonl"
if [ -f "$f" ]; then
  { tail -n {lines} "$f"; printf '\\n'; } | sed "/^$/d; s|^|$m metrics |"
fi
printf '%s end %s\\n' "$m" "$code"
exit "$code"
"""


def new_nonce() -> str:
    """A fresh random token for one pod's marker."""
    return secrets.token_hex(6)


def marker(nonce: str) -> str:
    """The prefix of every line of a handback block."""
    return f"{_PREFIX}{nonce}::"


def wrap_command(
    command: Sequence[str], args: Sequence[str] | None, outputs_dir: str, uuid: str, nonce: str
) -> list[str]:
    """The pod's ``command`` that runs ``command + args`` and then prints the handback block
    (the container's ``args`` are folded in: the wrapper passes them to the command as is,
    never through a shell)."""
    script = _SCRIPT.replace("{limit}", str(LIMIT_BYTES)).replace("{lines}", str(METRICS_LINES))
    return [
        "sh",
        "-c",
        script,
        "plx-handback",
        outputs_dir,
        marker(nonce),
        uuid,
        *command,
        *(args or []),
    ]


@dataclass
class Handback:
    """What one block said: ``outputs.json``'s text (None: the pod wrote none), the metrics
    lines, the command's exit code, and ``too_big`` (the size of an outputs file over the
    limit)."""

    outputs_text: str | None = None
    metrics_lines: list[str] = field(default_factory=list)
    exit_code: int | None = None
    too_big: int | None = None


@dataclass
class HandbackParser:
    """Reads a container's log in whatever chunks it arrives; `feed` returns the lines that
    are the user's (every handback line is taken out), `result` the last complete block."""

    nonce: str
    _pending: str = ""
    _current: Handback | None = None
    _outputs: list[str] = field(default_factory=list)
    _done: Handback | None = None
    _blank: bool = False
    """A blank line held back: the one the wrapper prints before its block (so the block
    starts on a line of its own) is dropped, any other is the user's."""

    def __post_init__(self) -> None:
        self._line = re.compile(rf"^{re.escape(marker(self.nonce))} (\S+) ?(.*)$")

    def feed(self, chunk: str) -> list[str]:
        """Take ``chunk`` (any part of the log); the complete user lines it ended."""
        text = self._pending + chunk
        *lines, self._pending = text.split("\n")
        return self._lines(lines)

    def close(self) -> list[str]:
        """The log is over: its last line, if it had no newline (and a blank line held)."""
        rest, self._pending = self._pending, ""
        shown = self._lines([rest] if rest else [])
        if self._blank:
            self._blank = False
            shown.append("")
        return shown

    def _lines(self, lines: list[str]) -> list[str]:
        shown: list[str] = []
        for raw in lines:
            line = raw.rstrip("\r")
            if self._take(line):
                self._blank = False
                continue
            if self._blank:
                shown.append("")
            self._blank = line == ""
            if line:
                shown.append(line)
        return shown

    def _take(self, line: str) -> bool:
        match = self._line.match(line)
        if match is None:
            return False
        word, rest = match.groups()
        if word == "begin":
            self._current, self._outputs = Handback(), []
        elif self._current is None:
            return True  # a stray line of the channel, not the user's either
        elif word == "outputs":
            self._outputs.append(rest)
        elif word == "metrics":
            if rest.strip():
                self._current.metrics_lines.append(rest)
        elif word == "too-big":
            size = rest.split()[-1] if rest.split() else ""
            self._current.too_big = int(size) if size.isdigit() else LIMIT_BYTES + 1
        elif word == "end":
            block = self._current
            block.outputs_text = "\n".join(self._outputs) if self._outputs else None
            block.exit_code = int(rest) if rest.strip().lstrip("-").isdigit() else None
            self._done, self._current = block, None
        return True

    def result(self) -> Handback | None:
        """The last complete block (None: the wrapper never finished one)."""
        return self._done
