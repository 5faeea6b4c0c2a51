"""Kubernetes names for Polyaxon runs: DNS-1035 labels the operators and the API accept.

A job name must be a DNS-1035 label (lowercase letters, digits and ``-``, starting with a letter,
at most 63 characters) because the operators derive pod and headless-service names from it
(``{job}-{replica type}-{index}``). A long name is cut and given a short digest, so two long op
names that share a prefix still get distinct resources.
"""

from __future__ import annotations

import hashlib

from polyaxon_prefect.specs import slug

__all__ = ["MAX_NAME", "resource_name"]

MAX_NAME = 63
_RESERVED = 16
"""Room left for what the operator appends (``-worker-12`` and the like)."""


def resource_name(name: str, *, reserve: int = _RESERVED) -> str:
    """``name`` as a DNS-1035 label with ``reserve`` characters left for operator suffixes."""
    text = slug(name, default="run")
    if not text[0].isalpha():
        text = f"run-{text}"
    limit = MAX_NAME - reserve
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]
    return f"{text[: limit - 7].rstrip('-')}-{digest}"
