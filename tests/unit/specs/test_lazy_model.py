"""`lazy_model` fields: validated as the model they name, with the errors' locations, dumps and
"did you mean" hints of an eager field, the model imported only once a value needs it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.specs._base import BaseSpec
from polyaxon_prefect.specs.kubernetes._k8s import Container
from polyaxon_prefect.specs.kubernetes._lazy_model import LazyModel, lazy_model

_MODULE = "polyaxon_prefect.specs.kubernetes._k8s_objects"


class _Holder(BaseSpec):
    one: lazy_model(_MODULE, "EnvVar") | None = None  # type: ignore[valid-type]
    many: list[lazy_model(_MODULE, "EnvVar")] | None = None  # type: ignore[valid-type]


def test_values_become_the_named_model_and_dump_with_the_callers_settings() -> None:
    holder = _Holder.model_validate(
        {"one": {"name": "A", "value": 1}, "many": [{"name": "B", "valueFrom": None}]}
    )
    assert type(holder.one).__name__ == "EnvVar" and holder.one.value == "1"
    assert holder.to_dict() == {"one": {"name": "A", "value": "1"}, "many": [{"name": "B"}]}
    assert holder.model_dump()["many"] == [{"name": "B", "value": None, "value_from": None}]


def test_errors_inside_keep_their_location_and_type() -> None:
    with pytest.raises(ValidationError) as info:
        _Holder.model_validate({"many": [{"name": "A"}, {"name": "B", "valueFrm": {}}]})
    assert [(e["loc"], e["type"]) for e in info.value.errors()] == [
        (("many", 1, "valueFrm"), "extra_forbidden")
    ]


def test_a_name_that_is_not_a_model_is_refused() -> None:
    with pytest.raises(TypeError, match="not a pydantic model"):
        LazyModel("polyaxon_prefect.specs.kubernetes._k8s", "Quantity").resolve_model()
    model = LazyModel(_MODULE, "EnvVar").resolve_model()
    assert issubclass(model, BaseModel) and model.__module__ == _MODULE


def test_an_unknown_key_behind_a_lazy_reference_gets_a_did_you_mean(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            version: 1.1
            kind: component
            run:
              kind: job
              container:
                image: x
                env: [{name: A, valueFrm: {secretKeyRef: {key: k}}}]
            """
        )
    )
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(path)
    [problem] = info.value.problems
    assert "unknown key `valueFrm`" in problem.message
    assert problem.hint == "did you mean `valueFrom`?"


def test_the_realistic_container_round_trips_through_lazy_fields() -> None:
    data: dict[str, Any] = {
        "image": "x",
        "ports": [{"containerPort": 80}],
        "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
    }
    container = Container.model_validate(data)
    assert container.to_dict() == data
    assert _MODULE in sys.modules
