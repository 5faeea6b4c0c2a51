"""Names derived from a Polyaxon name: the one slug function.

Artifact keys, study prefixes and (later) Kubernetes resource names all need "lowercase letters,
digits and dashes"; deriving them in one place keeps the same op's names in step.
"""

from __future__ import annotations

import re

__all__ = ["slug"]

_NOT_SLUG = re.compile(r"[^a-z0-9-]+")


def slug(text: str, default: str = "op") -> str:
    """``text`` as lowercase letters, digits and dashes (``Train Model_2`` -> ``train-model-2``);
    ``default`` when nothing is left."""
    return _NOT_SLUG.sub("-", text.lower()).strip("-") or default
