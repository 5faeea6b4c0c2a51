"""Daemon threads kept for the next caller (`run_in_thread`).

Each job's process needs a thread per pipe for as long as it runs, and its metric mirror one
more. Starting a thread waits until the new thread has been scheduled: on a busy machine,
milliseconds on every op's path (a 200-op chain started 600 of them, one after the other). A
thread whose work is done waits for the next instead of ending.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable

__all__ = ["run_in_thread"]

_Work = tuple[Callable[..., object], tuple[object, ...]]

_LOCK = threading.Lock()
_IDLE = 0
"""How many kept threads wait for work (each put on `_WORK` is taken by one of them)."""
_WORK: queue.SimpleQueue[_Work] = queue.SimpleQueue()


def run_in_thread(target: Callable[..., object], *args: object) -> None:
    """``target(*args)`` in a daemon thread: a kept one when one is idle, else a new one
    (which is kept once ``target`` returns). Never joined: ``target`` says when it is done
    its own way (the pumps put their end on the runner's queue)."""
    global _IDLE
    with _LOCK:
        if _IDLE:
            _IDLE -= 1
            _WORK.put((target, args))
            return
    threading.Thread(
        target=_serve, args=((target, args),), name="polyaxon-job-io", daemon=True
    ).start()


def _serve(work: _Work) -> None:
    global _IDLE
    while True:
        target, args = work
        try:
            target(*args)
        except Exception as exc:  # told as an ended thread's would be; the thread is kept
            threading.excepthook(
                threading.ExceptHookArgs(
                    (type(exc), exc, exc.__traceback__, threading.current_thread())
                )
            )
        del target, args, work  # nothing of the last job is held while idle
        with _LOCK:
            _IDLE += 1
        work = _WORK.get()


def _forget_after_fork() -> None:
    """A forked child (the warm runner's runs) has none of its parent's threads."""
    global _IDLE, _WORK
    _IDLE = 0
    _WORK = queue.SimpleQueue()


os.register_at_fork(after_in_child=_forget_after_fork)
