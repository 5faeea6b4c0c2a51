"""A 5,000-op chain (about a second): no recursion limit is hit. The other graph tests are in
tests/unit/dag/test_graph.py."""

from __future__ import annotations

import pytest

from polyaxon_prefect.dag import find_cycle, topological_stages

pytestmark = pytest.mark.slow


def test_deep_chain_does_not_hit_recursion_limit() -> None:
    graph = {f"op{i}": ([f"op{i - 1}"] if i else []) for i in range(5000)}
    assert find_cycle(graph) is None
    assert len(topological_stages(graph)) == 5000
    graph["op0"] = ["op4999"]
    assert find_cycle(graph) is not None
