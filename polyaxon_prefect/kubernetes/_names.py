"""Kubernetes names and labels derived from a Polyaxon name (through the one `specs.slug`).

Every object of one run is named from one base, so ``kubectl get -l`` finds them together and
the same op always gets the same names. Names are DNS-1035 labels (a letter first, at most 63
characters) because Kubeflow requires that of its jobs, and the pods' host names
(``{job}-{index}``) must fit in a label too: the base is cut short enough to leave room.
"""

from __future__ import annotations

import hashlib

from polyaxon_prefect.specs import slug

__all__ = [
    "LABEL_MANAGED_BY",
    "LABEL_REPLICA",
    "LABEL_RUN",
    "MAX_BASE",
    "base_name",
    "child_name",
    "label_value",
]

MAX_BASE = 40
"""The longest base name: leaves 23 characters for ``-{replica}-{offset}-{index}``."""
_MAX_LABEL = 63

LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_RUN = "polyaxon-prefect/run"
LABEL_REPLICA = "polyaxon-prefect/replica"
ANNOTATION_OFFSET = "polyaxon-prefect/replica-offset"
"""On a native Job's pods when the Job starts at a replica index other than 0."""


def _shorten(name: str, limit: int) -> str:
    """``name`` cut to ``limit`` characters, with a short hash of the whole so that two long
    names sharing a prefix stay distinct."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:6]
    return f"{name[: limit - 7].rstrip('-')}-{digest}"


def base_name(name: str) -> str:
    """A DNS-1035 label for a run called ``name`` (``Train_Model`` -> ``train-model``)."""
    text = slug(name, default="run")
    if not text[0].isalpha():
        text = f"r-{text}"
    return _shorten(text, MAX_BASE)


def child_name(*parts: str | int) -> str:
    """``{base}-{replica}-...`` joined with dashes, each part slugged, within 63 characters."""
    text = "-".join(slug(str(part), default="x") for part in parts)
    return _shorten(text, _MAX_LABEL)


def label_value(text: str) -> str:
    """A label value (at most 63 characters, alphanumeric at both ends)."""
    return _shorten(slug(text, default="none"), _MAX_LABEL)
