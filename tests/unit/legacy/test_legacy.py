"""The legacy (v0.x) Polyaxonfile: detection, validation, conversion to v1.1 and `upgrade`."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect._source._located_yaml import parse_yaml
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.legacy import LegacyConversion, convert, is_legacy, upgrade_text

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
LEGACY_FILES = sorted(p.name for p in CORPUS.iterdir() if "v0.5" in p.name)
MODERN_FILES = sorted(
    p.name for p in CORPUS.iterdir() if p.suffix in (".yml", ".yaml") and "v0.5" not in p.name
)


def _load(name: str) -> LegacyConversion:
    document = parse_yaml((CORPUS / name).read_text(), file=name)
    return convert(document.data, positions=document.positions)


def _convert_text(text: str) -> LegacyConversion:
    document = parse_yaml(textwrap.dedent(text), file="old.yml")
    return convert(document.data, positions=document.positions)


def _problems(text: str) -> list[Any]:
    with pytest.raises(PolyaxonfileError) as info:
        _convert_text(text)
    return info.value.problems


def _assert_v11(data: dict[str, Any]) -> None:
    """The converted data is a valid v1.1 component/operation for the spec models."""
    from polyaxon_prefect.specs._all import Component, Operation

    model = Operation if data["kind"] == "operation" else Component
    assert model.model_validate(data).kind == data["kind"]


def _notes(conversion: LegacyConversion) -> dict[str, str]:
    return {note.format().split(": ", 1)[0]: note.message for note in conversion.notes}


# --- detection -----------------------------------------------------------------------------


def test_corpus_has_the_ten_legacy_files() -> None:
    assert len(LEGACY_FILES) == 10


@pytest.mark.parametrize("name", LEGACY_FILES)
def test_legacy_corpus_files_are_detected(name: str) -> None:
    assert is_legacy(yaml.safe_load((CORPUS / name).read_text()))


@pytest.mark.parametrize("name", MODERN_FILES)
def test_modern_corpus_files_are_not_legacy(name: str) -> None:
    assert not is_legacy(yaml.safe_load((CORPUS / name).read_text()))


def test_is_legacy_rules() -> None:
    assert is_legacy({"version": "1", "kind": "experiment"})
    assert is_legacy({"version": 1.0, "kind": "group"})
    # `version: 1.1` decides first: never legacy, whatever sections the file has
    assert not is_legacy({"version": 1.1, "kind": "component", "hptuning": {}})
    assert not is_legacy({"version": "1.1", "kind": "component", "environment": {}})
    assert is_legacy({"kind": "experiment", "environment": {}})
    assert not is_legacy({"version": 1, "kind": "component", "run": {"kind": "job"}})
    assert not is_legacy({"version": True, "kind": "experiment"})
    assert not is_legacy(["version", 1])


# --- distributed experiments -----------------------------------------------------------------


def test_distributed_tensorflow_fixture_becomes_a_tfjob() -> None:
    data = _load("polyaxon-schemas@v0.5__tests__fixtures__distributed_tensorflow_file.yml").data
    assert data["version"] == 1.1 and data["kind"] == "component"
    assert data["plugins"] == {"logLevel": "INFO"}
    run = data["run"]
    assert run["kind"] == "tfjob"
    chief, worker, ps = run["chief"], run["worker"], run["ps"]
    assert chief["replicas"] == 1
    assert chief["container"]["resources"] == {"requests": {"cpu": 1}, "limits": {"cpu": 2}}
    assert "nodeAffinity" in chief["environment"]["affinity"]
    command = ["/bin/bash", "-c", "video_prediction_train --model=DNA --num_masks=1"]
    assert chief["container"]["command"] == command
    assert worker["replicas"] == 5
    assert worker["container"]["command"] == command
    assert worker["container"]["image"] == "my_image"
    assert worker["container"]["resources"] == {
        "requests": {"cpu": 3, "memory": "256Mi"},
        "limits": {"cpu": 3, "memory": "256Mi"},
    }
    assert worker["environment"]["tolerations"] == [
        {"key": "key", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert "affinity" not in worker["environment"]  # legacy did not copy the master's
    assert worker["indexOverrides"] == {
        2: {"environment": {"tolerations": [{"operator": "Exists"}]}},
        3: {"resources": {"requests": {"memory": "300Mi"}, "limits": {"memory": "300Mi"}}},
    }
    assert ps["replicas"] == 10
    assert ps["container"]["resources"] == {"requests": {"cpu": 2}, "limits": {"cpu": 4}}
    assert ps["indexOverrides"] == {
        9: {"resources": {"requests": {"memory": "512Mi"}, "limits": {"memory": "1024Mi"}}}
    }


def test_distributed_mxnet_fixture_becomes_an_mxjob() -> None:
    run = _load("polyaxon-schemas@v0.5__tests__fixtures__distributed_mxnet_file.yml").data["run"]
    assert run["kind"] == "mxjob"
    assert run["mode"] == "MXTrain"
    assert run["scheduler"]["replicas"] == 1
    assert run["worker"]["replicas"] == 5
    assert run["server"]["replicas"] == 10
    assert sorted(run["worker"]["indexOverrides"]) == [2, 3]
    assert sorted(run["server"]["indexOverrides"]) == [9]
    assert "ps" not in run


def test_old_placement_mxnet_block_inside_environment() -> None:
    conversion = _load(
        "polyaxon-examples@v0.5.5__in_cluster__mxnet__cifar10__polyaxonfile_distributed.yml"
    )
    run = conversion.data["run"]
    assert run["kind"] == "mxjob"
    assert run["worker"]["replicas"] == 2
    assert run["server"]["replicas"] == 1
    assert run["scheduler"]["container"]["env"] == [{"name": "PS_VERBOSE", "value": "2"}]
    assert run["worker"]["container"]["image"] == "polyaxon/mxnetkv"
    assert "environment.mxnet" in _notes(conversion)


def test_cifar10_tensorflow_example_maps_gpus() -> None:
    run = _load(
        "polyaxon-examples@v0.5.5__in_cluster__tensorflow__cifar10__polyaxonfile_distributed.yml"
    ).data["run"]
    gpu = {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}}
    assert run["kind"] == "tfjob"
    for name in ("chief", "worker", "ps"):
        assert run[name]["replicas"] == 1
        assert run[name]["container"]["resources"] == gpu
        assert run[name]["container"]["image"] == "tensorflow/tensorflow:1.4.1-gpu"


def test_horovod_example_becomes_an_mpijob_with_the_command_on_the_launcher() -> None:
    conversion = _load(
        "polyaxon-examples@v0.5.5__in_cluster__horovod__tensorflow__polyaxonfile.yml"
    )
    run = conversion.data["run"]
    assert run["kind"] == "mpijob"
    assert run["launcher"]["replicas"] == 1
    assert run["launcher"]["container"]["command"] == ["/bin/bash", "-c", "python -u mnist.py"]
    assert run["worker"]["replicas"] == 1
    assert "command" not in run["worker"]["container"]
    assert run["worker"]["container"]["resources"]["limits"] == {"nvidia.com/gpu": 1}
    notes = _notes(conversion)
    assert "Dockerfile" in notes["build.dockerfile"]


def test_pytorch_replicas_become_master_and_workers() -> None:
    data = _convert_text(
        """
        version: 1
        kind: experiment
        framework: pytorch
        backend: kubeflow
        environment:
          node_selector: {gpu: "true"}
          resources: {memory: {requests: 512.5, limits: 1024}}
          replicas:
            n_workers: 3
            default_worker:
              node_selector: {pool: workers}
        build: {image: pytorch/pytorch}
        run: {cmd: [pip install -e ., python train.py]}
        """
    ).data
    _assert_v11(data)
    run = data["run"]
    assert run["kind"] == "pytorchjob"
    assert run["master"]["environment"] == {"nodeSelector": {"gpu": "true"}}
    assert run["master"]["container"]["resources"] == {
        "requests": {"memory": "512.5Mi"},
        "limits": {"memory": "1024Mi"},
    }
    assert run["master"]["container"]["command"][2] == "pip install -e . && python train.py"
    assert run["worker"] == {
        "replicas": 3,
        "environment": {"nodeSelector": {"pool": "workers"}},
        "container": {
            "image": "pytorch/pytorch",
            "command": ["/bin/bash", "-c", "pip install -e . && python train.py"],
        },
    }


def test_mpi_backend_wins_over_the_framework() -> None:
    run = _convert_text(
        """
        version: 1
        kind: experiment
        backend: mpi
        framework: tensorflow
        environment: {replicas: {n_workers: 4}}
        run: {cmd: mpirun python train.py}
        """
    ).data["run"]
    assert run["kind"] == "mpijob"
    assert run["worker"]["replicas"] == 4


def test_out_of_range_index_is_dropped_with_a_note() -> None:
    conversion = _convert_text(
        """
        version: 1
        kind: experiment
        framework: horovod
        environment:
          replicas:
            n_workers: 2
            worker:
              - {index: 5, node_selector: {a: b}}
        run: {cmd: train}
        """
    )
    assert "indexOverrides" not in conversion.data["run"]["worker"]
    assert "out of range" in _notes(conversion)["environment.replicas.worker[0]"]


# --- groups ------------------------------------------------------------------------------------


def test_keras_group_becomes_a_random_matrix_operation() -> None:
    conversion = _load(
        "polyaxon-examples@v0.5.5__in_cluster__keras__mnist__polyaxonfile_hyperparams.yml"
    )
    data = conversion.data
    assert data["kind"] == "operation"
    assert data["tags"] == ["examples"]
    matrix = data["matrix"]
    assert matrix["kind"] == "random"
    assert matrix["numRuns"] == 50
    assert matrix["concurrency"] == 5
    params = matrix["params"]
    assert params["conv1_size"] == {"kind": "choice", "value": [32, 64, 128]}
    assert params["dropout"] == {"kind": "uniform", "value": "0:1"}
    assert params["hidden1_size"] == {"kind": "range", "value": "10:600:50"}
    assert params["optimizer"]["kind"] == "pchoice"
    assert params["log_learning_rate"] == {"kind": "range", "value": [-5, 0, 1]}
    component = data["component"]
    inputs = {io["name"]: io for io in component["inputs"]}
    assert set(inputs) == set(params)
    assert inputs["hidden1_size"]["type"] == "int"
    assert inputs["dropout"]["type"] == "float"
    assert inputs["optimizer"]["type"] == "str"
    command = component["run"]["container"]["command"]
    assert command[:2] == ["/bin/bash", "-c"]
    assert "\\" not in command[2]
    assert "--conv1_size={{ conv1_size }} --conv2_size={{ conv2_size }}" in command[2]
    assert component["run"]["container"]["image"] == "python:3.6"
    assert "run.cmd" in _notes(conversion)


def test_sklearn_group_keeps_declarations_and_reads_a_long_range_as_values() -> None:
    conversion = _load(
        "polyaxon-examples@v0.5.5__in_cluster__sklearn__random_forest__polyaxonfile_hyperparams.yml"
    )
    matrix = conversion.data["matrix"]
    assert matrix["kind"] == "grid"
    assert "numRuns" not in matrix
    assert matrix["params"]["n_estimators"] == {"kind": "choice", "value": [3, 4, 5, 6]}
    assert matrix["params"]["min_samples_leaf"] == {"kind": "choice", "value": [80, 100, 120]}
    inputs = conversion.data["component"]["inputs"]
    assert inputs == [
        {"name": "max_features", "type": "int", "value": 3, "isOptional": True},
        {"name": "min_samples_leaf", "type": "int", "value": 80, "isOptional": True},
        {"name": "n_estimators", "type": "int"},
    ]
    assert "choice" in _notes(conversion)["hptuning.matrix.n_estimators.range"]


def test_matrix_fixture_default_grid_and_dropped_persistence() -> None:
    conversion = _load("polyaxon-schemas@v0.5__tests__fixtures__matrix_file.yml")
    matrix = conversion.data["matrix"]
    assert matrix == {
        "kind": "grid",
        "concurrency": 2,
        "params": {
            "lr": {"kind": "linspace", "value": "0.01:0.1:5"},
            "loss": {"kind": "choice", "value": ["MeanSquaredError", "AbsoluteDifference"]},
        },
    }
    notes = _notes(conversion)
    assert "environment.persistence" in notes
    assert "environment.outputs" in notes


def test_matrix_fixture_with_early_stopping() -> None:
    matrix = _load("polyaxon-schemas@v0.5__tests__fixtures__matrix_file_early_stopping.yml").data[
        "matrix"
    ]
    assert matrix["kind"] == "random"
    assert matrix["numRuns"] == 5
    assert matrix["earlyStopping"] == [
        {
            "kind": "metric_early_stopping",
            "metric": "loss",
            "value": 0.01,
            "optimization": "maximize",
        }
    ]


def test_sampling_fixture_keeps_distributions_and_defaults_concurrency_to_one() -> None:
    data = _load("polyaxon-schemas@v0.5__tests__fixtures__run_cmd_matrix_sampling_file.yml").data
    params = data["matrix"]["params"]
    assert data["matrix"]["concurrency"] == 1
    assert params["learning_rate"] == {"kind": "normal", "value": [0, 0.9]}
    assert params["dropout"] == {"kind": "qloguniform", "value": [0, 0.8, 0.1]}
    # legacy sampling gave the missing 0.1 to the last value; v1.1 wants the sum to be 1
    assert params["activation"] == {"kind": "pchoice", "value": [["relu", 0.1], ["sigmoid", 0.9]]}
    assert data["tags"] == ["foo", "bar"]
    assert data["component"]["plugins"] == {"logLevel": "INFO"}


def test_hyperband_bo_and_policies_are_renamed() -> None:
    hyperband = _convert_text(
        """
        version: 1
        kind: group
        hptuning:
          seed: 7
          hyperband:
            max_iter: 81
            eta: 3
            resource: {name: num_epochs, type: INT}
            metric: {name: loss, optimization: Minimize}
            resume: false
          early_stopping:
            - {metric: loss, value: 0.1, optimization: minimize,
               policy: {kind: truncation, percent: 20, evaluation_interval: 2}}
            - {metric: acc, value: 0.9, policy: {kind: median, evaluation_interval: 1}}
          matrix:
            lr: {loguniform: [-5, 0]}
        run: {cmd: "train --epochs={{ num_epochs }} --lr={{ lr }}"}
        """
    )
    _assert_v11(hyperband.data)
    matrix = hyperband.data["matrix"]
    assert matrix["kind"] == "hyperband"
    assert matrix["maxIterations"] == 81 and matrix["eta"] == 3 and matrix["seed"] == 7
    assert matrix["resource"] == {"name": "num_epochs", "type": "int"}
    assert matrix["metric"] == {"name": "loss", "optimization": "minimize"}
    assert matrix["earlyStopping"][0]["policy"] == {
        "kind": "truncation",
        "percent": 20,
        "evaluationInterval": 2,
    }
    assert matrix["earlyStopping"][1]["optimization"] == "maximize"
    assert matrix["earlyStopping"][1]["policy"] == {"kind": "median", "evaluationInterval": 1}
    inputs = {io["name"]: io for io in hyperband.data["component"]["inputs"]}
    assert inputs["num_epochs"] == {"name": "num_epochs", "type": "int"}

    bayes = _convert_text(
        """
        version: 1
        kind: group
        hptuning:
          bo:
            n_initial_trials: 5
            n_iterations: 10
            metric: {name: loss, optimization: minimize}
            utility_function:
              acquisition_function: EI
              eps: 0.1
              n_warmup: 100
              n_iter: 20
              gaussian_process: {kernel: RBF, length_scale: 0.5, nu: 1.9, n_restarts_optimizer: 2}
          early_stopping:
            - {metric: loss, value: 0.1, policy: {kind: average, evaluation_interval: 3}}
          matrix:
            lr: {uniform: "0.001:0.1"}
            layers: {range: "1:5:1"}
        run: {cmd: train}
        """
    )
    _assert_v11(bayes.data)
    matrix = bayes.data["matrix"]
    assert matrix["kind"] == "bayes"
    assert matrix["numInitialRuns"] == 5 and matrix["maxIterations"] == 10
    assert matrix["utilityFunction"] == {
        "acquisitionFunction": "ei",
        "gaussianProcess": {
            "kernel": "rbf",
            "lengthScale": 0.5,
            "nu": 1.9,
            "numRestartsOptimizer": 2,
        },
        "eps": 0.1,
        "numWarmup": 100,
        "numIterations": 20,
    }
    assert "policy" not in matrix["earlyStopping"][0]
    assert "average" in _notes(bayes)["hptuning.early_stopping[0].policy"]
    inputs = {io["name"]: io for io in bayes.data["component"]["inputs"]}
    assert inputs["layers"]["type"] == "int"


def test_declarations_become_typed_inputs_with_defaults() -> None:
    data = _convert_text(
        """
        version: 1
        kind: experiment
        declarations:
          lr: 0.1
          epochs: 3
          use_gpu: true
          optimizer: adam
          layers: [32, 64]
          extra: {a: 1}
        run: {cmd: "train --lr={{ lr }}"}
        """
    ).data
    _assert_v11(data)
    assert data["inputs"] == [
        {"name": "lr", "type": "float", "value": 0.1, "isOptional": True},
        {"name": "epochs", "type": "int", "value": 3, "isOptional": True},
        {"name": "use_gpu", "type": "bool", "value": True, "isOptional": True},
        {"name": "optimizer", "type": "str", "value": "adam", "isOptional": True},
        {"name": "layers", "type": "list", "value": [32, 64], "isOptional": True},
        {"name": "extra", "type": "dict", "value": {"a": 1}, "isOptional": True},
    ]
    assert data["run"] == {
        "kind": "job",
        "container": {"command": ["/bin/bash", "-c", "train --lr={{ lr }}"]},
    }


def test_pod_settings_refs_and_restarts() -> None:
    conversion = _convert_text(
        """
        version: 1
        kind: experiment
        name: my.experiment
        environment:
          labels: {team: ml}
          annotations: {note: 1}
          service_account: trainer
          image_pull_secrets: [regcred]
          secret_refs: [aws]
          configmap_refs: [settings]
          data_refs: [data1]
          max_restarts: 2
          resources:
            cpu: {request: 0.5, limits: 1}
            tpu: {requests: 8, limits: 8}
        build: {image: alpine, env_vars: [[DEBUG, true]]}
        run: {cmd: echo hi}
        """
    )
    data = conversion.data
    _assert_v11(data)
    assert data["name"] == "my-experiment"
    assert data["termination"] == {"maxRetries": 2}
    run = data["run"]
    assert run["environment"] == {
        "labels": {"team": "ml"},
        "annotations": {"note": "1"},
        "serviceAccountName": "trainer",
        "imagePullSecrets": ["regcred"],
    }
    container = run["container"]
    assert container["envFrom"] == [
        {"secretRef": {"name": "aws"}},
        {"configMapRef": {"name": "settings"}},
    ]
    assert container["env"] == [{"name": "DEBUG", "value": "true"}]
    assert container["resources"] == {
        "requests": {"cpu": 0.5, "cloud-tpus.google.com/v2": 8},
        "limits": {"cpu": 1, "cloud-tpus.google.com/v2": 8},
    }
    notes = _notes(conversion)
    assert {"name", "environment.data_refs", "environment.max_restarts"} <= set(notes)


def test_settings_form_without_kind_is_read_as_a_group() -> None:
    conversion = _convert_text(
        """
        version: 1
        settings:
          concurrency: 3
          random_search: {n_experiments: 4}
          matrix:
            lr: {values: [0.1, 0.2]}
        run: {cmd: "train {{ lr }}"}
        """
    )
    _assert_v11(conversion.data)
    assert conversion.data["kind"] == "operation"
    assert conversion.data["matrix"]["kind"] == "random"
    assert conversion.data["matrix"]["numRuns"] == 4
    assert "settings" in _notes(conversion)


# --- upgrade -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", LEGACY_FILES)
def test_upgrade_text_reparses_to_the_converted_data(name: str) -> None:
    text = (CORPUS / name).read_text()
    output = upgrade_text(text, file=name)
    conversion = _load(name)
    assert output.startswith(f"# upgraded from {name} by polyaxon-prefect upgrade\n")
    assert output.count("\n# NOTE: ") == len(conversion.notes)
    assert "&id" not in output and "*id" not in output
    assert yaml.safe_load(output) == conversion.data
    assert parse_yaml(output).data == conversion.data
    assert list(conversion.data)[:2] == ["version", "kind"]


def test_upgrade_text_refuses_a_modern_file() -> None:
    text = (CORPUS / "polyaxon-quick-start__scheduling__experimentation__typed.yaml").read_text()
    with pytest.raises(PolyaxonfileError, match="not a legacy"):
        upgrade_text(text, file="typed.yaml")


# --- invalid legacy files ----------------------------------------------------------------------


def test_all_problems_of_a_file_are_reported_at_once_with_paths() -> None:
    problems = _problems(
        """
        version: 1
        kind: group
        environment:
          replicas:
            n_worker: 2
        hptuning:
          matrix:
            lr:
              values: [0.1, 0.2]
              range: 1:10:1
            dropout:
              uniform: 0:1
        run:
          cmd: train
        """
    )
    by_path = {p.path: p for p in problems}
    typo = by_path[("environment", "replicas", "n_worker")]
    assert typo.rule == "extra_forbidden"
    assert typo.hint == "did you mean `n_workers`?"
    assert typo.line == 6 and typo.file == "old.yml"
    two_keys = by_path[("hptuning", "matrix", "lr")]
    assert "exactly one of" in two_keys.message and "range, values" not in two_keys.message
    assert "values, range" in two_keys.message
    assert "framework" in by_path[("environment", "replicas")].message
    grid = by_path[("hptuning", "matrix", "dropout", "uniform")]
    assert "grid search" in grid.message and grid.line == 13
    assert len(problems) == 4


@pytest.mark.parametrize(
    ("text", "path", "match"),
    [
        (
            """
            version: 1
            kind: group
            hptuning:
              bo: {n_initial_trials: 1, n_iterations: 2, metric: {name: loss},
                   utility_function: {acquisition_function: ucb, kappa: 1}}
              matrix: {lr: {normal: [0, 1]}}
            run: {cmd: x}
            """,
            ("hptuning", "matrix", "lr", "normal"),
            "bayesian optimization",
        ),
        (
            """
            version: 1
            kind: group
            hptuning:
              grid_search: {n_experiments: 2}
              random_search: {n_experiments: 2}
              matrix: {lr: {values: [1, 2]}}
            run: {cmd: x}
            """,
            ("hptuning", "random_search"),
            "only one search algorithm",
        ),
        (
            """
            version: 1
            kind: experiment
            hptuning: {matrix: {lr: {values: [1]}}}
            run: {cmd: x}
            """,
            ("hptuning",),
            "only allowed in a `kind: group`",
        ),
        (
            """
            version: 1
            kind: group
            hptuning: {matrix: {lr: {range: "10:1:1"}}}
            run: {cmd: x}
            """,
            ("hptuning", "matrix", "lr", "range"),
            "must be greater than",
        ),
        (
            """
            version: 1
            kind: group
            hptuning:
              random_search: {n_experiments: 3}
              matrix: {a: {pvalues: [[x, 0.6], [y, 0.6]]}}
            run: {cmd: x}
            """,
            ("hptuning", "matrix", "a", "pvalues"),
            "sum to at most 1",
        ),
        (
            """
            version: 1
            kind: group
            hptuning:
              bo: {n_initial_trials: 1, n_iterations: 2, metric: {name: loss},
                   utility_function: {acquisition_function: ucb}}
              matrix: {lr: {values: [1, 2]}}
            run: {cmd: x}
            """,
            ("hptuning", "bo", "utility_function"),
            "requires `kappa`",
        ),
        (
            """
            version: 1
            kind: experiment
            framework: keras
            environment: {replicas: {n_workers: 2}}
            run: {cmd: x}
            """,
            ("framework",),
            "do not support the framework `keras`",
        ),
        (
            """
            version: 1
            kind: experiment
            framework: pytorch
            environment: {replicas: {n_workers: 2, n_ps: 1}}
            run: {cmd: x}
            """,
            ("environment", "replicas", "n_ps"),
            "not available for pytorch",
        ),
        (
            """
            version: 1
            kind: notebook
            build: {image: jupyter}
            """,
            ("kind",),
            "cannot be upgraded automatically",
        ),
        (
            """
            version: 1
            kind: group
            run: {cmd: x}
            """,
            (),
            "needs an `hptuning` section",
        ),
        (
            """
            version: 2
            kind: experiment
            run: {cmd: x}
            """,
            ("version",),
            "version: 1",
        ),
        (
            """
            version: 1
            kind: experiment
            framework: tensorflow
            environment:
              replicas:
                n_workers: 2
                worker: [{node_selector: {a: b}}]
            run: {cmd: x}
            """,
            ("environment", "replicas", "worker"),
            "has no `index`",
        ),
    ],
)
def test_invalid_legacy_files(text: str, path: tuple[Any, ...], match: str) -> None:
    problems = _problems(text)
    matching = [p for p in problems if p.path == path]
    assert matching, [p.format() for p in problems]
    assert any(match in p.message for p in matching), [p.format() for p in matching]
    assert all(p.file == "old.yml" for p in problems)


def test_convert_rejects_a_non_mapping() -> None:
    with pytest.raises(PolyaxonfileError, match="mapping"):
        convert(["version", 1])  # type: ignore[arg-type]


# --- the converted files are valid v1.1 ----------------------------------------------------------


@pytest.mark.parametrize("name", LEGACY_FILES)
def test_converted_corpus_validates_with_the_v11_models(name: str) -> None:
    _assert_v11(_load(name).data)


def test_flat_0_1_replica_fields_inside_an_environment_framework_block() -> None:
    conversion = _convert_text(
        """
        version: 1
        kind: experiment
        environment:
          resources:
            gpu: {request: 1, limits: 1}
          tensorflow:
            n_workers: 3
            n_ps: 1
            default_worker_resources:
              cpu: {requests: 1, limits: 2}
            worker_resources:
              - index: 2
                memory: {requests: 256, limits: 1024}
            ps_node_selectors:
              - index: 0
                pool: ps
        run: {cmd: python train.py}
        """
    )
    _assert_v11(conversion.data)
    run = conversion.data["run"]
    assert run["kind"] == "tfjob"
    assert run["chief"]["container"]["resources"]["requests"] == {"nvidia.com/gpu": 1}
    assert run["worker"]["replicas"] == 3
    assert run["worker"]["container"]["resources"] == {
        "requests": {"cpu": 1},
        "limits": {"cpu": 2},
    }
    assert run["worker"]["indexOverrides"] == {
        2: {"resources": {"requests": {"memory": "256Mi"}, "limits": {"memory": "1024Mi"}}}
    }
    assert run["ps"]["indexOverrides"] == {0: {"environment": {"nodeSelector": {"pool": "ps"}}}}
    assert "environment.tensorflow.worker_resources" in _notes(conversion)
