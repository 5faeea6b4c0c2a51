"""Planning a DAG: components inlined, defaults pushed down, graph errors before any run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.dag import DagPlan, child_loaded, plan_dag
from polyaxon_prefect.exceptions import DagError
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.specs import Component, Operation

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "quick-start"
CORPUS = ROOT / "tests" / "corpus"

JOB = {"kind": "job", "container": {"image": "busybox", "command": ["true"]}}


def _dag(operations: list[dict[str, Any]], **run: Any) -> Component:
    top = {key: run.pop(key) for key in ("termination", "cache", "inputs") if key in run}
    return Component.model_validate(
        {
            "kind": "component",
            "name": "pipe",
            **top,
            "run": {"kind": "dag", "operations": operations, **run},
        }
    )


def _op(name: str, **fields: Any) -> dict[str, Any]:
    fields.setdefault("component", {"kind": "component", "run": JOB})
    return {"name": name, **fields}


def test_quick_start_dag_plan() -> None:
    loaded = load_polyaxonfile(EXAMPLES / "dag.yaml")
    plan = plan_dag(loaded.operation)
    assert isinstance(plan, DagPlan)
    assert plan.order == ("experiment", "tune", "best_model")
    assert plan.upstreams == {
        "experiment": (),
        "tune": ("experiment",),
        "best_model": ("experiment", "tune"),
    }
    assert plan.downstreams["experiment"] == ("tune", "best_model")
    assert plan.downstreams["best_model"] == ()
    assert plan.concurrency is None
    assert plan.early_stopping == ()
    # pathRef components were inlined by the loader and stay inlined
    assert plan.ops["experiment"].component.name == "typed-experiment"
    assert plan.ops["tune"].matrix is not None


def test_dag_ref_is_resolved_from_run_components() -> None:
    loaded = load_polyaxonfile(
        CORPUS / "cli__cli__tests__fixtures__pipelines__simple_joins_pipeline.yml"
    )
    plan = plan_dag(loaded.component)
    assert plan.concurrency == 2
    assert plan.ops["job1"].dag_ref == "job-template"
    assert plan.ops["job1"].component.name == "job-template"
    assert plan.ops["reduce"].component.name == "reduce-template"
    assert [io.name for io in plan.ops["reduce"].component.inputs] == ["buckets", "losses"]
    # joins do not make edges (Polyaxon's rule): every op is independent
    assert set(plan.upstreams.values()) == {()}
    assert plan.order == ("job1", "job2", "experiment1", "experiment2", "reduce")


def test_environment_termination_and_cache_are_pushed_down_child_wins() -> None:
    component = _dag(
        [
            _op(
                "child",
                component={
                    "kind": "component",
                    "termination": {"timeout": 5},
                    "run": {
                        **JOB,
                        "environment": {
                            "nodeSelector": {"pool": "gpu"},
                            "serviceAccountName": "child-sa",
                        },
                    },
                },
            ),
            _op("plain"),
            _op("own", termination={"maxRetries": 0}, cache={"disable": False}),
        ],
        environment={
            "nodeSelector": {"pool": "cpu", "zone": "a"},
            "labels": {"team": "ml"},
            "serviceAccountName": "dag-sa",
        },
        termination={"maxRetries": 2, "timeout": 100},
        cache={"disable": True, "ttl": 60},
    )
    plan = plan_dag(component)
    child = plan.ops["child"]
    env = child.component.run.environment
    assert env.node_selector == {"pool": "gpu", "zone": "a"}
    assert env.service_account_name == "child-sa"
    assert env.labels == {"team": "ml"}
    assert child.termination.max_retries == 2
    assert child.termination.timeout == 5
    assert child.cache.disable is True and child.cache.ttl == 60

    plain = plan.ops["plain"]
    assert plain.component.run.environment.service_account_name == "dag-sa"
    assert plain.termination.timeout == 100

    own = plan.ops["own"]
    assert own.termination.max_retries == 0
    assert own.termination.timeout == 100
    assert own.cache.disable is False and own.cache.ttl == 60


def test_operation_level_defaults_override_the_dag_component() -> None:
    component = _dag([_op("a")], termination={"timeout": 100})
    operation = Operation.model_validate(
        {
            "kind": "operation",
            "termination": {"timeout": 7},
            "component": component.model_dump(by_alias=True, exclude_none=True),
        }
    )
    plan = plan_dag(operation)
    assert plan.ops["a"].termination.timeout == 7


def test_environment_reaches_nested_dags_and_distributed_replicas() -> None:
    nested = {
        "kind": "component",
        "run": {"kind": "dag", "operations": [_op("inner")]},
    }
    tfjob = {
        "kind": "component",
        "run": {
            "kind": "tfjob",
            "chief": {"replicas": 1, "container": {"image": "tf"}},
            "worker": {
                "replicas": 2,
                "environment": {"nodeSelector": {"pool": "w"}},
                "container": {"image": "tf"},
            },
        },
    }
    component = _dag(
        [_op("sub", component=nested), _op("tf", component=tfjob)],
        environment={"nodeSelector": {"pool": "dag"}},
    )
    plan = plan_dag(component)
    assert plan.ops["sub"].component.run.environment.node_selector == {"pool": "dag"}
    inner = plan_dag(plan.ops["sub"])
    assert inner.ops["inner"].component.run.environment.node_selector == {"pool": "dag"}
    run = plan.ops["tf"].component.run
    assert run.chief.environment.node_selector == {"pool": "dag"}
    assert run.worker.environment.node_selector == {"pool": "w"}


def test_cycle_is_rejected_before_anything_runs() -> None:
    component = _dag(
        [_op("a", dependencies=["c"]), _op("b", dependencies=["a"]), _op("c", dependencies=["b"])]
    )
    with pytest.raises(DagError, match="not acyclic") as info:
        plan_dag(component)
    assert {p.rule for p in info.value.problems} == {"dag_cycle"}


def test_cycle_through_a_ref_param_is_rejected() -> None:
    component = _dag(
        [
            _op("a", params={"x": {"ref": "ops.b", "value": "outputs.y", "contextOnly": True}}),
            _op("b", dependencies=["a"]),
        ]
    )
    with pytest.raises(DagError, match=r"(a -> b -> a|b -> a -> b)"):
        plan_dag(component)


def test_unknown_upstream_and_ref_are_rejected_together() -> None:
    component = _dag(
        [
            _op("train"),
            _op("eval", dependencies=["trian"]),
            _op(
                "report",
                params={"x": {"ref": "ops.nope", "value": "outputs.y", "contextOnly": True}},
            ),
        ]
    )
    with pytest.raises(DagError) as info:
        plan_dag(component)
    problems = info.value.problems
    assert [p.rule for p in problems] == ["dag_unknown_upstream", "dag_unknown_upstream"]
    assert problems[0].hint == "did you mean `train`?"
    assert problems[0].path == ("run", "operations", 1, "dependencies", 0)
    assert problems[1].path == ("run", "operations", 2, "params", "x")


def test_missing_dag_ref_component_is_rejected() -> None:
    component = _dag([{"name": "a", "dagRef": "trainer"}])
    with pytest.raises(DagError, match="dagRef `trainer`") as info:
        plan_dag(component)
    assert info.value.problems[0].rule == "dag_unknown_component"


def test_order_is_deterministic_and_follows_declaration_within_a_stage() -> None:
    component = _dag(
        [
            _op("zeta"),
            _op("report", dependencies=["zeta", "alpha"]),
            _op("alpha"),
            _op("mid", dependencies=["alpha"]),
        ]
    )
    plans = [plan_dag(component) for _ in range(3)]
    assert {p.order for p in plans} == {("zeta", "alpha", "report", "mid")}
    assert plans[0].downstreams["alpha"] == ("report", "mid")


def test_concurrency_and_early_stopping() -> None:
    component = _dag(
        [_op("a")],
        concurrency=3,
        earlyStopping=[{"kind": "failure_early_stopping", "percent": 50}],
    )
    plan = plan_dag(component)
    assert plan.concurrency == 3
    assert [p.kind for p in plan.early_stopping] == ["failure_early_stopping"]


def test_templated_concurrency_is_rendered_with_the_dag_params() -> None:
    component = _dag([_op("a")], concurrency="{{ parallel }}")
    assert plan_dag(component, params={"parallel": 4}).concurrency == 4
    with pytest.raises(DagError, match="no params were given"):
        plan_dag(component)
    with pytest.raises(DagError, match="positive integer"):
        plan_dag(component, params={"parallel": "many"})


def test_child_loaded_is_a_standalone_operation() -> None:
    loaded = load_polyaxonfile(EXAMPLES / "dag.yaml")
    plan = plan_dag(loaded.operation)
    child = child_loaded(loaded, plan.ops["experiment"])
    assert child.operation.name == "experiment"
    assert child.component.name == "typed-experiment"
    assert child.params["learning_rate"] == 0.005
    assert child.params["epochs"] == 10
    assert child.params["dropout"] == 0.2  # the input's default
    assert child.files == loaded.files
    # ref params are left for resolve_params
    tune = child_loaded(loaded, plan.ops["tune"])
    assert "upstream_loss" not in tune.params


def test_child_loaded_inlines_a_dag_ref_from_the_parent() -> None:
    loaded = load_polyaxonfile(
        CORPUS / "cli__cli__tests__fixtures__pipelines__simple_joins_pipeline.yml"
    )
    raw = loaded.component.run.operation_list[0]
    assert raw.component is None
    child = child_loaded(loaded, raw)
    assert child.component.name == "job-template"
    assert child.params["bucket"] == "s3://foo"


def test_child_loaded_rejects_an_unknown_dag_ref() -> None:
    loaded = load_polyaxonfile(EXAMPLES / "dag.yaml")
    stray = Operation.model_validate({"kind": "operation", "name": "x", "dagRef": "nothing"})
    with pytest.raises(DagError, match="dagRef `nothing`"):
        child_loaded(loaded, stray)
