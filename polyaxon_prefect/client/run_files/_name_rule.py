"""What a Polyaxon name may hold: the one rule of the loader (`specs.NAME_REGEX`, names become
flow, task and Kubernetes names) and of the run verbs that read names back from a run's report
(a report is a Prefect artifact any local process can write, and its names become paths)."""

from __future__ import annotations

import re

__all__ = ["NAME_CHARACTERS", "NAME_REGEX"]

NAME_REGEX = re.compile(r"^[-a-zA-Z0-9_]+\Z")  # \Z: `$` would let a trailing newline in
NAME_CHARACTERS = "ASCII letters (a-z, A-Z), digits (0-9), `-` and `_`"
"""What `NAME_REGEX` allows, in words: names become flow, task and Kubernetes names, so no
accented or other Unicode letters, spaces or dots."""
