"""The small sections: environment, init, termination, cache, plugins, hooks, build, schedules,
events, joins, mount and template."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from polyaxon_prefect._source._located_yaml import parse_yaml
from polyaxon_prefect.specs.params._types_objects import (
    ArtifactsType,
    DockerfileType,
    FileType,
    TensorboardType,
)
from polyaxon_prefect.specs.sections._build import Build
from polyaxon_prefect.specs.sections._cache import Cache
from polyaxon_prefect.specs.sections._environment import Environment
from polyaxon_prefect.specs.sections._events import WIRED_EVENT_KINDS, EventKind, EventTrigger
from polyaxon_prefect.specs.sections._hook_spec import Hook
from polyaxon_prefect.specs.sections._init import Init
from polyaxon_prefect.specs.sections._joins import Join, JoinParam
from polyaxon_prefect.specs.sections._mount import Mount, Template
from polyaxon_prefect.specs.sections._plugins import Plugins
from polyaxon_prefect.specs.sections._schedules import (
    CronSchedule,
    DateTimeSchedule,
    IntervalSchedule,
    Schedule,
)
from polyaxon_prefect.specs.sections._termination import Termination

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
SCHEDULE = TypeAdapter(Schedule)


def _load(name: str) -> Any:
    return parse_yaml((CORPUS / name).read_text(), file=name).data


def _walk(data: Any, key: str) -> list[Any]:
    """Every value stored under ``key`` anywhere in ``data``."""
    found = []
    if isinstance(data, dict):
        for k, v in data.items():
            if k == key:
                found.append(v)
            found.extend(_walk(v, key))
    elif isinstance(data, list):
        for item in data:
            found.extend(_walk(item, key))
    return found


def _modern_corpus() -> list[Any]:
    files = []
    for path in sorted(CORPUS.glob("*.y*ml")):
        data = _load(path.name)
        if isinstance(data, dict) and data.get("kind") not in ("experiment", "group"):
            files.append(pytest.param(data, id=path.stem[-40:]))
    return files


# --- corpus ----------------------------------------------------------------------------------


@pytest.mark.parametrize("data", _modern_corpus())
def test_corpus_sections_validate(data: Any) -> None:
    models = {
        "termination": Termination,
        "plugins": Plugins,
        "cache": Cache,
        "environment": Environment,
        "init": Init,
        "schedule": None,
        "events": EventTrigger,
        "joins": Join,
        "hooks": Hook,
    }
    for key, model in models.items():
        for value in _walk(data, key):
            items = value if isinstance(value, list) else [value]
            for item in items:
                if model is None:
                    SCHEDULE.validate_python(item)
                else:
                    model.model_validate(item)


def test_termination_preset_file() -> None:
    data = _load("polyaxon-quick-start__scheduling__helpers__termination.yaml")
    assert Termination.model_validate(data["termination"]).ttl == 160


def test_scheduling_preset_environment() -> None:
    data = _load("polyaxon-quick-start__scheduling__helpers__scheduling-preset.yaml")
    env = Environment.model_validate(data["runPatch"]["environment"])
    assert env.node_selector == {"polyaxon": "compute"}


def test_cron_pipeline_schedule() -> None:
    data = _load("cli__cli__tests__fixtures__pipelines__simple_cron_pipeline.yml")
    schedule = SCHEDULE.validate_python(data["schedule"])
    assert isinstance(schedule, CronSchedule)
    assert schedule.cron == "0 0 * * *"


def test_event_based_tensorboard_events() -> None:
    data = _load("polyaxon-quick-start__scheduling__dags__event_based_tensorboard.yaml")
    event = EventTrigger.model_validate(data["run"]["operations"][1]["events"][0])
    assert event.entity == "ops"
    assert event.entity_ref == "experiment"
    assert event.statuses == ("running",)


def test_map_reduce_join() -> None:
    data = _load("polyaxon-quick-start__scheduling__joins__map_reduce_tune_join.yaml")
    join = Join.model_validate(data["run"]["operations"][2]["joins"][0])
    assert join.limit == "{{ top }}"
    assert join.sort == "-metrics.accuracy"
    assert join.params["uuids"] == JoinParam(value="globals.uuid", context_only=True)


# --- environment -----------------------------------------------------------------------------


def test_environment_types() -> None:
    env = Environment.model_validate(
        {
            "nodeSelector": {"a": "b"},
            "imagePullSecrets": ["s1"],
            "priority": "{{ prio }}",
            "host_network": True,
        }
    )
    assert env.priority == "{{ prio }}"
    assert env.host_network is True
    with pytest.raises(ValidationError, match=r"imagePullSecrets|image_pull_secrets"):
        Environment.model_validate({"imagePullSecrets": [{"name": "s1"}]})
    with pytest.raises(ValidationError, match=r"Extra inputs"):
        Environment.model_validate({"resources": {}})


# --- init and IO types -----------------------------------------------------------------------


def test_init_one_source_only() -> None:
    with pytest.raises(ValidationError, match=r"only one of .*got git, dockerfile") as info:
        Init.model_validate({"git": {"url": "u"}, "dockerfile": {"image": "python"}})
    assert info.value.errors()[0]["type"] == "init_one_source"
    assert "hint" in info.value.errors()[0]["ctx"]


def test_init_git_without_url_needs_connection() -> None:
    with pytest.raises(ValidationError, match=r"needs a `connection`"):
        Init.model_validate({"git": {"revision": "main"}})
    init = Init.model_validate({"git": {"revision": "main"}, "connection": "repo"})
    assert init.source == "git"


def test_init_sources() -> None:
    assert Init.model_validate({"paths": ["a", ["b", "/c"]]}).source == "paths"
    assert Init.model_validate({"modelRef": "m:v1"}).source == "model_ref"
    assert Init.model_validate({"connection": "c"}).source is None
    with pytest.raises(ValidationError, match=r"\[source, destination\]"):
        Init.model_validate({"paths": [["a", "b", "c"]]})


def test_init_custom_container() -> None:
    init = Init.model_validate({"container": {"name": "x", "image": "busybox"}})
    assert init.container is not None


def test_dockerfile_type() -> None:
    value = DockerfileType.model_validate(
        {"image": "python:3", "copy": ["a", ["b", "/c"]], "postRunCopy": ["d"], "run": ["pip"]}
    )
    assert value.copy_ == ["a", ["b", "/c"]]
    assert value.to_dict()["copy"] == ["a", ["b", "/c"]]
    with pytest.raises(ValidationError, match=r"Field required"):
        DockerfileType.model_validate({"env": {}})


def test_file_and_artifacts_and_tensorboard_types() -> None:
    with pytest.raises(ValidationError, match=r"content"):
        FileType.model_validate({"filename": "x.sh"})
    assert ArtifactsType.model_validate({"files": ["a", ["b", "c"]], "workers": 2}).workers == 2
    board = TensorboardType.model_validate({"uuids": "a1, b2", "plugins": "p", "port": 6006})
    assert board.uuids == ["a1", "b2"]
    assert TensorboardType.model_validate({"uuids": "{{ uuids }}"}).uuids == "{{ uuids }}"


# --- termination, cache ----------------------------------------------------------------------


def test_termination_non_negative() -> None:
    term = Termination.model_validate({"maxRetries": 2, "timeout": "{{ t }}", "culling": {}})
    assert term.max_retries == 2
    with pytest.raises(ValidationError, match=r"must be 0 or more, got -1") as info:
        Termination.model_validate({"ttl": -1})
    assert info.value.errors()[0]["loc"] == ("ttl",)
    with pytest.raises(ValidationError, match=r"must be an integer"):
        Termination.model_validate({"maxRetries": "lots"})


def test_termination_probe_one_kind() -> None:
    probe = {"exec": {"command": ["true"]}, "http": {"path": "/", "port": 8888}}
    with pytest.raises(ValidationError, match=r"either `exec` or `http`"):
        Termination.model_validate({"probe": probe})
    assert Termination.model_validate({"probe": {"http": {"port": 8888}}}).probe.http


def test_cache() -> None:
    cache = Cache.model_validate({"disable": False, "ttl": 60, "io": "a, b", "sections": ["init"]})
    assert cache.io == ["a", "b"]
    with pytest.raises(ValidationError, match=r"'containers', 'init' or 'connections'"):
        Cache.model_validate({"sections": ["volumes"]})


# --- plugins, hooks, build -------------------------------------------------------------------


def test_plugins() -> None:
    plugins = Plugins.model_validate(
        {
            "collectLogs": False,
            "logLevel": "INFO",
            "sidecar": {"syncInterval": 60},
            "notifications": [{"connections": ["slack"], "trigger": "failed"}],
        }
    )
    assert plugins.enabled("collect_logs") is False
    assert plugins.enabled("shm") is True
    assert plugins.sidecar.sync_interval == 60
    with pytest.raises(ValidationError, match=r"connections"):
        Plugins.model_validate({"notifications": [{"trigger": "failed"}]})
    with pytest.raises(ValidationError, match=r"Extra inputs"):
        Plugins.model_validate({"sidecar": {"syncIntervall": 60}})


def test_hook_trigger_values() -> None:
    assert Hook.model_validate({"hubRef": "slack", "trigger": "upstream_failed"}).trigger
    with pytest.raises(ValidationError, match=r"'failed', 'stopped', 'succeeded'"):
        Hook.model_validate({"hubRef": "slack", "trigger": "running"})
    with pytest.raises(ValidationError, match=r"hubRef|hub_ref"):
        Hook.model_validate({"trigger": "done"})


def test_build() -> None:
    build = Build.model_validate(
        {
            "hubRef": "kaniko",
            "presets": "a,b",
            "params": {"context": {"value": "x"}},
            "runPatch": {"container": {"image": "x"}},
            "patchStrategy": "pre_merge",
            "cache": {"disable": True},
        }
    )
    assert build.presets == ["a", "b"]
    with pytest.raises(ValidationError, match=r"'replace', 'isnull', 'post_merge' or 'pre_merge'"):
        Build.model_validate({"hubRef": "kaniko", "patchStrategy": "merge"})


# --- schedules -------------------------------------------------------------------------------


def test_schedule_kinds() -> None:
    assert isinstance(SCHEDULE.validate_python({"kind": "cron", "cron": "@daily"}), CronSchedule)
    interval = SCHEDULE.validate_python({"kind": "interval", "frequency": 120, "maxRuns": 3})
    assert isinstance(interval, IntervalSchedule)
    assert interval.seconds == 120
    assert SCHEDULE.validate_python({"kind": "interval", "frequency": "PT1H"}).frequency == (
        timedelta(hours=1)
    )
    once = SCHEDULE.validate_python({"kind": "datetime", "startAt": "2024-01-02T03:04:05+00:00"})
    assert isinstance(once, DateTimeSchedule)
    assert once.start_at == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_schedule_kind_is_required() -> None:
    with pytest.raises(ValidationError, match=r"Unable to extract tag"):
        SCHEDULE.validate_python({"cron": "0 0 * * *"})


@pytest.mark.parametrize("cron", ["0 0 * *", "* * * * * * *", "daily"])
def test_cron_field_count(cron: str) -> None:
    with pytest.raises(ValidationError, match=r"5 fields .* or 6 with seconds") as info:
        SCHEDULE.validate_python({"kind": "cron", "cron": cron})
    assert info.value.errors()[0]["loc"] == ("cron", "cron")


def test_cron_accepts_six_fields_and_templates() -> None:
    assert CronSchedule.model_validate({"cron": "0 0 0 * * MON"}).cron == "0 0 0 * * MON"
    assert CronSchedule.model_validate({"cron": "{{ when }}"}).cron == "{{ when }}"


def test_schedule_window_and_frequency() -> None:
    with pytest.raises(ValidationError, match=r"endAt .* must be after startAt"):
        CronSchedule.model_validate(
            {"cron": "* * * * *", "startAt": "2024-02-01T00:00:00", "endAt": "2024-01-01T00:00:00"}
        )
    with pytest.raises(ValidationError, match=r"must be positive"):
        IntervalSchedule.model_validate({"frequency": 0})
    with pytest.raises(ValidationError, match=r"Field required"):
        DateTimeSchedule.model_validate({})
    with pytest.raises(ValidationError, match=r"Extra inputs"):
        DateTimeSchedule.model_validate({"startAt": "2024-01-01T00:00:00", "maxRuns": 2})


# --- events ----------------------------------------------------------------------------------


def test_event_kinds() -> None:
    assert len(EventKind) == 32
    assert len(WIRED_EVENT_KINDS) == 20
    assert EventKind.RUN_STATUS_UPSTREAM_FAILED.status == "upstream_failed"
    assert EventKind.ALERT_INFO.status is None


def test_unwired_event_kind_is_rejected() -> None:
    with pytest.raises(
        ValidationError, match=r"'run_new_artifacts' is declared .* not wired"
    ) as info:
        EventTrigger.model_validate({"ref": "ops.a", "kinds": ["run_new_artifacts"]})
    assert info.value.errors()[0]["type"] == "event_kind_not_wired"


def test_unknown_event_kind_and_bad_refs() -> None:
    with pytest.raises(ValidationError, match=r"run_status_created"):
        EventTrigger.model_validate({"ref": "ops.a", "kinds": ["run_status_begun"]})
    for ref in ("a", "ops.", "runs.not-a-uuid", "dag"):
        with pytest.raises(ValidationError, match=re.escape("`ops.<op name>` or `runs.<uuid>`")):
            EventTrigger.model_validate({"ref": ref, "kinds": ["run_status_done"]})
    event = EventTrigger.model_validate(
        {"ref": "runs.d1410a914d18457589b91926d8c23db4", "kinds": ["run_status_done"]}
    )
    assert event.entity == "runs"
    with pytest.raises(ValidationError, match=r"at least one kind"):
        EventTrigger.model_validate({"ref": "ops.a", "kinds": []})


# --- joins -----------------------------------------------------------------------------------


def test_join_params_full_and_short_form() -> None:
    join = Join.model_validate(
        {
            "query": "metrics.loss: <0.01",
            "limit": 5,
            "params": {
                "losses": "outputs.loss",
                "files": {"value": {"files": ["a"]}, "toInit": True},
                "empty": {},
            },
        }
    )
    assert join.params["losses"].value == "outputs.loss"
    assert join.params["files"].to_init is True
    assert join.params["empty"].value is None


def test_join_rules() -> None:
    with pytest.raises(ValidationError, match=r"query"):
        Join.model_validate({"sort": "-x"})
    with pytest.raises(ValidationError, match=r"cannot set `ref`") as info:
        Join.model_validate({"query": "q", "params": {"x": {"ref": "ops.a", "value": "outputs.y"}}})
    assert info.value.errors()[0]["loc"] == ("params", "x")
    with pytest.raises(ValidationError, match=r"must be 0 or more"):
        Join.model_validate({"query": "q", "offset": -1})


# --- mount, template -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "source", "target"),
    [
        ("./src:/workspace/src", "./src", "/workspace/src"),
        ("./config.yaml", "./config.yaml", "./config.yaml"),
        ({"from": "a", "to": "/b"}, "a", "/b"),
        ({"pathFrom": "a", "pathTo": "/b"}, "a", "/b"),
    ],
)
def test_mount_forms(value: Any, source: str, target: str) -> None:
    mount = Mount.model_validate(value)
    assert (mount.path_from, mount.destination) == (source, target)


def test_mount_errors_and_dump() -> None:
    with pytest.raises(ValidationError, match=r"host_path\[:container_path\]"):
        Mount.model_validate("a:")
    with pytest.raises(ValidationError, match=r"Extra inputs"):
        Mount.model_validate({"from": "a", "dest": "b"})
    assert Mount.model_validate("a:/b").to_dict() == {"from": "a", "to": "/b"}


def test_template() -> None:
    template = Template.model_validate({"enabled": True, "fields": "a.b, c"})
    assert template.fields == ["a.b", "c"]
    with pytest.raises(ValidationError):
        Template.model_validate({"enabled": "maybe"})
