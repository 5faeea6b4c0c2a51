"""What the cluster executor keeps track of while the cluster schedules a run's pods.

The rules are pure, in `polyaxon_prefect.kubernetes` (`pending_reason`, `disruption`,
`retry_after_disruption`); here is their state over one run and what they say, where:

- why its pods are pending: one line of the op's log per change, and its run ``queued`` with
  the reason as its message, then ``running`` once they started (``waits``: the callbacks of
  `_gpu_wait.pod_wait_callbacks`, None outside an op's run);
- the pods the cluster took away (preempted, evicted, lost with their node), over every
  attempt, each judged once against the disruption budget
  (``POLYAXON_PREFECT_PREEMPTION_RETRIES``), never against ``termination.maxRetries``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from polyaxon_prefect.kubernetes import (
    Disruption,
    disruption,
    pending_reason,
    retry_after_disruption,
)

__all__ = ["EventLister", "PodScheduling", "Waits"]

Waits = tuple[Callable[[str], None], Callable[[str], None]]
"""``on_pending(reason)`` and ``on_running(message)`` of the op's run."""

EventLister = Callable[[str], Awaitable[list[Mapping[str, Any]] | None]]
"""The events of a pod by name; None when they cannot be read (not granted, not served)."""


@dataclass
class PodScheduling:
    """The scheduling side of one submitted run, across its attempts."""

    on_line: Callable[[str, str], None]
    waits: Waits | None = None
    budget: int = 0
    """How many disruptions are run again."""
    pending: str | None = None
    """Why the run's pods are pending, as last said (None: not pending)."""
    disrupted: dict[str, Disruption] = field(default_factory=dict)
    """Every pod the cluster took away, by name, over all attempts."""
    unjudged: list[Disruption] = field(default_factory=list)
    attempt_disrupted: bool = False
    """A pod of the current attempt was taken away (its failure is not the code's)."""
    events_readable: bool = True
    pending_since: float | None = None
    """When its pods last became pending (monotonic seconds; None: not pending)."""
    pending_seconds: float = 0.0
    """How long its pods were pending before that: time in which they held no GPU."""

    async def reason(
        self, pod: Mapping[str, Any], status: Mapping[str, Any], events: EventLister
    ) -> str | None:
        """Why ``pod`` is pending: its status, else its events (while they can be read),
        else nothing known yet."""
        reason = pending_reason([], status)
        if reason is None and self.events_readable:
            name = str(pod.get("metadata", {}).get("name", ""))
            found = await events(name)
            if found is None:
                self.events_readable = False  # the status only, from now on
            else:
                mine = [e for e in found if (e.get("involvedObject") or {}).get("name") == name]
                reason = pending_reason(mine, status)
        return reason

    async def say_pending(self, pending: list[str], started: bool) -> None:
        """One line, and the run's message, per change of why its pods are pending; the run
        ``running`` again once they started."""
        reason = None
        if pending:
            reason = pending[0] + (f" (and {len(pending) - 1} more pods)" if pending[1:] else "")
        if reason == self.pending or (reason is None and not started):
            return
        self.pending = reason
        now = time.monotonic()
        if reason is not None and self.pending_since is None:
            self.pending_since = now
        elif reason is None and self.pending_since is not None:
            self.pending_seconds += now - self.pending_since
            self.pending_since = None
        if reason is not None:
            self.on_line("stderr", reason)
        if self.waits is None:
            return
        on_pending, on_running = self.waits
        if reason is not None:
            await asyncio.to_thread(on_pending, reason)
        else:
            await asyncio.to_thread(on_running, "the cluster started its pods")

    def unplaced_seconds(self) -> float:
        """How long the run's pods were pending so far (they held no GPU meanwhile)."""
        since = self.pending_since
        return self.pending_seconds + (time.monotonic() - since if since is not None else 0.0)

    def saw(self, pod: Mapping[str, Any], name: str, status: Mapping[str, Any]) -> None:
        """Note ``pod`` (replica ``name``) if the cluster took it away, saying so once."""
        taken = disruption(status) if status.get("phase") == "Failed" else None
        pod_name = str(pod.get("metadata", {}).get("name", ""))
        if taken is None or pod_name in self.disrupted:
            return
        self.disrupted[pod_name] = taken
        self.unjudged.append(taken)
        self.attempt_disrupted = True
        self.on_line("stderr", f"[{name}] {taken.what}: {taken.message}")

    def judge(self) -> str | None:
        """Each pod taken away since the last call, against the budget: a line saying so,
        and the run's failure message once the budget is spent."""
        for taken in self.unjudged:
            decision = retry_after_disruption(taken, len(self.disrupted), self.budget)
            self.on_line("stderr", decision.message)
            if not decision.retry:
                self.unjudged.clear()
                return decision.message
        self.unjudged.clear()
        return None
