"""Run kinds other than ``dag``: corpus files, replica rules and the strictness of each model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field, TypeAdapter, ValidationError

from polyaxon_prefect._source._located_yaml import parse_yaml
from polyaxon_prefect.specs.sections._run_spec import (
    DISTRIBUTED_KINDS,
    NON_DAG_RUNTIMES,
    REPLICA_NAMES,
    Job,
    KFReplica,
    MPIJob,
    PytorchJob,
    Service,
    TFJob,
    replica_fields,
)

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def _runtime_adapter() -> TypeAdapter[Any]:
    from typing import Union

    union = Union[NON_DAG_RUNTIMES]  # noqa: UP007 -- built from a tuple of classes
    return TypeAdapter(Annotated[union, Field(discriminator="kind")])


RUNTIME = _runtime_adapter()


def _runs(data: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every ``run:`` mapping with a non-dag ``kind`` anywhere in a parsed file."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            here = f"{path}.{key}" if path else str(key)
            if key == "run" and isinstance(value, dict) and value.get("kind") not in (None, "dag"):
                found.append((here, value))
            found.extend(_runs(value, here))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            found.extend(_runs(item, f"{path}[{index}]"))
    return found


def _corpus_runs() -> list[Any]:
    params = []
    for file in sorted(CORPUS.glob("*.y*ml")):
        data = parse_yaml(file.read_text(), file=file.name).data
        for where, run in _runs(data):
            params.append(pytest.param(run, id=f"{file.stem[-45:]}:{where}"))
    return params


CORPUS_RUNS = _corpus_runs()


def test_corpus_has_every_distributed_kind_we_ship_examples_for() -> None:
    kinds = {param.values[0]["kind"] for param in CORPUS_RUNS}
    assert {"job", "tfjob", "pytorchjob", "mpijob"} <= kinds


@pytest.mark.parametrize("run", CORPUS_RUNS)
def test_corpus_run_sections_validate(run: dict[str, Any]) -> None:
    model = RUNTIME.validate_python(run)
    assert model.kind == run["kind"]
    # Nothing is lost: dumping gives back every key that was written.
    assert set(model.to_dict()) == set(run)


def test_distributed_tensorflow_file_replicas() -> None:
    text = (
        CORPUS / "cli__cli__tests__fixtures__plain__distributed_tensorflow_file.yml"
    ).read_text()
    run = RUNTIME.validate_python(parse_yaml(text).data["run"])
    assert isinstance(run, TFJob)
    replicas = replica_fields(run)
    assert list(replicas) == ["ps", "worker"]  # declaration order, not file order
    assert replicas["worker"].replicas == 5
    assert replicas["ps"].replicas == 10
    assert replicas["worker"].environment.restart_policy == "OnFailure"


def test_mpijob_fields() -> None:
    text = (CORPUS / "polyaxon-examples__in_cluster__mpijob__polyaxonfile.yaml").read_text()
    run = RUNTIME.validate_python(parse_yaml(text).data["run"])
    assert isinstance(run, MPIJob)
    assert run.slots_per_worker == 4
    assert run.clean_pod_policy == "Running"
    assert list(replica_fields(run)) == ["launcher", "worker"]


def test_kind_is_required_and_discriminates() -> None:
    with pytest.raises(ValidationError, match=r"union_tag_not_found|Unable to extract tag"):
        RUNTIME.validate_python({"container": {"image": "x"}})
    with pytest.raises(ValidationError, match=r"does not match any of the expected tags"):
        RUNTIME.validate_python({"kind": "sparkjob"})


def test_legacy_kubeflow_kinds_are_accepted() -> None:
    assert RUNTIME.validate_python({"kind": "xgbjob", "master": {"replicas": 1}}).kind == "xgbjob"
    mx = RUNTIME.validate_python(
        {"kind": "mxjob", "mode": "MXTune", "tunerTracker": {"replicas": 1}}
    )
    assert list(replica_fields(mx)) == ["tunerTracker"]
    paddle = RUNTIME.validate_python(
        {"kind": "paddlejob", "worker": {}, "elasticPolicy": {"Metrics": [{"type": "x"}]}}
    )
    assert paddle.elastic_policy.metrics == [{"type": "x"}]


@pytest.mark.parametrize(
    ("run", "where"),
    [
        ({"kind": "job", "contianer": {}}, ("job", "contianer")),
        ({"kind": "tfjob", "worker": {"replica": 2}}, ("tfjob", "worker", "replica")),
        ({"kind": "service", "port": [80]}, ("service", "port")),
        (
            {"kind": "job", "environment": {"nodeSelectors": {}}},
            ("job", "environment", "nodeSelectors"),
        ),
    ],
)
def test_unknown_keys_are_rejected_at_their_path(run: dict[str, Any], where: tuple) -> None:
    with pytest.raises(ValidationError) as info:
        RUNTIME.validate_python(run)
    errors = info.value.errors()
    assert [e["type"] for e in errors] == ["extra_forbidden"]
    assert errors[0]["loc"] == where


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ({"kind": "tfjob", "cleanPodPolicy": "Some"}, "'All', 'Running' or 'None'"),
        ({"kind": "mxjob", "worker": {}, "mode": "Train"}, "'MXTrain' or 'MXTune'"),
        (
            {"kind": "job", "environment": {"restartPolicy": "Sometimes"}},
            "'Always', 'OnFailure', 'Never' or 'ExitCode'",
        ),
    ],
)
def test_bad_enum_values(run: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RUNTIME.validate_python(run)


def test_restart_policy_exit_code_is_accepted() -> None:
    job = Job.model_validate({"environment": {"restartPolicy": "ExitCode", "hostPID": True}})
    assert job.environment.restart_policy == "ExitCode"
    assert job.environment.host_pid is True
    assert job.to_dict()["environment"]["hostPID"] is True


@pytest.mark.parametrize("kind", sorted(REPLICA_NAMES))
def test_distributed_run_needs_a_replica_section(kind: str) -> None:
    with pytest.raises(ValidationError, match=f"a {kind} run needs at least one replica section"):
        RUNTIME.validate_python({"kind": kind})


def test_replica_sections_listed_in_the_error() -> None:
    with pytest.raises(ValidationError, match=r"among chief, ps, worker, evaluator"):
        TFJob.model_validate({"cleanPodPolicy": "All"})


@pytest.mark.parametrize("replicas", [0, -1, 1.5, "two", True])
def test_replicas_must_be_a_positive_int(replicas: Any) -> None:
    with pytest.raises(ValidationError) as info:
        PytorchJob.model_validate({"worker": {"replicas": replicas}})
    assert info.value.errors()[0]["loc"] == ("worker", "replicas")


def test_replicas_accept_a_template() -> None:
    run = PytorchJob.model_validate({"worker": {"replicas": "{{ n_workers }}"}})
    assert run.worker.replicas == "{{ n_workers }}"
    assert run.worker.replica_count is None


def test_a_whole_replica_may_be_a_template_and_is_not_listed() -> None:
    run = TFJob.model_validate({"worker": "{{ worker_spec }}", "ps": {"replicas": 1}})
    assert run.worker == "{{ worker_spec }}"
    assert list(replica_fields(run)) == ["ps"]


def test_index_overrides_within_bounds() -> None:
    replica = KFReplica.model_validate(
        {
            "replicas": 5,
            "indexOverrides": {
                2: {"environment": {"tolerations": [{"operator": "Exists"}]}},
                4: {"resources": {"limits": {"memory": "300Mi"}}},
            },
        }
    )
    assert sorted(replica.index_overrides) == [2, 4]
    assert replica.index_overrides[2].environment is not None


def test_index_overrides_out_of_range() -> None:
    with pytest.raises(
        ValidationError, match=r"replica index 5, 9 but the group has 5 replica"
    ) as info:
        KFReplica.model_validate({"replicas": 5, "indexOverrides": {5: {}, 9: {}, 1: {}}})
    error = info.value.errors()[0]
    assert error["loc"] == ("indexOverrides",)
    assert error["type"] == "replica_index_out_of_range"
    assert "hint" in error["ctx"]


def test_index_overrides_default_to_one_replica() -> None:
    with pytest.raises(ValidationError, match=r"has 1 replica"):
        KFReplica.model_validate({"indexOverrides": {1: {}}})


def test_index_overrides_unchecked_when_replicas_is_a_template() -> None:
    replica = KFReplica.model_validate({"replicas": "{{ n }}", "indexOverrides": {7: {}}})
    assert 7 in replica.index_overrides


def test_negative_index_override_is_rejected() -> None:
    with pytest.raises(ValidationError, match=r"greater than or equal to 0"):
        KFReplica.model_validate({"replicas": 3, "indexOverrides": {-1: {}}})


def test_index_override_rejects_unknown_keys() -> None:
    with pytest.raises(ValidationError, match=r"extra_forbidden|Extra inputs"):
        KFReplica.model_validate({"replicas": 3, "indexOverrides": {1: {"image": "x"}}})


def test_pytorch_elastic_policy_capital_metrics() -> None:
    run = PytorchJob.model_validate(
        {
            "master": {"replicas": 1},
            "nProcPerNode": 4,
            "elasticPolicy": {"minReplicas": 1, "maxReplicas": 3, "Metrics": [{"type": "cpu"}]},
        }
    )
    assert run.elastic_policy.metrics == [{"type": "cpu"}]
    assert run.to_dict()["elasticPolicy"]["Metrics"] == [{"type": "cpu"}]


def test_service_fields() -> None:
    service = RUNTIME.validate_python(
        {"kind": "service", "ports": [6006], "rewritePath": True, "replicas": 2}
    )
    assert isinstance(service, Service)
    assert service.ports == [6006]
    with pytest.raises(ValidationError):
        Service.model_validate({"ports": ["http"]})


def test_job_sections_accept_templates() -> None:
    job = Job.model_validate(
        {"init": "{{ inits }}", "connections": "{{ conns }}", "container": "{{ c }}"}
    )
    assert job.init == "{{ inits }}"
    assert job.to_dict() == {
        "kind": "job",
        "init": "{{ inits }}",
        "connections": "{{ conns }}",
        "container": "{{ c }}",
    }


def test_a_plain_string_is_not_a_section() -> None:
    with pytest.raises(
        ValidationError, match=re.escape("or a `{{ template }}` string; got 'git'")
    ) as info:
        Job.model_validate({"init": "git"})
    assert info.value.errors()[0]["loc"] == ("init",)


def test_errors_inside_a_section_keep_the_yaml_path() -> None:
    with pytest.raises(ValidationError) as info:
        Job.model_validate({"init": [{"git": {"url": "u"}}, {"git": {"revision": "main"}}]})
    error = info.value.errors()[0]
    assert error["loc"] == ("init", 1)
    assert error["type"] == "init_git_needs_url"


def test_ray_cluster_worker_groups() -> None:
    run = RUNTIME.validate_python(
        {
            "kind": "raycluster",
            "head": {"rayStartParams": {"dashboard-host": "0.0.0.0"}},
            "workers": {"gpu": {"replicas": 2, "minReplicas": 0, "maxReplicas": 4}},
        }
    )
    assert list(replica_fields(run)) == ["head", "workers.gpu"]


def test_ray_cluster_with_no_groups_is_rejected() -> None:
    with pytest.raises(ValidationError, match="needs at least one replica section"):
        RUNTIME.validate_python({"kind": "raycluster", "workers": {}})


def test_dask_cluster() -> None:
    run = RUNTIME.validate_python({"kind": "daskcluster", "worker": {"replicas": 3}})
    assert list(replica_fields(run)) == ["worker"]


def test_single_pod_runs_have_no_replicas() -> None:
    assert replica_fields(Job()) == {}


def test_registries_agree() -> None:
    kinds = {model.model_fields["kind"].default for model in NON_DAG_RUNTIMES}
    assert "dag" not in kinds
    assert set(REPLICA_NAMES) == DISTRIBUTED_KINDS
    assert kinds > DISTRIBUTED_KINDS
