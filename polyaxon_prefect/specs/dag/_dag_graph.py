"""The DAG's graph: upstream inference, cycle detection and a deterministic topological order.

Pure functions over op names, so the scheduler and the validator share one definition of "what
does this op wait for". Polyaxon derives upstreams from three places (`dependencies`, params with
``ref: ops.X`` and ``events`` refs); forgetting one of them is the classic way to start an op before
its inputs exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from polyaxon_prefect.specs._polyaxonfile import Operation

__all__ = ["find_cycle", "op_upstreams", "ref_op_name", "topological_stages"]


def ref_op_name(ref: object) -> str | None:
    """``"ops.train"`` -> ``"train"``; anything else (``dag``, ``runs.<uuid>``) -> None."""
    if isinstance(ref, str) and ref.startswith("ops."):
        return ref[len("ops.") :]
    return None


def op_upstreams(op: Operation) -> dict[str, str]:
    """Upstream op names of ``op`` mapped to why each one is an upstream.

    The reason (``"dependencies"``, ``"params.lr"``, ``"events[0]"``) lets errors point at the
    exact place that names an unknown op.
    """
    upstreams: dict[str, str] = {}
    for index, dependency in enumerate(op.dependencies or ()):
        if isinstance(dependency, str):
            upstreams.setdefault(dependency, f"dependencies[{index}]")
    for key, param in (op.params or {}).items():
        name = ref_op_name(getattr(param, "ref", None))
        if name:
            upstreams.setdefault(name, f"params.{key}")
    events = op.events if isinstance(op.events, list) else ()
    for index, event in enumerate(events):
        name = ref_op_name(getattr(event, "ref", None))
        if name:
            upstreams.setdefault(name, f"events[{index}]")
    return upstreams


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One cycle of ``graph`` (node -> upstreams) as ``[a, b, ..., a]``, or None.

    Iterative DFS so deep chains (thousands of ops) do not hit Python's recursion limit.
    """
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(graph, white)
    parent: dict[str, str] = {}
    for start in graph:
        if color[start] != white:
            continue
        stack: list[tuple[str, Any]] = [(start, iter(graph[start]))]
        color[start] = grey
        while stack:
            node, edges = stack[-1]
            advanced = False
            for nxt in edges:
                if nxt not in color:
                    continue  # unknown upstreams are reported elsewhere
                if color[nxt] == grey:
                    cycle = [nxt, node]
                    current = node
                    while current != nxt:
                        current = parent[current]
                        cycle.append(current)
                    cycle.reverse()
                    return cycle
                if color[nxt] == white:
                    color[nxt] = grey
                    parent[nxt] = node
                    stack.append((nxt, iter(graph[nxt])))
                    advanced = True
                    break
            if not advanced:
                color[node] = black
                stack.pop()
    return None


def topological_stages(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Ops in stages: each stage depends only on earlier ones; declaration order within a stage.

    Polyaxon's order within a stage is set order (not reproducible); ours is stable so plans,
    golden files and logs read the same on every run. Raises ValueError on a cycle.
    """
    remaining = {node: {u for u in ups if u in graph} for node, ups in graph.items()}
    stages: list[list[str]] = []
    done: set[str] = set()
    while remaining:
        stage = [node for node, ups in remaining.items() if ups <= done]
        if not stage:
            raise ValueError(f"the graph has a cycle: {' -> '.join(find_cycle(graph) or [])}")
        stages.append(stage)
        done.update(stage)
        for node in stage:
            del remaining[node]
    return stages
