"""Rows kept and ordered by a query and a sort spec, as Polyaxon's SQL would keep them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyaxon_prefect.query import parse_query, parse_sort, select, sort_rows

T0 = datetime(2026, 3, 1, 12, 0).astimezone()


def _row(name: str, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": f"0000000{len(name)}-aaaa-bbbb-cccc-{name[:12].ljust(12, '0')}",
        "uuid": None,
        "name": name,
        "status": "succeeded",
        "kind": "job",
        "tags": [],
        "created_at": T0,
        "started_at": T0,
        "finished_at": T0 + timedelta(seconds=30),
        "duration": 30.0,
        "params": {},
        "outputs": {},
        "metrics": {},
    }
    row.update(extra)
    return row


ROWS = [
    _row("resnet-a", metrics={"loss": 0.1}, tags=["nightly"], params={"lr": "0.01"}),
    _row("resnet-b", metrics={"loss": "0.3"}, tags=["nightly", "gpu"], params={"lr": "0.1"}),
    _row("vgg", status="running", metrics={"loss": 0.05}, params={"act": "relu"}),
    _row("mlp", kind="dag", started_at=T0 - timedelta(days=2), duration=None),
    _row("resnet", status="failed", outputs={"acc": 0.9}, uuid="f" * 32),
]


def _names(query: str) -> list[str]:
    return [row["name"] for row in select(ROWS, parse_query(query))]


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("status:running", ["vgg"]),
        ("status:~succeeded", ["vgg", "resnet"]),
        ("status:running|failed", ["vgg", "resnet"]),
        ("kind:dag", ["mlp"]),
        ("metrics.loss:<=0.2", ["resnet-a", "vgg"]),  # a run with no loss is never kept...
        ("metrics.loss:~<=0.2", ["resnet-b"]),  # ...negated or not
        ("metrics.loss:nil", ["mlp", "resnet"]),
        ("metrics.loss:~nil", ["resnet-a", "resnet-b", "vgg"]),
        ("metrics.loss:0.3", ["resnet-b"]),  # recorded as text, compared as a number
        ("name:~resnet", ["resnet-a", "resnet-b", "vgg", "mlp"]),
        ("name:%RESNET%", ["resnet-a", "resnet-b", "resnet"]),
        ("name:res%", ["resnet-a", "resnet-b", "resnet"]),
        ("name:%-b", ["resnet-b"]),
        ("name:~%net%", ["vgg", "mlp"]),
        ("tags:nightly", ["resnet-a", "resnet-b"]),
        ("tags:gpu|cpu", ["resnet-b"]),
        ("tags:~gpu", ["resnet-a", "vgg", "mlp", "resnet"]),
        ("tags:nil", ["vgg", "mlp", "resnet"]),
        ("params.lr:0.01", ["resnet-a"]),
        ("params.lr:>0.05", ["resnet-b"]),
        ("inputs.act:relu", ["vgg"]),
        ("outputs.acc:0.9", ["resnet"]),
        ("uuid:" + "f" * 32, ["resnet"]),
        ("id:00000003-aaaa-bbbb-cccc-vgg000000000", ["vgg"]),
        ("duration:>=30", ["resnet-a", "resnet-b", "vgg", "resnet"]),
        ("started_at:2026-03-01", ["resnet-a", "resnet-b", "vgg", "resnet"]),
        ("started_at:<2026-03-01", ["mlp"]),
        ("started_at:2026-02-27 .. 2026-02-28", ["mlp"]),
        ("started_at:~2026-02-27 .. 2026-02-28", ["resnet-a", "resnet-b", "vgg", "resnet"]),
        ("started_at:>2026-03-01 11:59, kind:job, tags:nightly", ["resnet-a", "resnet-b"]),
        ("status:running, kind:job, metrics.loss:<=0.2, name:~resnet", ["vgg"]),
    ],
)
def test_select(query: str, names: list[str]) -> None:
    assert _names(query) == names


def test_sort_descending_by_metric_keeps_runs_without_it_last() -> None:
    ordered = sort_rows(ROWS, parse_sort("-metrics.loss"))
    assert [r["name"] for r in ordered] == ["resnet-b", "resnet-a", "vgg", "mlp", "resnet"]
    ordered = sort_rows(ROWS, parse_sort("metrics.loss"))
    assert [r["name"] for r in ordered] == ["vgg", "resnet-a", "resnet-b", "mlp", "resnet"]


def test_sort_by_several_keys() -> None:
    ordered = sort_rows(ROWS, parse_sort("kind, -status, name"))
    assert [r["name"] for r in ordered] == ["mlp", "resnet-a", "resnet-b", "vgg", "resnet"]


@pytest.mark.slow  # 200 examples: seconds, so outside `make test-fast`
@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.floats(allow_nan=False), st.integers(), st.text(max_size=3)),
        max_size=12,
    ),
    st.booleans(),
)
def test_sort_never_raises_and_orders_numbers(values: list[Any], descending: bool) -> None:
    rows = [_row(f"r{i}", metrics={} if v is None else {"m": v}) for i, v in enumerate(values)]
    ordered = sort_rows(rows, parse_sort(("-" if descending else "") + "metrics.m"))
    assert sorted(map(id, ordered)) == sorted(map(id, rows))
    numbers = [r["metrics"]["m"] for r in ordered if isinstance(r["metrics"].get("m"), int | float)]
    assert numbers == sorted(numbers, reverse=descending)
    tail = [r for r in ordered if "m" not in r["metrics"]]
    assert ordered[len(ordered) - len(tail) :] == tail


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(
        [
            "status:running",
            "status:running|failed",
            "kind:job",
            "metrics.loss:<=0.2",
            "metrics.loss:>0.1",
            "metrics.loss:0.3",
            "name:%resnet%",
            "name:vgg",
            "tags:nightly",
            "params.lr:0.01",
            "started_at:2026-03-01",
            "duration:>=30",
        ]
    ),
    st.sampled_from(ROWS),
)
def test_negation_keeps_exactly_the_other_rows_that_have_the_value(query: str, row: Any) -> None:
    field, _, operation = query.partition(":")
    (condition,) = parse_query(query)
    column_value = row.get(condition.column)
    if condition.key is not None:
        column_value = (column_value or {}).get(condition.key)
    kept = bool(select([row], parse_query(query)))
    negated = bool(select([row], parse_query(f"{field}:~{operation}")))
    if column_value is None:
        assert not kept and not negated  # no value: neither the condition nor its negation
    else:
        assert kept != negated
