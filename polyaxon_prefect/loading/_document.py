"""The fully resolved operation as a plain document: what ``compile`` prints, and what a run
records in its directory so that ``restart`` runs the same operation again."""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.specs import LoadedPolyaxonfile

__all__ = ["resolved_document"]


def resolved_document(loaded: LoadedPolyaxonfile) -> dict[str, Any]:
    """Presets and runPatch applied, references inlined, params typed by their inputs.

    The document is stable (keys in spec order, no empty fields) so tests and users can diff
    it, and it loads back as a Polyaxonfile that resolves to the same operation.
    """
    document = loaded.operation.to_dict()
    params = document.get("params") or {}
    for name, value in loaded.params.items():
        if name in params:
            params[name] = {**params[name], "value": value}
    if params:
        document["params"] = params
    if loaded.legacy_notes:
        document["x-legacyNotes"] = list(loaded.legacy_notes)
    return document
