from __future__ import annotations

import itertools

import pytest

from polyaxon_prefect.dag import find_cycle, topological_stages


def test_find_cycle_names_the_cycle_in_order() -> None:
    graph = {"a": [], "b": ["a", "d"], "c": ["b"], "d": ["c"]}
    cycle = find_cycle(graph)
    assert cycle is not None
    assert cycle[0] == cycle[-1]
    assert set(cycle) == {"b", "c", "d"}
    # each step follows an edge: node -> one of its upstreams
    for node, upstream in itertools.pairwise(cycle):
        assert upstream in graph[node]


def test_no_cycle_in_a_diamond() -> None:
    assert find_cycle({"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}) is None


def test_topological_stages_keep_declaration_order() -> None:
    graph = {"z": [], "y": ["z"], "x": [], "w": ["x", "y"]}
    assert topological_stages(graph) == [["z", "x"], ["y"], ["w"]]


def test_topological_stages_raise_on_cycle() -> None:
    with pytest.raises(ValueError, match="cycle"):
        topological_stages({"a": ["b"], "b": ["a"]})
