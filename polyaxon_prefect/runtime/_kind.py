"""Kept for importers of the old location: the classification lives in `specs` (pure)."""

from polyaxon_prefect.specs._kinds import OpKind, op_kind

__all__ = ["OpKind", "op_kind"]
