"""Which DAG op tables are written: only one that says more than the op's status and uuid."""

from __future__ import annotations

from typing import Any

import pytest

from polyaxon_prefect.runtime._job_op import table_says_more

STATUS = {"kind": "run", "name": "status", "value": "succeeded"}
UUID = {"kind": "run", "name": "uuid", "value": "u1"}


@pytest.mark.parametrize(
    ("extra", "written"),
    [
        ([], False),
        ([{"kind": "param", "name": "lr", "value": 0.1}], True),
        ([{"kind": "output", "name": "loss", "value": 0.5}], True),
        ([{"kind": "metric", "name": "acc", "value": 0.9}], True),
        ([{"kind": "run", "name": "cached from", "value": "run u0 (a cache hit)"}], True),
        ([{"kind": "run", "name": "gpu_hours", "value": 0.01}], True),
        ([{"kind": "run", "name": "image", "value": "python:3.11"}], True),
    ],
)
def test_a_table_is_written_only_when_it_says_more(
    extra: list[dict[str, Any]], written: bool
) -> None:
    assert table_says_more([STATUS, UUID, *extra]) is written
