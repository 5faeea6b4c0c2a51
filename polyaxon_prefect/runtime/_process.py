"""Run an op's command as a child process: no shell, live log lines, hard timeout, no orphans.

Why not ``subprocess.run``: a task-level timeout (Prefect's included) cannot interrupt a thread
blocked in ``wait()``, output would arrive only at exit, and killing the direct child leaves its
own children (data loaders, ``torchrun`` workers) running. So the child gets its own process
group, both pipes are read by threads, and this function's calling thread owns every decision:
the deadline, cancellation, and delivery of each line to ``on_line`` (so callbacks that rely on
thread-local context, like a Prefect run logger, are called from the caller's thread).
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal as _signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from polyaxon_prefect.runtime._errors import CommandNotFoundError, ProcessStartError

__all__ = ["MIN_SECRET_LENGTH", "ProcessResult", "mask_secrets", "resolve_command", "run_process"]

MIN_SECRET_LENGTH = 3
"""Shorter secret values are not masked: replacing every ``a`` or ``1`` would wreck the logs."""

_MASK = "***"
_MAX_LINE_CHARS = 64 * 1024  # a blob without newlines must not grow memory without bound
_POLL_SECONDS = 0.05
_PIPE_DRAIN_SECONDS = 1.0  # after the child is gone, how long to wait for pipes held elsewhere
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
    for secret in _usable_secrets(secrets):
        text = text.replace(secret, _MASK)
    return text


def _usable_secrets(secrets: Sequence[str]) -> list[str]:
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
) -> ProcessResult:
    """Run ``argv`` (never through a shell) and wait for it, streaming its output.

    Args:
        argv: the program and its arguments; each element reaches the program as one argument.
        env: the child's *whole* environment (merge ``os.environ`` in yourself if wanted).
        cwd: the working directory of the child.
        timeout: seconds before the child's process group gets SIGTERM, then SIGKILL after
            ``kill_grace`` seconds; ``None`` for no limit.
        on_line: called as ``on_line("stdout" | "stderr", line)`` for every line as it arrives,
            from the calling thread, with secrets masked and the newline stripped.
        secrets: values to replace with ``***`` in every line and tail.
        cancel_event: when set (from any thread), the child is stopped as on a timeout and the
            result has ``cancelled=True``.
        kill_grace: seconds between SIGTERM and SIGKILL.
        tail_lines: how many last lines of each stream the result keeps.

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
    usable_secrets = _usable_secrets(secrets)

    popen_kwargs: dict[str, object] = {}
    if _IS_POSIX:
        popen_kwargs["start_new_session"] = True  # own process group: one kill reaches all
    else:  # pragma: no cover - exercised on Windows only
        popen_kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
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
            **popen_kwargs,  # type: ignore[call-overload]
        )
    except OSError as exc:
        raise ProcessStartError(f"could not start `{argv[0]}`: {exc.strerror or exc}") from exc

    runner = _Runner(proc, on_line, usable_secrets, tail_lines, kill_grace)
    try:
        return runner.wait(started, timeout, cancel_event)
    except BaseException:
        runner.stop_now()
        raise


class _Runner:
    """The state of one running child; only the calling thread touches it."""

    def __init__(
        self,
        proc: subprocess.Popen[str],
        on_line: LineCallback | None,
        secrets: list[str],
        tail_lines: int,
        kill_grace: float,
    ) -> None:
        self.proc = proc
        self.on_line = on_line
        self.secrets = secrets
        self.kill_grace = kill_grace
        self.tails: dict[str, deque[str]] = {
            "stdout": deque(maxlen=tail_lines),
            "stderr": deque(maxlen=tail_lines),
        }
        self.lines: queue.Queue[tuple[str, str | None]] = queue.Queue()
        self.open_streams = 2
        self.term_sent_at: float | None = None
        self.kill_sent = False
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            assert stream is not None
            threading.Thread(
                target=_pump, args=(name, stream, self.lines), daemon=True, name=f"pump-{name}"
            ).start()

    def wait(
        self, started: float, timeout: float | None, cancel_event: threading.Event | None
    ) -> ProcessResult:
        deadline = started + timeout if timeout is not None else None
        timed_out = cancelled = False
        exited_at: float | None = None
        while True:
            now = time.monotonic()
            if self.proc.poll() is None:
                if cancel_event is not None and cancel_event.is_set() and not cancelled:
                    cancelled = True
                    self._terminate(now)
                if deadline is not None and now >= deadline and not timed_out and not cancelled:
                    timed_out = True
                    self._terminate(now)
            elif exited_at is None:
                exited_at = now
                # Like a container: once the main process is gone, whatever it left running in
                # its group (daemons, forgotten workers) is stopped too.
                if self._group_alive():
                    self._terminate(now)
            self._escalate(now)
            if exited_at is not None:
                if self.open_streams == 0:
                    break
                if now - exited_at > _PIPE_DRAIN_SECONDS + (
                    self.kill_grace if self.term_sent_at is not None else 0.0
                ):
                    break  # a process outside the group still holds our pipes; stop listening
            self._deliver(_POLL_SECONDS)
        self._drain_ready()
        self._finish_group()
        returncode = self.proc.returncode
        return ProcessResult(
            returncode=returncode,
            signal=-returncode if returncode < 0 else None,
            timed_out=timed_out,
            duration=time.monotonic() - started,
            stdout_tail=list(self.tails["stdout"]),
            stderr_tail=list(self.tails["stderr"]),
            cancelled=cancelled,
        )

    def _deliver(self, block_for: float) -> None:
        try:
            stream, line = self.lines.get(timeout=block_for)
        except queue.Empty:
            return
        self._handle(stream, line)
        self._drain_ready()

    def _drain_ready(self) -> None:
        while True:
            try:
                stream, line = self.lines.get_nowait()
            except queue.Empty:
                return
            self._handle(stream, line)

    def _handle(self, stream: str, line: str | None) -> None:
        if line is None:
            self.open_streams -= 1
            return
        for secret in self.secrets:
            line = line.replace(secret, _MASK)
        self.tails[stream].append(line)
        if self.on_line is not None:
            self.on_line(stream, line)

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
        while self._group_alive() and time.monotonic() - self.term_sent_at < self.kill_grace:
            time.sleep(_POLL_SECONDS)
        self._escalate(self.term_sent_at + self.kill_grace)

    def _group_alive(self) -> bool:
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


def _pump(name: str, stream: IO[str], out: queue.Queue[tuple[str, str | None]]) -> None:
    """Read one pipe line by line into ``out``; ``None`` marks the end of the stream."""
    try:
        while True:
            line = stream.readline(_MAX_LINE_CHARS)
            if not line:
                break
            out.put((name, line.rstrip("\r\n")))
    except (OSError, ValueError):  # pipe closed under us
        pass
    finally:
        out.put((name, None))
        with contextlib.suppress(OSError):
            stream.close()
