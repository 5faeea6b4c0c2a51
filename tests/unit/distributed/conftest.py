"""Helpers: a run model from YAML text (v1.1 or legacy), loaded the way `check` loads it."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from polyaxon_prefect.loading import load_polyaxonfile


def load_run(tmp_path: Path, text: str) -> Any:
    """The ``run`` of the file whose YAML is ``text`` (dedented)."""
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_polyaxonfile(path).operation.component.run
