"""Grid and mapping suggestions, and the Hyperband schedule."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest
from pydantic import TypeAdapter

from polyaxon_prefect.search import (
    Bracket,
    grid_suggestions,
    hyperband_schedule,
    mapping_suggestions,
    matrix_plan,
)
from polyaxon_prefect.specs.matrix._matrix import Matrix

ADAPTER = TypeAdapter(Matrix)


def grid(params: dict[str, Any], **extra: Any) -> Any:
    return ADAPTER.validate_python({"kind": "grid", "params": params, **extra})


# -- grid ---------------------------------------------------------------------------------------


def test_grid_is_the_product_in_param_order_last_param_fastest() -> None:
    spec = grid(
        {
            "b": {"kind": "choice", "value": ["x", "y"]},
            "a": {"kind": "range", "value": "1:4:1"},
        }
    )
    assert grid_suggestions(spec) == [
        {"b": "x", "a": 1},
        {"b": "x", "a": 2},
        {"b": "x", "a": 3},
        {"b": "y", "a": 1},
        {"b": "y", "a": 2},
        {"b": "y", "a": 3},
    ]


def test_grid_is_cut_to_num_runs() -> None:
    params = {
        "lr": {"kind": "linspace", "value": "0.001:0.1:5"},
        "units": {"kind": "choice", "value": [8, 16, 32]},
    }
    everything = grid_suggestions(grid(params))
    assert len(everything) == 15
    assert grid_suggestions(grid(params, numRuns=4)) == everything[:4]
    assert grid_suggestions(grid(params, numRuns=100)) == everything


def test_grid_matches_itertools_product_of_to_values() -> None:
    spec = grid(
        {
            "p": {"kind": "logspace", "value": [0, 2, 3]},
            "q": {"kind": "geomspace", "value": [1, 8, 4]},
            "d": {"kind": "daterange", "value": ["2020-01-01", "2020-01-04", 1]},
        }
    )
    columns = [param.to_values() for param in spec.params.values()]
    expected = [dict(zip("pqd", combo, strict=True)) for combo in itertools.product(*columns)]
    assert grid_suggestions(spec) == expected
    assert len(expected) == 3 * 4 * 3


def test_corpus_grid_counts() -> None:
    # polyaxon-examples keras grid: 3 * 3 * 4 * 12 * 3 * 5 * 3 combos, cut to numRuns: 20.
    spec = grid(
        {
            "conv1_size": {"kind": "choice", "value": [32, 64, 128]},
            "hidden1_size": {"kind": "range", "value": "10:600:50"},
            "log_learning_rate": {"kind": "range", "value": [-5, 0, 1]},
        },
        numRuns=20,
    )
    suggestions = grid_suggestions(spec)
    assert len(suggestions) == 20
    assert suggestions[0] == {"conv1_size": 32, "hidden1_size": 10, "log_learning_rate": -5}
    assert suggestions[5] == {"conv1_size": 32, "hidden1_size": 60, "log_learning_rate": -5}


def test_grid_with_templates_cannot_be_planned() -> None:
    with pytest.raises(ValueError, match="is a template: render it"):
        grid_suggestions(grid({"a": {"kind": "choice", "value": "{{ upstream }}"}}))
    with pytest.raises(ValueError, match="`numRuns` is a template"):
        grid_suggestions(grid({"a": {"kind": "choice", "value": [1]}}, numRuns="{{ n }}"))


# -- mapping ------------------------------------------------------------------------------------


def test_mapping_suggestions_are_fresh_copies_in_order() -> None:
    spec = ADAPTER.validate_python(
        {"kind": "mapping", "values": [{"lr": 0.1, "units": 8}, {"lr": 0.2, "units": 16}]}
    )
    suggestions = mapping_suggestions(spec)
    assert suggestions == [{"lr": 0.1, "units": 8}, {"lr": 0.2, "units": 16}]
    suggestions[0]["lr"] = 9
    assert spec.values[0]["lr"] == 0.1


def test_mapping_template_cannot_be_planned() -> None:
    spec = ADAPTER.validate_python({"kind": "mapping", "values": "{{ configs }}"})
    with pytest.raises(ValueError, match="is a template"):
        mapping_suggestions(spec)


# -- hyperband ----------------------------------------------------------------------------------


def summary(brackets: list[Bracket]) -> list[tuple[int, int, float]]:
    return [(b.s, b.n, b.r) for b in brackets]


def test_hyperband_81_3_is_the_papers_table() -> None:
    brackets = hyperband_schedule(81, 3)
    assert summary(brackets) == [
        (4, 81, 1.0),
        (3, 34, 3.0),
        (2, 15, 9.0),
        (1, 8, 27.0),
        (0, 5, 81.0),
    ]
    assert [list(b.rungs) for b in brackets] == [
        [(81, 1.0), (27, 3.0), (9, 9.0), (3, 27.0), (1, 81.0)],
        [(34, 3.0), (11, 9.0), (3, 27.0), (1, 81.0)],
        [(15, 9.0), (5, 27.0), (1, 81.0)],
        [(8, 27.0), (2, 81.0)],
        [(5, 81.0)],
    ]
    runs = sum(n for b in brackets for n, _ in b.rungs)
    assert runs == 206  # hypertune's count for the same schedule (restart mode)
    assert sum(n * r for b in brackets for n, r in b.rungs) == 1902


def test_hyperband_243_3_has_six_brackets_despite_float_log() -> None:
    assert int(math.log(243) / math.log(3)) == 4  # the float trap the integer loop avoids
    brackets = hyperband_schedule(243, 3)
    assert summary(brackets) == [
        (5, 243, 1.0),
        (4, 98, 3.0),
        (3, 41, 9.0),
        (2, 18, 27.0),
        (1, 9, 81.0),
        (0, 6, 243.0),
    ]
    assert [n for n, _ in brackets[0].rungs] == [243, 81, 27, 9, 3, 1]
    assert [n for n, _ in brackets[1].rungs] == [98, 32, 10, 3, 1]


def test_hyperband_27_3() -> None:
    brackets = hyperband_schedule(27, 3)
    assert summary(brackets) == [(3, 27, 1.0), (2, 12, 3.0), (1, 6, 9.0), (0, 4, 27.0)]
    assert list(brackets[1].rungs) == [(12, 3.0), (4, 9.0), (1, 27.0)]


def test_hyperband_100_3_non_power_resource() -> None:
    brackets = hyperband_schedule(100, 3)
    assert [(b.s, b.n) for b in brackets] == [(4, 81), (3, 34), (2, 15), (1, 8), (0, 5)]
    assert [b.r for b in brackets] == pytest.approx([100 / 81, 100 / 27, 100 / 9, 100 / 3, 100])
    assert brackets[0].rungs[-1] == (1, 100.0)
    for bracket in brackets:
        assert bracket.rungs[-1][1] == 100.0


def test_hyperband_10_3_matches_hypertune_manager() -> None:
    brackets = hyperband_schedule(10, 3)
    assert [(b.n, [n for n, _ in b.rungs]) for b in brackets] == [
        (9, [9, 3, 1]),
        (5, [5, 1]),
        (3, [3]),
    ]
    assert [r for _, r in brackets[0].rungs] == pytest.approx([10 / 9, 10 / 3, 10])


@pytest.mark.parametrize(
    ("max_iterations", "eta", "s_max"),
    [(1, 3, 0), (2, 3, 0), (3, 3, 1), (8, 2, 3), (1000, 10, 3), (999, 10, 2), (16, 2, 4)],
)
def test_s_max_is_exact(max_iterations: int, eta: float, s_max: int) -> None:
    brackets = hyperband_schedule(max_iterations, eta)
    assert brackets[0].s == s_max
    assert [b.s for b in brackets] == list(range(s_max, -1, -1))


@pytest.mark.parametrize(
    ("max_iterations", "eta"), [(81, 3), (243, 3), (100, 3), (64, 2), (50, 2.5), (1000, 10)]
)
def test_every_bracket_keeps_at_least_one_config_and_ends_at_max(
    max_iterations: int, eta: float
) -> None:
    for bracket in hyperband_schedule(max_iterations, eta):
        counts = [n for n, _ in bracket.rungs]
        resources = [r for _, r in bracket.rungs]
        assert len(bracket.rungs) == bracket.s + 1
        assert counts[0] == bracket.n and min(counts) >= 1
        assert counts == sorted(counts, reverse=True)
        assert resources[-1] == pytest.approx(max_iterations)
        for k in range(1, len(resources)):
            assert resources[k] == pytest.approx(resources[k - 1] * eta)


@pytest.mark.parametrize(
    ("max_iterations", "eta", "message"),
    [
        (0, 3, "at least 1"),
        (10.5, 3, "must be an integer"),
        (True, 3, "must be an integer"),
        (81, 1, "eta must be greater than 1"),
        (81, 0.5, "eta must be greater than 1"),
    ],
)
def test_hyperband_schedule_rejects_bad_inputs(
    max_iterations: Any, eta: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        hyperband_schedule(max_iterations, eta)


# -- full schedules and totals (Li et al. 2018: n = ceil((s_max+1) eta^s / (s+1)), r = R eta^-s,
# rung k keeps floor(n eta^-k) configs at r eta^k) -----------------------------------------------

SCHEDULES = {
    # (R, eta): ([configs per rung, per bracket], runs, budget with int resources)
    (81, 3): (
        [[81, 27, 9, 3, 1], [34, 11, 3, 1], [15, 5, 1], [8, 2], [5]],
        206,
        1902,
    ),
    (243, 3): (
        [[243, 81, 27, 9, 3, 1], [98, 32, 10, 3, 1], [41, 13, 4, 1], [18, 6, 2], [9, 3], [6]],
        611,
        8457,
    ),
    (27, 3): ([[27, 9, 3, 1], [12, 4, 1], [6, 2], [4]], 69, 423),
    # 100 is not a power of 3: the same brackets as 81, resources 100/81 * 3^k cut to ints
    (100, 3): (
        [[81, 27, 9, 3, 1], [34, 11, 3, 1], [15, 5, 1], [8, 2], [5]],
        206,
        2276,
    ),
    (64, 2): (
        [
            [64, 32, 16, 8, 4, 2, 1],
            [38, 19, 9, 4, 2, 1],
            [23, 11, 5, 2, 1],
            [14, 7, 3, 1],
            [10, 5, 2],
            [7, 3],
            [7],
        ],
        301,
        None,
    ),
}


def hyperband(max_iterations: Any, eta: Any, resource_type: str = "int") -> Any:
    return ADAPTER.validate_python(
        {
            "kind": "hyperband",
            "maxIterations": max_iterations,
            "eta": eta,
            "resource": {"name": "epochs", "type": resource_type},
            "metric": {"name": "loss", "optimization": "minimize"},
            "params": {"lr": {"kind": "uniform", "value": [0, 1]}},
        }
    )


@pytest.mark.parametrize(("max_iterations", "eta"), list(SCHEDULES))
def test_hyperband_full_schedule_and_totals(max_iterations: int, eta: int) -> None:
    counts, runs, budget = SCHEDULES[(max_iterations, eta)]
    plan = matrix_plan(hyperband(max_iterations, eta))
    assert [[r["configs"] for r in b["rungs"]] for b in plan["brackets"]] == counts
    assert [b["bracket"] for b in plan["brackets"]] == list(range(len(counts) - 1, -1, -1))
    assert plan["total"] == runs == sum(map(sum, counts))
    if budget is not None:
        assert plan["budget"] == budget
    for bracket in plan["brackets"]:
        assert [r["rung"] for r in bracket["rungs"]] == list(range(len(bracket["rungs"])))
        assert bracket["rungs"][-1]["resource"] == max_iterations


def test_hyperband_plan_resources_are_cast_to_the_resource_type() -> None:
    ints = matrix_plan(hyperband(100, 3))
    assert [r["resource"] for r in ints["brackets"][0]["rungs"]] == [1, 3, 11, 33, 100]
    assert [r["resource"] for r in ints["brackets"][1]["rungs"]] == [3, 11, 33, 100]
    floats = matrix_plan(hyperband(100, 3, "float"))
    assert [r["resource"] for r in floats["brackets"][0]["rungs"]] == pytest.approx(
        [100 / 81, 100 / 27, 100 / 9, 100 / 3, 100]
    )
    assert floats["resource"] == "epochs"
    full = matrix_plan(hyperband(81, 3))
    assert [(b["rungs"][0]["configs"], b["rungs"][0]["resource"]) for b in full["brackets"]] == [
        (81, 1),
        (34, 3),
        (15, 9),
        (8, 27),
        (5, 81),
    ]


def test_hyperband_plan_with_template_counts_says_so() -> None:
    plan = matrix_plan(hyperband("{{ budget }}", 3))
    assert plan["kind"] == "hyperband" and plan["total"] is None
    assert "`maxIterations` is a template" in plan["note"]


# -- matrix_plan for the other kinds ------------------------------------------------------------


def test_grid_plan_lists_every_suggestion_in_order_as_json() -> None:
    spec = grid(
        {
            "d": {"kind": "daterange", "value": ["2020-01-01", "2020-01-03", 1]},
            "u": {"kind": "choice", "value": [1, 2]},
        }
    )
    plan = matrix_plan(spec)
    assert plan == {
        "kind": "grid",
        "total": 4,
        "suggestions": [
            {"d": "2020-01-01", "u": 1},
            {"d": "2020-01-01", "u": 2},
            {"d": "2020-01-02", "u": 1},
            {"d": "2020-01-02", "u": 2},
        ],
    }
    assert json.loads(json.dumps(plan)) == plan
    assert matrix_plan(grid(spec.to_dict()["params"], numRuns=3))["total"] == 3


def test_mapping_plan() -> None:
    spec = ADAPTER.validate_python({"kind": "mapping", "values": [{"a": 1}, {"a": 2}, {"a": 3}]})
    assert matrix_plan(spec) == {
        "kind": "mapping",
        "total": 3,
        "suggestions": [{"a": 1}, {"a": 2}, {"a": 3}],
    }
    templated = matrix_plan(ADAPTER.validate_python({"kind": "mapping", "values": "{{ v }}"}))
    assert templated["total"] is None and "template" in templated["note"]


def test_random_plan_counts_capped_runs() -> None:
    params = {"a": {"kind": "choice", "value": [1, 2, 3]}}
    spec = ADAPTER.validate_python({"kind": "random", "numRuns": 10, "seed": 4, "params": params})
    plan = matrix_plan(spec)
    assert plan["total"] == 3
    assert "seed 4" in plan["note"] and "capped at the 3 distinct points" in plan["note"]
    params["b"] = {"kind": "normal", "value": [0, 1]}
    spec = ADAPTER.validate_python({"kind": "random", "numRuns": 10, "params": params})
    assert matrix_plan(spec) == {
        "kind": "random",
        "total": 10,
        "note": "10 distinct random draws (unseeded)",
    }


def test_iteration_kinds_plan_a_count_and_a_note() -> None:
    params = {"x": {"kind": "uniform", "value": [0, 1]}}
    metric = {"name": "loss", "optimization": "minimize"}
    bayes = ADAPTER.validate_python(
        {
            "kind": "bayes",
            "numInitialRuns": 5,
            "maxIterations": 15,
            "metric": metric,
            "params": params,
        }
    )
    assert matrix_plan(bayes)["total"] == 20
    hyperopt = {"kind": "hyperopt", "algorithm": "tpe", "metric": metric, "params": params}
    limited = matrix_plan(ADAPTER.validate_python({**hyperopt, "numRuns": 4, "maxIterations": 3}))
    assert limited["total"] == 12 and "`tpe`" in limited["note"]
    # without maxIterations the sweep runs one round of numRuns (SweepStudy.total): so says the plan
    assert matrix_plan(ADAPTER.validate_python({**hyperopt, "numRuns": 4}))["total"] == 4
    iterative = ADAPTER.validate_python(
        {"kind": "iterative", "maxIterations": 4, "tuner": {"hubRef": "my-tuner"}}
    )
    plan = matrix_plan(iterative)
    assert plan["total"] is None
    assert plan["note"].startswith("up to 4 iterations of suggestions from `my-tuner`")


def test_sampled_plan_with_template_param() -> None:
    spec = ADAPTER.validate_python(
        {"kind": "random", "numRuns": 3, "params": {"a": {"kind": "choice", "value": "{{ c }}"}}}
    )
    plan = matrix_plan(spec)
    assert plan["total"] is None
    assert "param `a` is a template" in plan["note"]
