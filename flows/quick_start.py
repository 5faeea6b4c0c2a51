"""Deployable entrypoint for the quick-start component: ``flows/quick_start.py:flow``.

Kept thin on purpose: the Polyaxonfile is the source of truth, and this module only turns it into
a Prefect flow whose parameters are the component's typed inputs (the UI shows them as a form).
"""

from pathlib import Path

from polyaxon_prefect import to_flow

POLYAXONFILE = Path(__file__).resolve().parent.parent / "examples" / "quick-start" / "typed.yaml"

flow = to_flow(POLYAXONFILE)
