"""A param that matches no input suggests the closest one first (the docs' ``-P loss=...`` for
the quick-start DAG's ``max_loss``), and lists them all either way."""

from __future__ import annotations

from polyaxon_prefect.specs.params._validate_params import unexpected_param


def test_the_closest_input_is_suggested() -> None:
    problem = unexpected_param("loss", "`max_loss`, `top`")
    assert problem.hint is not None
    assert problem.hint.startswith("did you mean `max_loss`? declared inputs/outputs: `max_loss`")


def test_nothing_close_only_lists_them() -> None:
    problem = unexpected_param("extra", "`lr`, `steps`")
    assert problem.hint is not None
    assert problem.hint.startswith("declared inputs/outputs: `lr`, `steps`;")
