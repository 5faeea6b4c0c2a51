"""Typed models of the Polyaxonfile language (v1.1, plus the legacy format converted to it)."""

from polyaxon_prefect.specs._all import *  # noqa: F403
from polyaxon_prefect.specs._all import __all__  # noqa: F401
