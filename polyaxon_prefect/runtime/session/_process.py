"""Run an op's command as a child process: no shell, live log lines, hard timeout, no orphans.

Why not ``subprocess.run``: a task-level timeout (Prefect's included) cannot interrupt a thread
blocked in ``wait()``, output would arrive only at exit, and killing the direct child leaves its
own children (data loaders, ``torchrun`` workers) running. So the child gets its own process
group, both pipes are read by threads, and this function's calling thread owns every decision:
the deadline, cancellation, and delivery of each line to ``on_line`` (so callbacks that rely on
thread-local context, like a Prefect run logger, are called from the caller's thread).

Output is never held without bound: the pump threads mask each line (across the 64 KiB pieces
of an endless line too), append it to the run's log file (the full output), keep the last
lines, and hand lines on through a bounded queue; ``on_line`` (Prefect's logger, which ships
every line to the API) gets at most ``POLYAXON_PREFECT_LOG_LINES_PER_SECOND`` lines a second,
and a note says how many were left out and where the full output is. A job printing 100 MB in
a second is slowed by the pipe (back-pressure), not buffered in memory, and its end does not
wait for a backlog to be relayed.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import shutil
import signal as _signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from polyaxon_prefect.runtime._errors import CommandNotFoundError, ProcessStartError
from polyaxon_prefect.runtime.logs._job_log import JobLog
from polyaxon_prefect.runtime.session._session import SESSION_ENV, current_session, stop_requested
from polyaxon_prefect.runtime.session._spare_threads import run_in_thread

__all__ = [
    "ENV_LOG_LINES_PER_SECOND",
    "MIN_SECRET_LENGTH",
    "ProcessResult",
    "mask_secrets",
    "replace_secrets",
    "resolve_command",
    "run_process",
    "usable_secrets",
]

MIN_SECRET_LENGTH = 3
"""Shorter secret values are not masked: replacing every ``a`` or ``1`` would wreck the logs."""

_MASK = "***"
_MAX_LINE_CHARS = 64 * 1024  # a blob without newlines must not grow memory without bound
_POLL_SECONDS = 0.05
_PIPE_DRAIN_SECONDS = 1.0  # after the child is gone, how long to wait for pipes held elsewhere
_QUEUE_LINES = 10_000  # lines waiting for ``on_line``; more are written to the log file only
_RELAY_MAX_CHARS = 4096  # a longer line is cut in what ``on_line`` gets (the file has it all)
_FINAL_RELAY_SECONDS = 0.5  # after the child ended, how long the backlog may still be relayed
_NOTE_EVERY_SECONDS = 10.0  # how often a flood is summed up in the relayed lines
ENV_LOG_LINES_PER_SECOND = "POLYAXON_PREFECT_LOG_LINES_PER_SECOND"
DEFAULT_LOG_LINES_PER_SECOND = 100.0
_IS_POSIX = os.name == "posix"

LineCallback = Callable[[str, str], None]


@dataclass(frozen=True)
class ProcessResult:
    """How a child process ended.

    ``signal`` is set when the child was killed by a signal (its return code is ``-signal``);
    ``timed_out`` / ``cancelled`` say that *we* stopped it, whatever the return code then was.
    The tails hold the last lines of each stream, already masked.
    """

    returncode: int
    signal: int | None
    timed_out: bool
    duration: float
    stdout_tail: list[str] = field(default_factory=list)
    stderr_tail: list[str] = field(default_factory=list)
    cancelled: bool = False
    log_path: str | None = None
    """The file holding the whole output (masked), when one was asked for."""
    lines_not_relayed: int = 0
    """Lines that went to the log file only (over the relay's rate or queue)."""
    log_cut: str | None = None
    """Where and why the log file stops short of the output (a write failed), else None."""

    @property
    def succeeded(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.cancelled

    def describe(self) -> str:
        """One sentence for logs and error messages: why the process ended."""
        if self.timed_out:
            text = f"timed out after {self.duration:.1f}s and was stopped"
        elif self.cancelled:
            text = "was cancelled and stopped"
        elif self.signal is not None:
            text = f"was killed by signal {_signal_name(self.signal)}"
        else:
            text = f"exited with code {self.returncode}"
        return text


def _signal_name(number: int) -> str:
    try:
        return f"{_signal.Signals(number).name} ({number})"
    except ValueError:
        return str(number)


def mask_secrets(text: str, secrets: Sequence[str]) -> str:
    """Replace every occurrence of each secret value (of at least 3 chars) with ``***``."""
    return replace_secrets(text, usable_secrets(secrets))


def replace_secrets(text: str, usable: Sequence[str]) -> str:
    """`mask_secrets` with the secrets already made `usable_secrets` (sorted once for many
    texts: a DAG's report masks every string of thousands of ops)."""
    for secret in usable:
        text = text.replace(secret, _MASK)
    return text


def usable_secrets(secrets: Sequence[str]) -> list[str]:
    # Longest first, so a secret containing another one is masked whole.
    usable = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
    return sorted(usable, key=len, reverse=True)


def resolve_command(command: str, *, env: Mapping[str, str], cwd: Path) -> str:
    """The executable that ``command`` names, looked up the way ``execvpe`` would.

    A name with a path separator is a file relative to ``cwd``; a bare name is searched on the
    ``PATH`` of the child's environment (not ours), since that is what the child will run with.
    """
    if not command:
        raise CommandNotFoundError("", "the op's command is empty; set `run.container.command`")
    if os.sep in command or (os.altsep and os.altsep in command):
        candidate = Path(command)
        if not candidate.is_absolute():
            candidate = cwd / candidate
        if not candidate.is_file():
            raise CommandNotFoundError(
                command,
                f"no file at {candidate}; paths in `command` are relative to the working "
                f"directory {cwd}",
            )
        if not os.access(candidate, os.X_OK):
            raise CommandNotFoundError(
                command,
                f"{candidate} exists but is not executable; run `chmod +x` on it or call it "
                "through its interpreter, e.g. `command: [python, script.py]`",
            )
        return str(candidate)
    search_path = os.pathsep.join(os.get_exec_path(dict(env)))
    found = shutil.which(command, path=search_path)
    if found is None:
        raise CommandNotFoundError(
            command,
            "it is not on the PATH of the op's environment; install it, activate the "
            "environment that provides it, or give its full path",
        )
    return found


def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float | None = None,
    on_line: LineCallback | None = None,
    secrets: Sequence[str] = (),
    cancel_event: threading.Event | None = None,
    kill_grace: float = 5.0,
    tail_lines: int = 50,
    log_path: Path | None = None,
) -> ProcessResult:
    """Run ``argv`` (never through a shell) and wait for it, streaming its output.

    Args:
        argv: the program and its arguments; each element reaches the program as one argument.
        env: the child's *whole* environment (merge ``os.environ`` in yourself if wanted); the
            session variable of this process is added, so the reaper can find the child.
        cwd: the working directory of the child.
        timeout: seconds before the child's process group gets SIGTERM, then SIGKILL after
            ``kill_grace`` seconds; ``None`` for no limit.
        on_line: called as ``on_line("stdout" | "stderr", line)`` for lines as they arrive,
            from the calling thread, with secrets masked and the newline stripped; at most
            ``POLYAXON_PREFECT_LOG_LINES_PER_SECOND`` lines a second (the rest: a note).
        secrets: values to replace with ``***`` in every line, tail and the log file.
        cancel_event: when set (from any thread), the child is stopped as on a timeout and the
            result has ``cancelled=True``. A stop request of the session (an interrupted run)
            does the same.
        kill_grace: seconds between SIGTERM and SIGKILL.
        tail_lines: how many last lines of each stream the result keeps.
        log_path: a file that receives every line of both streams (masked), in order.

    Raises:
        CommandNotFoundError: ``argv[0]`` cannot be resolved.
        ProcessStartError: the process could not be started (missing cwd, permission, ...).

    The calling thread being interrupted (``KeyboardInterrupt``, an exception injected by a
    task timeout) stops the child's whole process group before the exception propagates.
    """
    argv = [str(part) for part in argv]
    if not argv:
        raise CommandNotFoundError("", "the op has no command to run")
    cwd = Path(cwd)
    if not cwd.is_dir():
        raise ProcessStartError(f"working directory {cwd} does not exist or is not a directory")
    executable = resolve_command(argv[0], env=env, cwd=cwd)
    session = current_session()
    log_file = JobLog(log_path) if log_path is not None else None
    started = time.monotonic()
    try:
        # this process's session, whatever the job's env copied: a session id inherited from a
        # parent run (a job that itself calls `polyaxon-prefect run`) would hide the job from
        # this session's reaper
        proc = _spawn(argv, executable, {**env, SESSION_ENV: session.id}, cwd)
    except ProcessStartError:
        if log_file is not None:
            log_file.close()
        raise
    if _IS_POSIX:
        session.track_group(proc.pid)

    runner = _Runner(proc, on_line, usable_secrets(secrets), tail_lines, kill_grace, log_file)
    try:
        result = runner.wait(started, timeout, cancel_event)
    except BaseException:
        runner.stop_now()
        raise
    finally:
        runner.close_log()
        if _IS_POSIX and not runner.group_alive():
            session.untrack_group(proc.pid)
    return replace(
        result,
        log_path=str(log_path) if log_file is not None else None,
        log_cut=log_file.cut if log_file is not None else None,
    )


def _spawn(
    argv: list[str], executable: str, env: Mapping[str, str], cwd: Path
) -> subprocess.Popen[str]:
    """Start the child in its own process group (one kill reaches all it starts), no shell,
    no stdin, both pipes text."""
    group: dict[str, object] = {}
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        group["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        group["start_new_session"] = True
    try:
        return subprocess.Popen(
            argv,
            executable=executable,
            env=dict(env),
            cwd=str(cwd),
            shell=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            **group,  # type: ignore[call-overload]
        )
    except OSError as exc:
        raise ProcessStartError(f"could not start `{argv[0]}`: {exc.strerror or exc}") from exc


def _lines_per_second() -> float:
    raw = os.environ.get(ENV_LOG_LINES_PER_SECOND, "")
    try:
        value = float(raw) if raw else DEFAULT_LOG_LINES_PER_SECOND
    except ValueError:
        value = DEFAULT_LOG_LINES_PER_SECOND
    return value if value > 0 and math.isfinite(value) else math.inf


class _Masker:
    """Masks secrets in the pieces of one stream, also across the cut between two pieces of a
    line longer than a read (the last ``longest secret - 1`` characters wait for the next)."""

    def __init__(self, secrets: list[str]) -> None:
        self.secrets = secrets
        self.keep = max((len(s) for s in secrets), default=1) - 1
        self.carry = ""

    def feed(self, piece: str) -> str | None:
        """The masked text to emit for ``piece`` (a whole line, or a part of one without its
        newline); None when all of it waits for the next piece."""
        text = self.carry + piece
        self.carry = ""
        complete = text.endswith("\n")
        for secret in self.secrets:
            text = text.replace(secret, _MASK)
        if complete or self.keep <= 0:
            return text
        self.carry, text = text[-self.keep :], text[: -self.keep]
        return text or None

    def flush(self) -> str | None:
        text, self.carry = self.carry, ""
        return text or None


class _Runner:
    """The state of one running child; ``wait`` runs on the calling thread, the pumps on theirs."""

    def __init__(
        self,
        proc: subprocess.Popen[str],
        on_line: LineCallback | None,
        secrets: list[str],
        tail_lines: int,
        kill_grace: float,
        log_file: JobLog | None,
    ) -> None:
        self.proc = proc
        self.on_line = on_line
        self.secrets = secrets
        self.kill_grace = kill_grace
        self.log_file = log_file
        self.tails: dict[str, deque[str]] = {
            "stdout": deque(maxlen=tail_lines),
            "stderr": deque(maxlen=tail_lines),
        }
        self.lines: queue.Queue[tuple[str, str | None]] = queue.Queue(maxsize=_QUEUE_LINES)
        self.dropped = 0  # lines not queued (over the rate, or queue full): counted by the pumps
        self.dropped_lock = threading.Lock()
        self.skipped = 0  # lines not relayed, all told (the caller's thread)
        self.reported = 0  # of those, how many a note already told about
        self.noted_at = time.monotonic()
        self.rate = _lines_per_second()
        self.tokens = min(self.rate, 1000.0)
        self.tokens_at = time.monotonic()
        self.open_streams = 2
        self.term_sent_at: float | None = None
        self.kill_sent = False
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            assert stream is not None
            run_in_thread(self._pump, name, stream)  # a kept thread: none starts per op

    # -- the pump threads -----------------------------------------------------------------
    def _pump(self, name: str, stream: IO[str]) -> None:
        """Read one pipe into the log file, the tail and the queue; None marks the end."""
        masker = _Masker(self.secrets)
        try:
            while True:
                piece = stream.readline(_MAX_LINE_CHARS)
                if not piece:
                    break
                text = masker.feed(piece)
                if text is not None:
                    self._line(name, text.rstrip("\r\n"))
        except (OSError, ValueError):  # pipe closed under us
            pass
        finally:
            rest = masker.flush()
            if rest is not None:
                self._line(name, rest.rstrip("\r\n"))
            self._put((name, None), block=True)
            with contextlib.suppress(OSError):
                stream.close()

    def _line(self, name: str, line: str) -> None:
        self.tails[name].append(line)
        if self.log_file is not None:
            self.log_file.write(line)
        if self.on_line is not None:
            with self.dropped_lock:
                relay = self._take_token()
                if not relay:
                    self.dropped += 1
            if relay:
                self._put((name, line), block=False)

    def _put(self, item: tuple[str, str | None], *, block: bool) -> None:
        try:
            if block:
                self.lines.put(item, timeout=_PIPE_DRAIN_SECONDS + self.kill_grace + 5)
            else:
                self.lines.put_nowait(item)
        except queue.Full:
            if item[1] is not None:
                with self.dropped_lock:
                    self.dropped += 1

    def close_log(self) -> None:
        if self.log_file is not None:
            self.log_file.close()

    # -- the calling thread ---------------------------------------------------------------
    def wait(
        self, started: float, timeout: float | None, cancel_event: threading.Event | None
    ) -> ProcessResult:
        """How the child ended; the caller adds what it knows of the log file."""
        deadline = started + timeout if timeout is not None else None
        timed_out = cancelled = False
        exited_at: float | None = None
        while True:
            now = time.monotonic()
            if self.proc.poll() is None:
                stop = (cancel_event is not None and cancel_event.is_set()) or stop_requested()
                if stop and not cancelled:
                    cancelled = True
                    self._terminate(now)
                if deadline is not None and now >= deadline and not timed_out and not cancelled:
                    timed_out = True
                    self._terminate(now)
            elif exited_at is None:
                exited_at = now
                # Like a container: once the main process is gone, whatever it left running in
                # its group (daemons, forgotten workers) is stopped too.
                if self.group_alive():
                    self._terminate(now)
            self._escalate(now)
            if exited_at is not None:
                if self.open_streams == 0:
                    break
                if now - exited_at > _PIPE_DRAIN_SECONDS + (
                    self.kill_grace if self.term_sent_at is not None else 0.0
                ):
                    break  # a process outside the group still holds our pipes; stop listening
            if self.open_streams == 0 and exited_at is None:
                # Both pipes ended, so nothing more will be queued: blocking on the queue would
                # sleep a whole poll past the exit (a short job's pipes close just before it
                # can be reaped). Waiting on the process returns within a millisecond of it.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=_POLL_SECONDS)
                continue
            self._deliver(_POLL_SECONDS, ended=exited_at is not None)
        self._drain_ready(until=time.monotonic() + self._final_window(), skip_late=True)
        self._finish_group()
        self._note_skipped(final=True)
        returncode = self.proc.returncode
        return ProcessResult(
            returncode=returncode,
            signal=-returncode if returncode < 0 else None,
            timed_out=timed_out,
            duration=time.monotonic() - started,
            stdout_tail=list(self.tails["stdout"]),
            stderr_tail=list(self.tails["stderr"]),
            cancelled=cancelled,
            lines_not_relayed=self.skipped + self.dropped,
        )

    def _deliver(self, block_for: float, *, ended: bool) -> None:
        try:
            stream, line = self.lines.get(timeout=block_for)
        except queue.Empty:
            self._note_skipped(final=False)
            return
        self._handle(stream, line)
        until = time.monotonic() + (self._final_window() if ended else _POLL_SECONDS)
        self._drain_ready(until=until, skip_late=ended)

    def _final_window(self) -> float:
        # An unbounded relay (rate ``inf``) promises every line: the end waits for the backlog
        # rather than count lines a busy machine could not hand over in half a second.
        return math.inf if math.isinf(self.rate) else _FINAL_RELAY_SECONDS

    def _drain_ready(self, *, until: float, skip_late: bool) -> None:
        """Handle queued lines until ``until``; then leave the rest for the next round, or,
        once the child has ended (``skip_late``), count them as not relayed: the end of the
        job must not wait on a backlog."""
        while True:
            if time.monotonic() > until and not skip_late:
                return
            try:
                stream, line = self.lines.get_nowait()
            except queue.Empty:
                return
            if time.monotonic() > until and line is not None:
                self.skipped += 1
                continue
            self._handle(stream, line)

    def _handle(self, stream: str, line: str | None) -> None:
        if line is None:
            self.open_streams -= 1
            return
        if self.on_line is None:
            return
        self._note_skipped(final=False)
        if len(line) > _RELAY_MAX_CHARS:
            line = line[:_RELAY_MAX_CHARS] + f" ... ({len(line) - _RELAY_MAX_CHARS} more chars)"
        self.on_line(stream, line)

    def _take_token(self) -> bool:
        """The relay's rate limit (a token bucket), taken by the pumps under ``dropped_lock``:
        a line over the rate is never queued, so a flood costs the pumps little."""
        if math.isinf(self.rate):
            return True
        now = time.monotonic()
        self.tokens = min(self.rate, self.tokens + (now - self.tokens_at) * self.rate)
        self.tokens_at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def _note_skipped(self, *, final: bool) -> None:
        """Say how many lines were left out of the relay, once they are behind us; and, once,
        that the log file was cut (a write failed)."""
        if final and self.log_file is not None:
            self.log_file.flush()
        cut = self.log_file.take_notice() if self.log_file is not None else None
        if cut is not None and self.on_line is not None:
            self.on_line("stderr", f"[polyaxon-prefect] {cut}")
        with self.dropped_lock:
            dropped, self.dropped = self.dropped, 0
        self.skipped += dropped
        missing = self.skipped - self.reported
        if missing <= 0 or self.on_line is None:
            return
        now = time.monotonic()
        if not final and now - self.noted_at < _NOTE_EVERY_SECONDS:
            return
        self.noted_at = now
        where = f"; {self.log_file.holds()}" if self.log_file else ""
        self.reported = self.skipped
        self.on_line("stderr", f"[polyaxon-prefect] {missing} output lines not shown here{where}")

    def _terminate(self, now: float) -> None:
        if self.term_sent_at is None:
            self.term_sent_at = now
            self._signal_group(hard=False)

    def _escalate(self, now: float) -> None:
        if (
            self.term_sent_at is not None
            and not self.kill_sent
            and now - self.term_sent_at >= self.kill_grace
        ):
            self.kill_sent = True
            self._signal_group(hard=True)

    def _finish_group(self) -> None:
        """Make sure leftovers that ignore SIGTERM (and closed our pipes) get SIGKILL."""
        if self.term_sent_at is None or self.kill_sent:
            return
        while self.group_alive() and time.monotonic() - self.term_sent_at < self.kill_grace:
            time.sleep(_POLL_SECONDS)
        self._escalate(self.term_sent_at + self.kill_grace)

    def group_alive(self) -> bool:
        if not _IS_POSIX:  # pragma: no cover
            return False
        try:
            os.killpg(self.proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def _signal_group(self, *, hard: bool) -> None:
        if _IS_POSIX:
            sig = _signal.SIGKILL if hard else _signal.SIGTERM
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)  # the child is the group leader: pgid == pid
        else:  # pragma: no cover - Windows has no process-group signals
            with contextlib.suppress(OSError):
                self.proc.kill() if hard else self.proc.terminate()

    def stop_now(self) -> None:
        """Stop the group synchronously; used when the caller is being interrupted."""
        self._terminate(time.monotonic())
        # BaseException: a second Ctrl-C during the grace period must still reach SIGKILL.
        with contextlib.suppress(BaseException):
            self.proc.wait(timeout=self.kill_grace)
        self.kill_sent = True
        self._signal_group(hard=True)
        with contextlib.suppress(BaseException):
            self.proc.wait(timeout=self.kill_grace)
