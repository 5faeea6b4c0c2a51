"""Patch strategies, presets and runPatch on YAML-shaped dicts.

The operation/preset pairs follow Polyaxon's ``test_patch_specification.py`` (every strategy with
empty and full values on both sides); where Polyaxon clears a field that a preset sets to null,
we keep it (None means "no opinion", see ``_patch``'s docstring).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from polyaxon_prefect._source._located_yaml import parse_yaml
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._patch import apply_preset, apply_run_patch, patch

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
QS = "polyaxon-quick-start__scheduling__"


def empty_operation() -> dict:
    return {"version": 1.1, "hubRef": "test"}


def full_operation() -> dict:
    d, i = "test", 2
    return {
        "version": 1.1,
        "name": d,
        "description": d,
        "tags": ["test1", "test2"],
        "presets": [d],
        "queue": "test/test",
        "cache": {"disable": False, "ttl": i},
        "termination": {"maxRetries": i, "ttl": i, "timeout": i},
        "plugins": {"auth": False, "shm": False, "collectLogs": False},
        "build": {
            "params": {"patch-key1": {"value": "test2"}, "patch-key2": {"value": "test1"}},
            "runPatch": {"init": [{"connection": d, "git": {"revision": d}}]},
            "hubRef": d,
        },
        "hooks": [
            {"hubRef": "test1", "trigger": "succeeded", "connection": "test1"},
            {"connection": "test2", "hubRef": "test2"},
        ],
        "params": {"patch-key1": {"value": "test2"}, "patch-key2": {"value": "test1"}},
        "runPatch": {
            "init": [{"connection": d, "git": {"revision": d}}],
            "connections": ["test1", "test2"],
            "container": {"resources": {"requests": {"cpu": i}}},
            "environment": {
                "nodeSelector": {"polyaxon": "core"},
                "serviceAccountName": d,
                "imagePullSecrets": ["test1", "test2"],
            },
        },
        "schedule": {"kind": "cron", "cron": "0 0 * * *", "startAt": "2024-01-01T00:00:00"},
        "events": [{"kinds": ["run_status_scheduled"], "ref": "test1"}],
        "joins": [{"query": "test1", "sort": "test1", "params": {"u": {"value": "test1"}}}],
        "matrix": {"concurrency": i, "kind": "mapping", "values": [{"a": i}, {"b": i}]},
        "dependencies": ["test1", "test2"],
        "trigger": "all_succeeded",
        "conditions": d,
        "skipOnUpstreamSkip": True,
        "hubRef": d,
    }


def full_preset() -> dict:
    p, i = "patch", 13
    return {
        "version": 1.1,
        "name": p,
        "isPreset": True,
        "description": p,
        "tags": ["patch1", "patch2"],
        "presets": [p],
        "queue": "patch/patch",
        "cache": {"disable": True, "ttl": i},
        "termination": {"maxRetries": i, "ttl": i, "timeout": i},
        "plugins": {"auth": True, "shm": True, "collectLogs": True},
        "build": {
            "params": {"patch-key1": {"value": "patch2"}, "patch-key2": {"value": "patch1"}},
            "runPatch": {"init": [{"connection": p, "git": {"revision": p}}]},
            "hubRef": p,
        },
        "hooks": [{"hubRef": "patch1", "trigger": "succeeded", "connection": "patch1"}],
        "params": {"patch-key1": {"value": "patch2"}, "patch-key2": {"value": "patch1"}},
        "runPatch": {
            "init": [{"connection": p, "git": {"revision": "dev"}}],
            "connections": ["patch1", "patch2"],
            "container": {"resources": {"requests": {"cpu": i, "memory": i}}},
            "environment": {
                "nodeSelector": {"polyaxon-patch": "core"},
                "serviceAccountName": p,
                "imagePullSecrets": ["patch1", "patch2"],
            },
        },
        "schedule": {"kind": "datetime", "startAt": "2025-01-01T00:00:00"},
        "events": [{"kinds": ["run_status_done"], "ref": p}],
        "joins": [{"query": p, "sort": p, "params": {"x": {"value": p, "contextOnly": True}}}],
        "matrix": {"concurrency": i, "kind": "mapping", "values": [{"a": i}, {"c": i}]},
        "dependencies": ["patch1", "patch2"],
        "trigger": "all_succeeded",
        "conditions": "",
        "skipOnUpstreamSkip": True,
    }


def empty_preset() -> dict:
    return {
        "version": 1.1,
        "name": None,
        "isPreset": True,
        "description": "",
        "tags": [],
        "presets": [],
        "queue": "",
        "cache": {},
        "termination": {},
        "plugins": {},
        "build": None,
        "hooks": [],
        "params": {},
        "runPatch": {
            "init": [],
            "connections": [],
            "container": {},
            "environment": {"nodeSelector": {}, "serviceAccountName": "", "imagePullSecrets": []},
        },
        "schedule": None,
        "events": [],
        "joins": [],
        "matrix": None,
        "dependencies": [],
        "trigger": None,
        "conditions": None,
        "skipOnUpstreamSkip": None,
    }


def body(preset: dict) -> dict:
    """What a preset contributes: no marker, no header, no nulls."""
    return {
        k: v
        for k, v in preset.items()
        if k not in ("isPreset", "version", "kind", "patchStrategy") and v is not None
    }


STRATEGIES = ["replace", "isnull", "post_merge", "pre_merge"]


# --- the four strategies x empty/full -----------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_an_empty_patch_changes_nothing(strategy):
    for operation in (empty_operation(), full_operation()):
        assert patch(operation, {}, strategy) == operation
        assert patch(operation, None, strategy) == operation
        assert patch(operation, {"isPreset": True}, strategy) == {**operation, "isPreset": True}


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("preset", [empty_preset, full_preset])
def test_any_strategy_fills_an_empty_operation(strategy, preset):
    result = patch(empty_operation(), body(preset()), strategy)
    assert result == {**empty_operation(), **body(preset())}


def test_replace_full_with_empty():
    result = patch(full_operation(), body(empty_preset()), "replace")
    expected = full_operation()
    expected.update(description="", queue="", tags=[], presets=[], hooks=[], params={})
    expected.update(events=[], joins=[], dependencies=[])
    # spec objects are patched key by key (cache: {} keeps the cache); free-form maps
    # (nodeSelector) and lists are replaced whole.
    expected["runPatch"] = {
        "init": [],
        "connections": [],
        "container": {"resources": {"requests": {"cpu": 2}}},
        "environment": {"nodeSelector": {}, "serviceAccountName": "", "imagePullSecrets": []},
    }
    assert result == expected


def test_replace_full_with_full():
    result = patch(full_operation(), body(full_preset()), "replace")
    assert result == {"version": 1.1, **body(full_preset()), "hubRef": "test"}


def test_replace_null_keeps_the_current_value():
    result = patch(
        {"name": "a", "termination": {"ttl": 1, "timeout": 2}},
        {
            "name": None,
            "termination": {"ttl": None, "timeout": 5},
        },
        "replace",
    )
    assert result == {"name": "a", "termination": {"ttl": 1, "timeout": 5}}


@pytest.mark.parametrize("preset", [empty_preset, full_preset])
def test_isnull_never_overrides_a_full_operation(preset):
    assert patch(full_operation(), body(preset()), "isnull") == full_operation()


def test_isnull_fills_only_missing_keys_and_keeps_free_form_maps_whole():
    current = {"termination": {"ttl": 1}, "environment": {"nodeSelector": {"a": "1"}}}
    new = {
        "termination": {"ttl": 9, "timeout": 5},
        "environment": {"nodeSelector": {"b": "2"}, "serviceAccountName": "sa"},
    }
    assert patch(current, new, "isnull") == {
        "termination": {"ttl": 1, "timeout": 5},
        "environment": {"nodeSelector": {"a": "1"}, "serviceAccountName": "sa"},
    }


def test_post_merge_full_with_empty():
    result = patch(full_operation(), body(empty_preset()), "post_merge")
    expected = full_operation()
    expected.update(description="", queue="")
    expected["runPatch"]["environment"]["serviceAccountName"] = ""
    assert result == expected


def test_post_merge_full_with_full():
    operation, preset = full_operation(), full_preset()
    result = patch(operation, body(preset), "post_merge")
    expected = {"version": 1.1, **body(preset), "hubRef": "test"}
    for key in ("tags", "presets", "hooks", "dependencies", "events", "joins"):
        expected[key] = operation[key] + preset[key]
    expected["matrix"]["values"] = operation["matrix"]["values"] + preset["matrix"]["values"]
    expected["build"]["runPatch"]["init"] = (
        operation["build"]["runPatch"]["init"] + preset["build"]["runPatch"]["init"]
    )
    expected["runPatch"] = {
        "init": operation["runPatch"]["init"] + preset["runPatch"]["init"],
        "connections": ["test1", "test2", "patch1", "patch2"],
        "container": {"resources": {"requests": {"cpu": 13, "memory": 13}}},
        "environment": {
            "nodeSelector": {"polyaxon": "core", "polyaxon-patch": "core"},
            "serviceAccountName": "patch",
            "imagePullSecrets": ["test1", "test2", "patch1", "patch2"],
        },
    }
    assert result == expected


def test_post_merge_lists_skip_items_already_present():
    assert patch({"tags": ["a", "b"]}, {"tags": ["b", "c"]}) == {"tags": ["a", "b", "c"]}


def test_pre_merge_full_with_empty():
    assert patch(full_operation(), body(empty_preset()), "pre_merge") == full_operation()


def test_pre_merge_full_with_full():
    operation, preset = full_operation(), full_preset()
    result = patch(operation, body(preset), "pre_merge")
    expected = full_operation()
    for key in ("tags", "presets", "hooks", "dependencies", "events", "joins"):
        expected[key] = preset[key] + operation[key]
    expected["matrix"]["values"] = preset["matrix"]["values"] + operation["matrix"]["values"]
    expected["build"]["runPatch"]["init"] = (
        preset["build"]["runPatch"]["init"] + operation["build"]["runPatch"]["init"]
    )
    expected["runPatch"] = {
        "init": preset["runPatch"]["init"] + operation["runPatch"]["init"],
        "connections": ["patch1", "patch2", "test1", "test2"],
        "container": {"resources": {"requests": {"cpu": 2, "memory": 13}}},
        "environment": {
            "nodeSelector": {"polyaxon": "core", "polyaxon-patch": "core"},
            "serviceAccountName": "test",
            "imagePullSecrets": ["patch1", "patch2", "test1", "test2"],
        },
    }
    assert result == expected


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_inputs_are_never_modified(strategy):
    operation, preset = full_operation(), full_preset()
    before = copy.deepcopy((operation, preset))
    result = patch(operation, body(preset), strategy)
    assert (operation, preset) == before
    result["runPatch"]["environment"]["nodeSelector"]["x"] = "y"
    result["tags"].append("z")
    assert (operation, preset) == before


def test_unknown_strategy():
    with pytest.raises(PolyaxonfileError, match="unknown patch strategy 'merge'"):
        patch({}, {}, "merge")


# --- same-kind patch: matrix, schedule, mount ---------------------------------------------------


GRID = {"kind": "grid", "concurrency": 2, "params": {"lr": {"kind": "choice", "value": [1, 2]}}}
RANDOM = {"kind": "random", "numRuns": 5, "params": {"lr": {"kind": "uniform", "value": [0, 1]}}}


def test_same_kind_matrix_is_merged():
    new = {
        "kind": "grid",
        "concurrency": 4,
        "params": {"dropout": {"kind": "choice", "value": [0]}},
    }
    result = patch({"matrix": GRID}, {"matrix": new})
    assert result["matrix"] == {
        "kind": "grid",
        "concurrency": 4,
        "params": {
            "lr": {"kind": "choice", "value": [1, 2]},
            "dropout": {"kind": "choice", "value": [0]},
        },
    }


@pytest.mark.parametrize(
    ("strategy", "winner"),
    [("post_merge", RANDOM), ("replace", RANDOM), ("pre_merge", GRID), ("isnull", GRID)],
)
def test_other_kind_matrix_replaces_or_is_ignored(strategy, winner):
    assert patch({"matrix": GRID}, {"matrix": RANDOM}, strategy) == {"matrix": winner}


def test_other_kind_schedule_is_not_mixed():
    cron = {"kind": "cron", "cron": "0 0 * * *", "maxRuns": 3}
    interval = {"kind": "interval", "frequency": 60}
    assert patch({"schedule": cron}, {"schedule": interval}) == {"schedule": interval}
    assert patch({"schedule": cron}, {"schedule": {"kind": "cron", "maxRuns": 5}}) == {
        "schedule": {"kind": "cron", "cron": "0 0 * * *", "maxRuns": 5}
    }


# --- presets ------------------------------------------------------------------------------------


def corpus(name: str) -> dict:
    path = CORPUS / f"{QS}{name}"
    return parse_yaml(path.read_text(), file=str(path)).data


def test_quick_start_presets_on_the_quick_start_operation():
    operation = corpus("experimentation__operation.yaml")
    before = copy.deepcopy(operation)
    with_termination = apply_preset(operation, corpus("helpers__termination.yaml"))
    assert with_termination == {**before, "termination": {"ttl": 160}}
    assert operation == before

    result = apply_preset(with_termination, corpus("helpers__scheduling-preset.yaml"))
    assert result == {
        **before,
        "termination": {"ttl": 160},
        "runPatch": {"environment": {"nodeSelector": {"polyaxon": "compute"}}},
    }
    assert "isPreset" not in result and "patchStrategy" not in result


def test_isnull_preset_does_not_override_existing_values():
    operation = {
        "kind": "operation",
        "hubRef": "x",
        "runPatch": {"environment": {"nodeSelector": {"pool": "gpu"}}},
    }
    result = apply_preset(operation, corpus("helpers__scheduling-preset.yaml"))
    assert result["runPatch"] == {"environment": {"nodeSelector": {"pool": "gpu"}}}


def test_preset_uses_its_own_strategy():
    operation = {"hubRef": "x", "tags": ["a"], "termination": {"ttl": 1}}
    preset = {
        "isPreset": True,
        "patchStrategy": "pre_merge",
        "tags": ["b"],
        "termination": {
            "ttl": 5,
            "timeout": 9,
        },
    }
    assert apply_preset(operation, preset) == {
        "hubRef": "x",
        "tags": ["b", "a"],
        "termination": {"ttl": 1, "timeout": 9},
    }
    preset["patchStrategy"] = "replace"
    assert apply_preset(operation, preset)["tags"] == ["b"]


def test_preset_header_keys_are_not_copied():
    operation = {"version": 1.1, "kind": "operation", "hubRef": "x"}
    preset = {"version": 1.1, "kind": "operation", "isPreset": True, "queue": "q"}
    assert apply_preset(operation, preset) == {**operation, "queue": "q"}


def test_preset_errors():
    with pytest.raises(PolyaxonfileError, match="says `isPreset: False`") as info:
        apply_preset({}, {"isPreset": False, "queue": "q"})
    assert info.value.problems[0].path == ("isPreset",)
    with pytest.raises(PolyaxonfileError, match="has `kind: component`"):
        apply_preset({}, {"kind": "component", "run": {}})
    with pytest.raises(PolyaxonfileError, match="unknown patch strategy 'merge'") as info:
        apply_preset({}, {"isPreset": True, "patchStrategy": "merge"})
    assert info.value.problems[0].path == ("patchStrategy",)
    with pytest.raises(PolyaxonfileError, match="must be a mapping"):
        apply_preset({}, ["queue"])  # type: ignore[arg-type]


# --- runPatch -----------------------------------------------------------------------------------


def _replica(image: str, replicas: int = 1) -> dict:
    return {"replicas": replicas, "container": {"image": image}}


def test_run_patch_on_a_job():
    run = {"kind": "job", "container": {"image": "a", "args": ["x"]}}
    result = apply_run_patch(
        run, {"environment": {"nodeSelector": {"n": "1"}}, "container": {"args": ["y"]}}
    )
    assert result == {
        "kind": "job",
        "container": {"image": "a", "args": ["x", "y"]},
        "environment": {"nodeSelector": {"n": "1"}},
    }
    assert run == {"kind": "job", "container": {"image": "a", "args": ["x"]}}


def test_replica_patch_reaches_every_tfjob_replica_present():
    run = {"kind": "tfjob", "chief": _replica("c"), "worker": _replica("w", 2)}
    result = apply_run_patch(run, {"environment": {"nodeSelector": {"pool": "gpu"}}})
    for name in ("chief", "worker"):
        assert result[name]["environment"] == {"nodeSelector": {"pool": "gpu"}}
    assert "ps" not in result and "evaluator" not in result
    assert result["worker"]["replicas"] == 2
    assert "environment" not in run["chief"]


def test_run_level_patch_on_a_tfjob():
    run = {"kind": "tfjob", "chief": _replica("c"), "worker": _replica("w", 2)}
    result = apply_run_patch(run, {"worker": {"replicas": 4}, "cleanPodPolicy": "All"})
    assert result["worker"] == {"replicas": 4, "container": {"image": "w"}}
    assert result["cleanPodPolicy"] == "All"
    assert result["chief"] == _replica("c")


def test_replica_patch_on_a_pytorchjob_with_pre_merge():
    run = {
        "kind": "pytorchjob",
        "master": {"replicas": 1, "container": {"image": "m", "resources": {"limits": {"cpu": 1}}}},
        "worker": _replica("w", 3),
    }
    result = apply_run_patch(
        run, {"container": {"image": "other", "resources": {"limits": {"cpu": 4}}}}, "pre_merge"
    )
    assert result["master"]["container"] == {"image": "m", "resources": {"limits": {"cpu": 1}}}
    assert result["worker"]["container"] == {"image": "w", "resources": {"limits": {"cpu": 4}}}


def test_replica_patch_on_ray_head_and_worker_groups():
    run = {"kind": "raycluster", "head": _replica("h"), "workers": {"small": _replica("s")}}
    result = apply_run_patch(run, {"rayStartParams": {"num-cpus": "1"}})
    assert result["head"]["rayStartParams"] == {"num-cpus": "1"}
    assert result["workers"]["small"]["rayStartParams"] == {"num-cpus": "1"}


def test_run_patch_mixing_run_and_replica_fields_is_an_error():
    run = {"kind": "tfjob", "worker": _replica("w")}
    with pytest.raises(PolyaxonfileError, match="neither all tfjob fields") as info:
        apply_run_patch(run, {"worker": {"replicas": 2}, "environment": {}})
    assert info.value.problems[0].path == ("runPatch", "environment")


def test_run_patch_with_unknown_key_on_a_job():
    with pytest.raises(PolyaxonfileError, match="`replicas` is not a field of a job run") as info:
        apply_run_patch({"kind": "job"}, {"replicas": 2})
    assert info.value.problems[0].path == ("runPatch", "replicas")


def test_run_patch_kind_must_match():
    with pytest.raises(PolyaxonfileError, match="has `kind: service` but the component runs"):
        apply_run_patch({"kind": "job"}, {"kind": "service", "ports": [1]})
    assert apply_run_patch({"kind": "job"}, {"kind": "job", "connections": ["a"]}) == {
        "kind": "job",
        "connections": ["a"],
    }


def test_run_patch_on_a_dag_patches_its_environment():
    run = {"kind": "dag", "operations": [{"name": "a", "hubRef": "x"}], "concurrency": 2}
    result = apply_run_patch(run, {"environment": {"labels": {"team": "ml"}}, "concurrency": 5})
    assert result == {**run, "environment": {"labels": {"team": "ml"}}, "concurrency": 5}


def test_empty_run_patch_returns_a_copy():
    run = {"kind": "job", "container": {"image": "a"}}
    result = apply_run_patch(run, None)
    assert result == run and result is not run
