"""The seven matrix kinds: required fields, param restrictions, and the corpus matrices."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from polyaxon_prefect._source._located_yaml import parse_yaml
from polyaxon_prefect.specs.matrix._early_stopping import FailureEarlyStopping, MetricEarlyStopping
from polyaxon_prefect.specs.matrix._hyperparams import HpChoice, HpLinSpace, HpUniform
from polyaxon_prefect.specs.matrix._matrix import (
    Bayes,
    GridSearch,
    Hyperband,
    Hyperopt,
    Iterative,
    Mapping,
    Matrix,
    RandomSearch,
    Tuner,
    UtilityFunction,
)

ADAPTER = TypeAdapter(Matrix)
CORPUS = Path(__file__).resolve().parents[2] / "corpus"

CHOICE = {"kind": "choice", "value": [1, 2]}
UNIFORM = {"kind": "uniform", "value": [0, 1]}
PCHOICE = {"kind": "pchoice", "value": [["a", 0.5], ["b", 0.5]]}
METRIC = {"name": "loss", "optimization": "minimize"}


def matrix(**fields: Any) -> Any:
    return ADAPTER.validate_python(fields)


def errors(**fields: Any) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as info:
        matrix(**fields)
    return info.value.errors()


def only_error(**fields: Any) -> dict[str, Any]:
    found = errors(**fields)
    assert len(found) == 1, found
    return found[0]


# -- the corpus ---------------------------------------------------------------------------------


def _corpus_matrices() -> list[tuple[str, str, dict[str, Any]]]:
    """Every v1.1 matrix in the corpus: an operation's own, or a DAG operation's."""
    found = []
    for path in sorted(CORPUS.glob("*.y*ml")):
        data = parse_yaml(path.read_text(), file=path.name).data
        if not isinstance(data, dict) or str(data.get("version")) != "1.1":
            continue
        if isinstance(data.get("matrix"), dict):
            found.append((path.name, "matrix", data["matrix"]))
        run = data.get("run") or (data.get("component") or {}).get("run") or {}
        for index, op in enumerate(run.get("operations") or []):
            if isinstance(op, dict) and isinstance(op.get("matrix"), dict):
                found.append((path.name, f"run.operations[{index}].matrix", op["matrix"]))
    return found


CORPUS_MATRICES = _corpus_matrices()
# [[relu, 0.1], [sigmoid, 0.8]]: accepted, as Polyaxon does, sigmoid drawn 90 % of the time.
PCHOICE_SUMS_TO_0_9 = {
    "polyaxon-quick-start__scheduling__dags__dag.yaml",
    "polyaxon-quick-start__scheduling__joins__map_reduce_tune_join.yaml",
    "polyaxon-quick-start__scheduling__optimization__hyperparams_early_stopping.yaml",
    "polyaxon-quick-start__scheduling__optimization__hyperparams_hyperband.yaml",
    "polyaxon-quick-start__scheduling__optimization__hyperparams_random.yaml",
}


def test_corpus_has_every_matrix_kind_we_expect() -> None:
    kinds = {data["kind"] for _, _, data in CORPUS_MATRICES}
    assert {"grid", "random", "hyperband", "bayes", "hyperopt", "mapping"} <= kinds
    assert {name for name, _, _ in CORPUS_MATRICES} >= PCHOICE_SUMS_TO_0_9


@pytest.mark.parametrize(
    ("name", "where", "data"),
    CORPUS_MATRICES,
    ids=[f"{name}:{where}" for name, where, _ in CORPUS_MATRICES],
)
def test_corpus_matrix_validates(name: str, where: str, data: dict[str, Any]) -> None:
    parsed = ADAPTER.validate_python(data)
    if name in PCHOICE_SUMS_TO_0_9:
        spec = parsed.hp_params()["conv_activation"].spec
        assert spec.probabilities == (0.1, 0.9)
        assert spec.written_sum == pytest.approx(0.9)
    assert parsed.kind == data["kind"]
    assert list(parsed.hp_params()) == list(data.get("params") or {})


def test_corpus_grid_and_bayes_details() -> None:
    by_kind = {data["kind"]: data for _, _, data in CORPUS_MATRICES}
    bayes = ADAPTER.validate_python(by_kind["bayes"])
    assert isinstance(bayes, Bayes)
    assert bayes.utility_function.kappa == 1.2
    assert bayes.utility_function.gaussian_process.num_restarts_optimizer == 0
    assert bayes.hp_params()["conv_activation"].is_categorical
    hyperopt = ADAPTER.validate_python(by_kind["hyperopt"])
    assert isinstance(hyperopt, Hyperopt)
    assert hyperopt.tuner == Tuner(hub_ref="hyperopt-tuner")


def test_dag_matrix_with_early_stopping_from_the_corpus() -> None:
    path = CORPUS / "cli__cli__tests__fixtures__pipelines__matrix_file_early_stopping.yml"
    data = parse_yaml(path.read_text()).data
    parsed = ADAPTER.validate_python(data["run"]["operations"][1]["matrix"])
    assert isinstance(parsed, RandomSearch)
    assert parsed.num_runs == 300 and parsed.concurrency == 2
    (stop,) = parsed.early_stopping
    assert isinstance(stop, MetricEarlyStopping) and stop.metric == "loss"


# -- shared fields ------------------------------------------------------------------------------


def test_kind_is_required_and_must_be_known() -> None:
    assert only_error(params={"a": CHOICE})["type"] == "union_tag_not_found"
    assert only_error(kind="bogus")["type"] == "union_tag_invalid"


@pytest.mark.parametrize("field", ["numRuns", "concurrency"])
@pytest.mark.parametrize("bad", [0, -1])
def test_counts_must_be_at_least_one(field: str, bad: int) -> None:
    fields = {"kind": "random", "params": {"a": CHOICE}, "numRuns": 5, field: bad}
    error = only_error(**fields)
    assert error["loc"] == ("random", field)
    assert f"`{field}` must be at least 1, got {bad}" in error["msg"]


def test_counts_accept_templates_and_numeric_strings() -> None:
    parsed = matrix(kind="random", params={"a": CHOICE}, numRuns="{{ n }}", concurrency="4")
    assert parsed.num_runs == "{{ n }}" and parsed.concurrency == 4
    error = only_error(kind="random", params={"a": CHOICE}, numRuns="many")
    assert "`numRuns` must be an integer or a `{{ template }}`, got 'many'" in error["msg"]


def test_early_stopping_is_a_list_of_conditions() -> None:
    parsed = matrix(
        kind="grid",
        params={"a": CHOICE},
        earlyStopping=[{"kind": "failure_early_stopping", "percent": 50}],
    )
    assert parsed.early_stopping == [FailureEarlyStopping(percent=50)]
    error = only_error(
        kind="grid", params={"a": CHOICE}, earlyStopping=[{"kind": "failure_early_stopping"}]
    )
    assert error["loc"] == ("grid", "earlyStopping", 0, "failure_early_stopping", "percent")


def test_unknown_field_is_refused() -> None:
    error = only_error(kind="grid", params={"a": CHOICE}, n_runs=3)
    assert error["type"] == "extra_forbidden"


# -- grid ---------------------------------------------------------------------------------------


def test_grid_needs_params() -> None:
    assert only_error(kind="grid")["loc"] == ("grid", "params")


@pytest.mark.parametrize("kind", ["uniform", "pchoice", "normal", "qloguniform"])
def test_grid_refuses_distributions(kind: str) -> None:
    values = {
        "uniform": [0, 1],
        "pchoice": [["a", 0.5], ["b", 0.5]],
        "normal": [0, 1],
        "qloguniform": [0, 1, 0.1],
    }
    error = only_error(
        kind="grid", params={"a": CHOICE, "x": {"kind": kind, "value": values[kind]}}
    )
    assert error["loc"] == ("grid", "params")
    assert error["type"] == "matrix_param_kind"
    assert error["msg"] == (
        f"`x` defines a distribution (kind `{kind}`), "
        "and grid search can only enumerate discrete params"
    )
    assert "random" in error["ctx"]["hint"]


def test_grid_accepts_every_discrete_kind() -> None:
    params = {
        "a": CHOICE,
        "b": {"kind": "range", "value": "1:3:1"},
        "c": {"kind": "linspace", "value": [0, 1, 3]},
        "d": {"kind": "logspace", "value": [0, 1, 3]},
        "e": {"kind": "geomspace", "value": [1, 8, 4]},
        "f": {"kind": "daterange", "value": ["2020-01-01", "2020-01-03", 1]},
        "g": {"kind": "datetimerange", "value": ["2020-01-01", "2020-01-02", 43200]},
    }
    parsed = matrix(kind="grid", params=params, numRuns=10)
    assert isinstance(parsed, GridSearch)
    assert list(parsed.hp_params()) == list("abcdefg")


# -- random -------------------------------------------------------------------------------------


def test_random_needs_params_and_num_runs_and_accepts_any_kind() -> None:
    locs = {error["loc"] for error in errors(kind="random")}
    assert locs == {("random", "params"), ("random", "numRuns")}
    parsed = matrix(
        kind="random", params={"a": UNIFORM, "b": PCHOICE, "c": CHOICE}, numRuns=3, seed=7
    )
    assert isinstance(parsed, RandomSearch) and parsed.seed == 7
    assert isinstance(parsed.hp_params()["a"], HpUniform)


# -- hyperband ----------------------------------------------------------------------------------

HYPERBAND = {
    "kind": "hyperband",
    "params": {"lr": UNIFORM},
    "maxIterations": 81,
    "eta": 3,
    "resource": {"name": "epochs", "type": "int"},
    "metric": METRIC,
}


def test_hyperband_fields() -> None:
    parsed = matrix(**HYPERBAND, resume=False, seed=1)
    assert isinstance(parsed, Hyperband)
    assert parsed.eta == 3.0 and parsed.max_iterations == 81
    assert parsed.resource.cast_value(2.7) == 2
    assert parsed.metric.optimization == "minimize"


@pytest.mark.parametrize("eta", [1, 0.5, 0])
def test_hyperband_eta_must_exceed_one(eta: float) -> None:
    error = only_error(**{**HYPERBAND, "eta": eta})
    assert error["loc"] == ("hyperband", "eta")
    assert error["msg"] == f"`eta` must be greater than 1, got {eta:g}"
    assert "3 is usual" in error["ctx"]["hint"]


def test_hyperband_needs_what_its_tuner_needs() -> None:
    locs = {error["loc"][-1] for error in errors(kind="hyperband", params={"a": CHOICE})}
    assert locs == {"maxIterations", "eta", "resource", "metric"}


# -- bayes --------------------------------------------------------------------------------------

BAYES = {
    "kind": "bayes",
    "numInitialRuns": 5,
    "maxIterations": 10,
    "metric": METRIC,
    "params": {"lr": UNIFORM, "units": {"kind": "range", "value": [8, 64, 8]}},
}


def test_bayes_accepts_discrete_and_uniform() -> None:
    parsed = matrix(**BAYES, utilityFunction={"acquisitionFunction": "ei", "eps": 0.01})
    assert isinstance(parsed, Bayes)
    assert parsed.utility_function.acquisition_function == "ei"


def test_bayes_required_fields() -> None:
    locs = {error["loc"][-1] for error in errors(kind="bayes")}
    assert locs == {"numInitialRuns", "maxIterations", "metric", "params"}


@pytest.mark.parametrize(
    ("kind", "value"),
    [("pchoice", [["a", 0.5], ["b", 0.5]]), ("normal", [0, 1]), ("loguniform", [-3, 0])],
)
def test_bayes_refuses_non_uniform_distributions(kind: str, value: Any) -> None:
    error = only_error(
        **{**BAYES, "params": {"ok": UNIFORM, "bad": {"kind": kind, "value": value}}}
    )
    assert error["loc"] == ("bayes", "params")
    assert error["msg"] == (
        f"`bad` defines a non-uniform distribution (kind `{kind}`), "
        "and bayesian optimization only supports discrete params and `uniform`"
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "the acquisition function `ucb` requires `kappa`"),
        ({"acquisitionFunction": "ucb", "eps": 0.1}, "`ucb` requires `kappa`"),
        ({"acquisitionFunction": "ei"}, "the acquisition function `ei` requires `eps`"),
        ({"acquisitionFunction": "poi", "kappa": 2}, "`poi` requires `eps`"),
    ],
)
def test_utility_function_needs_its_knob(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        UtilityFunction.model_validate(config)


def test_utility_function_and_gaussian_process_defaults() -> None:
    utility = UtilityFunction.model_validate({"kappa": 2.5, "gaussianProcess": {}})
    assert utility.acquisition_function == "ucb"
    process = utility.gaussian_process
    assert (process.kernel, process.length_scale, process.nu, process.num_restarts_optimizer) == (
        "matern",
        1.0,
        1.5,
        0,
    )
    with pytest.raises(ValidationError, match="'matern' or 'rbf'"):
        UtilityFunction.model_validate({"kappa": 1, "gaussianProcess": {"kernel": "linear"}})
    with pytest.raises(ValidationError, match="Extra inputs"):
        UtilityFunction.model_validate({"kappa": 1, "gaussianProcess": {"numRestarts": 2}})


# -- hyperopt -----------------------------------------------------------------------------------

HYPEROPT = {
    "kind": "hyperopt",
    "algorithm": "tpe",
    "metric": METRIC,
    "numRuns": 20,
    "params": {"lr": {"kind": "loguniform", "value": [-7, 0]}, "a": CHOICE},
}


def test_hyperopt_required_fields() -> None:
    locs = {error["loc"][-1] for error in errors(kind="hyperopt")}
    assert locs == {"algorithm", "metric", "numRuns", "params"}
    assert isinstance(matrix(**HYPEROPT, maxIterations=3), Hyperopt)


def test_hyperopt_algorithm_is_one_of_three() -> None:
    error = only_error(**{**HYPEROPT, "algorithm": "bayes"})
    assert error["loc"] == ("hyperopt", "algorithm")
    assert "'tpe', 'rand' or 'anneal'" in error["msg"]


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("pchoice", [["a", 0.5], ["b", 0.5]]),
        ("daterange", ["2020-01-01", "2020-01-05", 1]),
        ("datetimerange", ["2020-01-01", "2020-01-02", 3600]),
    ],
)
def test_hyperopt_refuses_kinds_it_cannot_sample(kind: str, value: Any) -> None:
    error = only_error(**{**HYPEROPT, "params": {"d": {"kind": kind, "value": value}}})
    assert error["msg"] == f"`d` is a `{kind}` param, which hyperopt does not support"


# -- iterative ----------------------------------------------------------------------------------


def test_iterative_needs_max_iterations_only() -> None:
    assert only_error(kind="iterative")["loc"] == ("iterative", "maxIterations")
    parsed = matrix(kind="iterative", maxIterations=4, tuner={"hubRef": "acme/tuner:1"})
    assert isinstance(parsed, Iterative)
    assert parsed.hp_params() == {}
    assert parsed.tuner.hub_ref == "acme/tuner:1"


def test_tuner_needs_hub_ref_and_splits_presets() -> None:
    with pytest.raises(ValidationError, match="hubRef"):
        Tuner.model_validate({"queue": "gpu"})
    tuner = Tuner.model_validate({"hubRef": "t", "presets": "a, b", "params": {"x": {"value": 1}}})
    assert tuner.presets == ["a", "b"]
    assert tuner.to_dict() == {"hubRef": "t", "presets": ["a", "b"], "params": {"x": {"value": 1}}}


# -- mapping ------------------------------------------------------------------------------------


def test_mapping_values_and_keys() -> None:
    parsed = matrix(kind="mapping", values=[{"lr": 0.1, "units": 8}, {"units": 16, "lr": 0.2}])
    assert isinstance(parsed, Mapping)
    assert parsed.keys() == ["lr", "units"]
    assert parsed.hp_params() == {}


def test_mapping_values_may_be_a_template() -> None:
    parsed = matrix(kind="mapping", values="{{ upstream_configs }}")
    assert parsed.keys() == []


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([], "`values` needs at least one mapping of params, got an empty list"),
        ([{"a": 1}, 3], r"`values\[1\]` must be a mapping of param names to values, got 3"),
        ([{"a": 1, "b": 2}, {"a": 2}], r"`values\[1\]` lacks b compared with `values\[0\]`"),
        ([{"a": 1}, {"a": 2}, {"a": 3, "c": 1}], r"`values\[2\]` adds c compared with"),
        ([{"a": 1}, {"b": 2}], r"`values\[1\]` lacks a and adds b compared"),
    ],
)
def test_mapping_rules(values: list[Any], message: str) -> None:
    error = only_error(kind="mapping", values=values)
    assert error["loc"] == ("mapping", "values")
    assert re.search(message, error["msg"]), error["msg"]


def test_mapping_needs_values() -> None:
    assert only_error(kind="mapping")["loc"] == ("mapping", "values")


def test_hp_params_keeps_order_and_types() -> None:
    parsed = matrix(
        kind="random",
        numRuns=4,
        params={"z": {"kind": "linspace", "value": "0:1:3"}, "a": CHOICE},
    )
    params = parsed.hp_params()
    assert list(params) == ["z", "a"]
    assert isinstance(params["z"], HpLinSpace) and isinstance(params["a"], HpChoice)
