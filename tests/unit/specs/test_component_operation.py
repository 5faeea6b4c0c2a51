"""Component, Operation and Dag models: the corpus, references, versions, names, aliases."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from polyaxon_prefect._source._located_yaml import parse_yaml
from polyaxon_prefect.specs import (
    Component,
    Dag,
    Job,
    Operation,
    TFJob,
    TriggerPolicy,
)

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
JOB = {"kind": "job", "container": {"image": "busybox"}}


def _modern_corpus() -> list[Path]:
    files = []
    for path in sorted(CORPUS.glob("*.y*ml")):
        data = parse_yaml(path.read_text(), file=str(path)).data
        if isinstance(data, dict) and data.get("version") == 1.1 and not data.get("isPreset"):
            files.append(path)
    return files


MODERN = _modern_corpus()


def test_the_corpus_has_the_expected_modern_files():
    assert len(MODERN) == 27


@pytest.mark.parametrize("path", MODERN, ids=lambda p: p.name)
def test_corpus_file_validates(path):
    data = parse_yaml(path.read_text(), file=str(path)).data
    model = Component if data["kind"] == "component" else Operation
    spec = model.model_validate(data)
    assert spec.kind == data["kind"]
    assert spec.version == 1.1


def test_typed_component_reads_its_io():
    path = CORPUS / "polyaxon-quick-start__scheduling__experimentation__typed.yaml"
    component = Component.model_validate(parse_yaml(path.read_text()).data)
    assert isinstance(component.run, Job)
    assert [io.name for io in component.inputs][-1] == "epochs"
    assert component.get_io("dropout").value == 0.2
    assert component.get_io("dropout").is_optional is True
    assert component.get_io("epochs").is_optional is None
    assert component.get_io("loss").type == "float"


def test_dag_corpus_file_builds_nested_models():
    path = CORPUS / "cli__cli__tests__fixtures__pipelines__simple_dag_pipeline.yml"
    component = Component.model_validate(parse_yaml(path.read_text()).data)
    assert isinstance(component.run, Dag)
    assert component.is_dag
    ops = component.run.operation_list
    assert [op.name for op in ops] == ["job1", "experiment1", "experiment2", "experiment3", "job2"]
    assert ops[1].params["lr"].value == 0.001
    assert ops[4].dependencies == ["experiment1", "experiment2", "experiment3"]
    assert component.run.get_component("job-template").get_io("bucket").type == "s3"
    assert component.run.get_component("nope") is None


def test_tfjob_corpus_file():
    path = CORPUS / "polyaxon-examples__in_cluster__kubeflow__tfjob__component.yaml"
    component = Component.model_validate(parse_yaml(path.read_text()).data)
    assert isinstance(component.run, TFJob)


# --------------------------------------------------------------------------- references


@pytest.mark.parametrize(
    "refs",
    [
        {"hubRef": "kaniko"},
        {"dagRef": "comp"},
        {"urlRef": "https://x/y.yaml"},
        {"pathRef": "../c.yaml"},
        {"component": {"run": JOB}},
        # An inline component next to the string reference it resolves (as in the corpus).
        {"hubRef": "kaniko", "component": {"name": "kaniko", "run": JOB}},
    ],
)
def test_one_reference_is_accepted(refs):
    assert Operation.model_validate(refs).kind == "operation"


@pytest.mark.parametrize(
    ("refs", "found"),
    [
        ({}, "found none"),
        ({"hubRef": "a", "urlRef": "b"}, "found 2: hubRef, urlRef"),
        ({"dagRef": "a", "pathRef": "b", "component": {"run": JOB}}, "found 2: dagRef, pathRef"),
    ],
)
def test_reference_rule(refs, found):
    with pytest.raises(ValidationError, match=f"exactly one component reference .*{found}") as e:
        Operation.model_validate(refs)
    assert e.value.errors()[0]["type"] == "operation_reference"


def test_presets_need_no_reference():
    preset = Operation.model_validate(
        {
            "isPreset": True,
            "patchStrategy": "isnull",
            "runPatch": {"environment": {"nodeSelector": {"polyaxon": "compute"}}},
        }
    )
    assert preset.is_preset is True
    assert preset.run_patch == {"environment": {"nodeSelector": {"polyaxon": "compute"}}}


def test_reference_kind():
    assert Operation.model_validate({"dagRef": "c"}).reference_kind == "dagRef"
    assert Operation.model_validate({"component": {"run": JOB}}).reference_kind == "component"


# --------------------------------------------------------------------------- conditions


def test_condition_is_an_alias_of_conditions():
    op = Operation.model_validate({"hubRef": "a", "condition": "{{ loss > 1 }}"})
    assert op.conditions == "{{ loss > 1 }}"
    assert op.to_dict()["conditions"] == "{{ loss > 1 }}"


def test_condition_and_conditions_together_is_an_error():
    with pytest.raises(ValidationError, match="`condition` and `conditions` are the same"):
        Operation.model_validate({"hubRef": "a", "condition": "x", "conditions": "y"})


# --------------------------------------------------------------------------- versions and names


@pytest.mark.parametrize("version", [1.1, "1.1", " 1.1 "])
def test_version_1_1(version):
    assert Component.model_validate({"version": version, "run": JOB}).version == 1.1


@pytest.mark.parametrize(("model", "kind"), [(Component, "component"), (Operation, "operation")])
def test_version_1_points_to_the_v1_0_format(model, kind):
    data = {"version": 1, "run": JOB} if model is Component else {"version": 1, "hubRef": "x"}
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    error = info.value.errors()[0]
    assert error["loc"] == ("version",)
    assert error["msg"] == (
        f"Polyaxonfile version 1 with kind {kind} is the v1.0 format: set `version: 1.1`"
    )


@pytest.mark.parametrize("version", [2, 1.2, "latest", True])
def test_other_versions_are_refused(version):
    with pytest.raises(ValidationError, match=r"only `version: 1\.1` is supported"):
        Component.model_validate({"version": version, "run": JOB})


def test_version_may_be_omitted_inline():
    assert Component.model_validate({"run": JOB}).version is None


@pytest.mark.parametrize("name", ["train", "my-comp_2", "kaniko:v1.2", "org/kaniko", "org/k:1"])
def test_component_names(name):
    assert Component.model_validate({"name": name, "run": JOB}).name == name


@pytest.mark.parametrize("name", ["a b", "a.b", "org/k:v1/x", ""])
def test_bad_component_names(name):
    with pytest.raises(ValidationError, match="component names may only use"):
        Component.model_validate({"name": name, "run": JOB})


def test_operation_names_have_no_hub_form_and_may_be_templates():
    with pytest.raises(ValidationError, match="operation names may only use"):
        Operation.model_validate({"name": "org/x", "hubRef": "a"})
    assert Operation.model_validate({"name": "{{ n }}", "hubRef": "a"}).name == "{{ n }}"


def test_hub_name_strips_the_tag():
    assert Component.model_validate({"name": "org/k:v1", "run": JOB}).hub_name == "org/k"


# --------------------------------------------------------------------------- other fields


def test_tags_and_presets_accept_csv():
    component = Component.model_validate({"tags": "a, b,c", "presets": "p1", "run": JOB})
    assert component.tags == ["a", "b", "c"]
    assert component.presets == ["p1"]


def test_run_is_required_and_discriminated():
    with pytest.raises(ValidationError, match="run"):
        Component.model_validate({"name": "x"})
    with pytest.raises(ValidationError, match="union_tag"):
        Component.model_validate({"run": {"container": {"image": "x"}}})


def test_unknown_top_level_key_is_refused():
    with pytest.raises(ValidationError, match="actions"):
        Component.model_validate({"run": JOB, "actions": []})


def test_trigger_policy():
    op = Operation.model_validate({"hubRef": "a", "trigger": "all_done"})
    assert op.trigger is TriggerPolicy.ALL_DONE
    assert Operation.model_validate({"hubRef": "a"}).trigger_policy is TriggerPolicy.ALL_SUCCEEDED
    assert len(TriggerPolicy) == 6
    with pytest.raises(ValidationError, match="one_done"):
        Operation.model_validate({"hubRef": "a", "trigger": "sometimes"})


def test_short_form_params_on_operations():
    op = Operation.model_validate(
        {"hubRef": "a", "params": {"lr": 0.005, "epochs": {"value": 10}, "e": {}}}
    )
    assert op.params["lr"].value == 0.005
    assert op.params["epochs"].value == 10
    assert op.params["e"].value is None
    assert op.param_map.keys() == {"lr", "epochs", "e"}


def test_duplicate_io_names_are_refused():
    with pytest.raises(ValidationError, match="used by more than one input/output"):
        Component.model_validate(
            {"run": JOB, "inputs": [{"name": "x"}], "outputs": [{"name": "x"}]}
        )
    with pytest.raises(ValidationError, match="used by more than one input/output"):
        Component.model_validate({"run": JOB, "inputs": [{"name": "x"}, {"name": "x"}]})


# --------------------------------------------------------------------------- dag structure


def _dag(**run) -> dict:
    return {"run": {"kind": "dag", **run}}


def test_dag_without_operations_is_refused():
    with pytest.raises(ValidationError, match="needs at least one operation"):
        Component.model_validate(_dag(operations=[]))


def test_dag_components_need_unique_names():
    with pytest.raises(ValidationError, match="several components named `c`"):
        Component.model_validate(
            _dag(
                operations=[{"name": "a", "dagRef": "c"}],
                components=[{"name": "c", "run": JOB}, {"name": "c", "run": JOB}],
            )
        )


def test_build_is_not_allowed_with_a_dag_runtime():
    with pytest.raises(ValidationError, match="dag runtime do not support the `build` section"):
        Component.model_validate(
            {"build": {"hubRef": "kaniko"}, **_dag(operations=[{"name": "a", "hubRef": "x"}])}
        )
    with pytest.raises(ValidationError, match="dag runtime do not support the `build` section"):
        Operation.model_validate(
            {
                "build": {"hubRef": "kaniko"},
                "component": _dag(operations=[{"name": "a", "hubRef": "x"}]),
            }
        )


def test_nested_dags_validate_recursively():
    inner = _dag(operations=[{"name": "leaf", "component": {"run": JOB}}])
    outer = _dag(operations=[{"name": "sub", "component": inner}])
    component = Component.model_validate(outer)
    sub = component.run.operation_list[0]
    assert isinstance(sub.component.run, Dag)
    assert sub.component.run.operation_list[0].name == "leaf"
    with pytest.raises(ValidationError) as info:
        Component.model_validate(
            _dag(operations=[{"name": "sub", "component": _dag(operations=[{"name": "leaf"}])}])
        )
    loc = info.value.errors()[0]["loc"]
    assert loc[:6] == ("run", "dag", "operations", 0, "component", "run")


def test_specs_are_frozen():
    op = Operation.model_validate({"hubRef": "a"})
    with pytest.raises(ValidationError, match="frozen"):
        op.hub_ref = "b"


def test_dag_operations_need_names():
    with pytest.raises(ValidationError, match="operation 1 of the dag has no `name`"):
        Component.model_validate(_dag(operations=[{"name": "a", "hubRef": "x"}, {"hubRef": "y"}]))
