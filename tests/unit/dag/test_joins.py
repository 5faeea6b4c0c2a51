"""``joins``: Polyaxon queries over the DAG's finished ops, sorted and sliced into list inputs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.dag import DagScope, OpRecord, plan_dag, resolve_joins, resolve_params
from polyaxon_prefect.dag._join_query import filter_records, parse_query, sort_records
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.specs import Operation

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "corpus"
JOB = {"kind": "job", "container": {"image": "busybox", "command": ["true"]}}


def _run(name: str, status: str, loss: float | None, acc: float | None, **extra: Any) -> OpRecord:
    metrics = {k: v for k, v in (("loss", loss), ("accuracy", acc)) if v is not None}
    return OpRecord(
        name=name,
        status=status,
        uuid=f"uuid-{name}",
        inputs={"lr": extra.pop("lr", 0.1)},
        outputs=dict(metrics),
        metrics=metrics,
        globals={"uuid": f"uuid-{name}", "name": name},
        kind="job",
        component=extra.pop("component", "trainer"),
        **extra,
    )


RECORDS = [
    _run("a", "succeeded", 0.30, 0.80, lr=0.1, started_at=100.0, finished_at=110.0),
    _run("b", "succeeded", 0.05, 0.95, lr=0.01, started_at=101.0, finished_at=150.0),
    _run("c", "failed", None, None, lr=0.5, started_at=102.0, finished_at=103.0),
    _run("d", "succeeded", 0.10, 0.91, lr=0.05, started_at=103.0, finished_at=120.0, tags=("x",)),
    _run("e", "stopped", 0.20, None, lr=0.2, component="other"),
]
SCOPE = DagScope(
    inputs={"top": 2},
    globals={"uuid": "dag0", "project_name": "demo"},
    records={r.name: r for r in RECORDS},
)


def _names(query: str) -> list[str]:
    return [r.name for r in filter_records(RECORDS, query, globals=SCOPE.globals)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status: succeeded", ["a", "b", "d"]),
        ("status: ~succeeded", ["c", "e"]),
        ("status: failed|stopped", ["c", "e"]),
        ("metrics.loss: <0.2", ["b", "d"]),
        ("metrics.loss: <=0.2", ["b", "d", "e"]),
        ("metrics.loss: >0.1", ["a", "e"]),
        ("metrics.loss: >=0.1", ["a", "d", "e"]),
        ("metrics.loss: 0.05..0.2", ["b", "d", "e"]),
        ("metrics.loss: ~0.05..0.2", ["a"]),  # runs without a loss never match
        ("metrics.accuracy: nil", ["c", "e"]),
        ("metrics.accuracy: ~nil", ["a", "b", "d"]),
        ("outputs.loss: 0.3", ["a"]),
        ("inputs.lr: 0.5", ["c"]),
        ("params.lr: >0.1", ["c", "e"]),
        ("metrics.accuracy:>0.9, status: succeeded", ["b", "d"]),
        ("name: a|e", ["a", "e"]),
        ("name: %b%", ["b"]),
        ("uuid: uuid-%", ["a", "b", "c", "d", "e"]),
        ("tags: x", ["d"]),
        ("kind: job, hub.name: other", ["e"]),
        ("component.name: trainer, status: failed", ["c"]),
        ("project.name: demo", ["a", "b", "c", "d", "e"]),
        ("project.name: elsewhere", []),
        ("pipeline: dag0, finished_at: >=120", ["b", "d"]),
        ("duration: <5", ["c"]),
        ("started_at: 1970-01-01T00:01:41..1970-01-01T00:01:42", ["b", "c"]),
    ],
)
def test_query_filters(query: str, expected: list[str]) -> None:
    assert _names(query) == expected


def test_parse_query_terms() -> None:
    terms = parse_query("metrics.loss: ~<0.1, status: a|b, name: nil")
    assert [(t.field, t.op, t.values, t.negate) for t in terms] == [
        ("metrics.loss", "lt", ("0.1",), True),
        ("status", "in", ("a", "b"), False),
        ("name", "nil", (), False),
    ]


def test_bad_query_terms_are_reported() -> None:
    with pytest.raises(PolyaxonfileError, match="expected `field: condition`") as info:
        parse_query("status succeeded", path=("joins", 0, "query"))
    assert info.value.problems[0].rule == "join_query"
    with pytest.raises(PolyaxonfileError, match="unknown query field `flavour`"):
        filter_records(RECORDS, "flavour: mint")


def test_sort_ascending_descending_and_missing_last() -> None:
    def names(sort: str) -> list[str]:
        return [r.name for r in sort_records(RECORDS, sort, globals=SCOPE.globals)]

    assert names("metrics.loss") == ["b", "d", "e", "a", "c"]
    assert names("-metrics.loss") == ["a", "e", "d", "b", "c"]
    assert names("-metrics.accuracy") == ["b", "d", "a", "c", "e"]
    assert names("status, -inputs.lr") == ["c", "e", "a", "d", "b"]
    assert names("name") == ["a", "b", "c", "d", "e"]


def _op(joins: list[dict[str, Any]], inputs: list[dict[str, Any]], params: Any = None) -> Operation:
    return Operation.model_validate(
        {
            "kind": "operation",
            "name": "report",
            "joins": joins,
            "params": params,
            "component": {"kind": "component", "inputs": inputs, "run": JOB},
        }
    )


def test_join_values_fill_list_inputs_sorted_and_sliced() -> None:
    op = _op(
        [
            {
                "query": "status: succeeded",
                "sort": "-metrics.accuracy",
                "limit": 2,
                "params": {
                    "losses": {"value": "outputs.loss"},
                    "uuids": {"value": "globals.uuid", "contextOnly": True},
                    "lrs": {"value": "inputs.lr"},
                },
            }
        ],
        [
            {"name": "losses", "type": "float", "isList": True},
            {"name": "lrs", "type": "List[float]"},
        ],
    )
    assert resolve_joins(op, SCOPE) == {
        "losses": [0.05, 0.1],
        "uuids": ["uuid-b", "uuid-d"],
        "lrs": [0.01, 0.05],
    }


def test_offset_and_templated_limit_and_query() -> None:
    op = _op(
        [
            {
                "query": "status: {{ wanted }}, project.name: {{ globals.project_name }}",
                "sort": "metrics.loss",
                "offset": 1,
                "limit": "{{ top }}",
                "params": {"names": {"value": "globals.name", "contextOnly": True}},
            }
        ],
        [],
    )
    assert resolve_joins(op, SCOPE, params={"top": 1, "wanted": "succeeded"}) == {"names": ["d"]}


def test_values_are_typed_and_gaps_are_explained() -> None:
    op = _op(
        [{"query": "metrics.loss: ~nil", "params": {"losses": {"value": "outputs.loss"}}}],
        [{"name": "losses", "type": "str", "isList": True}],
    )
    assert resolve_joins(op, SCOPE)["losses"] == ["0.3", "0.05", "0.1", "0.2"]
    gaps = _op(
        [{"query": "status: succeeded|failed", "params": {"accs": {"value": "outputs.accuracy"}}}],
        [{"name": "accs", "type": "float", "isList": True}],
    )
    with pytest.raises(PolyaxonfileError, match=re.escape("outputs.accuracy: ~nil")) as info:
        resolve_joins(gaps, SCOPE)
    assert info.value.problems[0].rule == "join_type"


def test_own_params_and_earlier_joins_win() -> None:
    op = _op(
        [
            {"query": "name: a", "params": {"x": {"value": "inputs.lr", "contextOnly": True}}},
            {
                "query": "name: b",
                "params": {
                    "x": {"value": "inputs.lr", "contextOnly": True},
                    "y": {"value": "inputs.lr", "contextOnly": True},
                },
            },
        ],
        [],
        params={"y": {"value": 1, "contextOnly": True}},
    )
    assert resolve_joins(op, SCOPE) == {"x": [0.1]}


def test_artifacts_dict_values_are_merged_under_each_run() -> None:
    scope = DagScope(
        inputs={},
        globals={},
        records={
            "a": OpRecord("a", "succeeded", artifacts_path="/s/a"),
            "b": OpRecord("b", "succeeded", artifacts_path="/s/b"),
        },
    )
    op = _op(
        [
            {
                "query": "status: succeeded",
                "params": {"files": {"value": {"files": ["m.pt"]}, "contextOnly": True}},
            }
        ],
        [],
    )
    assert resolve_joins(op, scope) == {"files": {"files": ["/s/a/m.pt", "/s/b/m.pt"]}}


def test_corpus_map_reduce_join_pipeline() -> None:
    loaded = load_polyaxonfile(
        CORPUS / "cli__cli__tests__fixtures__pipelines__simple_joins_pipeline.yml"
    )
    plan = plan_dag(loaded.component)
    records = {
        "job1": OpRecord(
            "job1", "succeeded", inputs={"bucket": "s3://foo"}, component="job-template"
        ),
        "job2": OpRecord(
            "job2", "succeeded", inputs={"bucket": "s3://bar"}, component="job-template"
        ),
        "experiment1": OpRecord(
            "experiment1", "succeeded", outputs={"loss": 0.5}, component="experiment-template"
        ),
        "experiment2": OpRecord(
            "experiment2", "succeeded", outputs={"loss": "0.25"}, component="experiment-template"
        ),
    }
    scope = DagScope(inputs={}, globals={"project_name": "demo"}, records=records)
    params = resolve_params(plan.ops["reduce"], scope)
    assert params == {"buckets": ["s3://foo", "s3://bar"], "losses": [0.5, 0.25]}


def test_no_joins() -> None:
    assert resolve_joins(_op([], []), SCOPE) == {}
