"""The generated Kubernetes models reject what a cluster would reject, with precise locations,
and accept what Polyaxon accepts (snake_case keys, templates, its command/env leniency)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from polyaxon_prefect.specs.kubernetes import _k8s, _k8s_objects
from polyaxon_prefect.specs.kubernetes._k8s import (
    Affinity,
    Container,
    HTTPGetAction,
    PodFailurePolicy,
    PodSecurityContext,
    ResourceRequirements,
    Toleration,
    Volume,
)

REALISTIC_CONTAINER: dict[str, Any] = {
    "name": "trainer",
    "image": "polyaxon/polyaxon-examples:pytorch",
    "imagePullPolicy": "IfNotPresent",
    "workingDir": "{{ globals.artifacts_path }}/code",
    "command": ["python", "-u", "train.py"],
    "args": ["--lr={{ lr }}", "--epochs={{ epochs }}"],
    "env": [
        {"name": "PLAIN", "value": "x"},
        {
            "name": "API_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "api", "key": "token", "optional": False}},
        },
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ],
    "envFrom": [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "creds"}}],
    "resources": {
        "requests": {"cpu": "500m", "memory": "4Gi"},
        "limits": {"cpu": 2, "memory": "8Gi", "nvidia.com/gpu": 1},
    },
    "volumeMounts": [
        {"name": "data", "mountPath": "/data", "readOnly": True},
        {"name": "shm", "mountPath": "/dev/shm"},
    ],
    "ports": [{"containerPort": 8888, "name": "http", "protocol": "TCP"}],
    "readinessProbe": {
        "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
    },
    "securityContext": {
        "runAsUser": 1000,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    },
}


def _errors(model: type[BaseModel], data: Any) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return info.value.errors(include_url=False)


def _locs(model: type[BaseModel], data: Any) -> list[tuple[Any, ...]]:
    return [tuple(error["loc"]) for error in _errors(model, data)]


def test_public_names_are_the_documented_roots() -> None:
    assert sorted(_k8s.__all__) == sorted(
        [
            "Container",
            "Volume",
            "Toleration",
            "Affinity",
            "PodSecurityContext",
            "HostAlias",
            "PodDNSConfig",
            "ExecAction",
            "HTTPGetAction",
            "PodFailurePolicy",
            "ResourceRequirements",
        ]
    )
    for name in _k8s.__all__:
        assert issubclass(getattr(_k8s, name), BaseModel)


def test_realistic_container_validates_and_round_trips() -> None:
    container = Container.model_validate(REALISTIC_CONTAINER)
    assert container.env is not None and container.env[1].value_from is not None
    assert container.env[1].value_from.secret_key_ref is not None
    assert container.env[1].value_from.secret_key_ref.key == "token"
    assert container.resources is not None and container.resources.limits is not None
    assert container.resources.limits["nvidia.com/gpu"] == 1
    assert container.readiness_probe is not None
    assert container.readiness_probe.http_get is not None
    assert container.readiness_probe.http_get.port == "http"
    assert container.to_dict() == REALISTIC_CONTAINER


def test_unknown_key_deep_inside_is_located() -> None:
    data = {"image": "x", "env": [{"name": "A", "valueFrm": {"secretKeyRef": {"key": "k"}}}]}
    errors = _errors(Container, data)
    assert [(e["loc"], e["type"]) for e in errors] == [(("env", 0, "valueFrm"), "extra_forbidden")]


def test_unknown_key_in_nested_affinity_is_located() -> None:
    data = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gpu", "operator": "In", "value": ["a100"]}]}
                ]
            }
        }
    }
    assert _locs(Affinity, data) == [
        (
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
            0,
            "matchExpressions",
            0,
            "value",
        )
    ]


def test_wrong_types_are_rejected_at_the_field() -> None:
    errors = _errors(Container, {"image": 5, "ports": [{"containerPort": [80]}]})
    locs = {tuple(error["loc"][:3]) for error in errors}
    assert ("image",) in locs
    assert ("ports", 0, "containerPort") in locs
    assert _locs(Container, {"volumeMounts": {"name": "data"}}) == [("volumeMounts",)]


def test_integer_field_rejects_plain_words_but_accepts_templates() -> None:
    errors = _errors(Container, {"ports": [{"containerPort": "eighty"}]})
    assert {tuple(e["loc"][:3]) for e in errors} == {("ports", 0, "containerPort")}
    container = Container.model_validate(
        {
            "ports": [{"containerPort": "{{ port }}"}],
            "readinessProbe": {"periodSeconds": "{{ period }}", "exec": {"command": ["true"]}},
            "tty": "{{ interactive }}",
        }
    )
    assert container.ports is not None and container.ports[0].container_port == "{{ port }}"
    assert container.readiness_probe is not None
    assert container.readiness_probe.period_seconds == "{{ period }}"
    assert container.tty == "{{ interactive }}"


def test_snake_case_keys_are_accepted_like_the_kubernetes_client() -> None:
    container = Container.model_validate(
        {
            "image_pull_policy": "Always",
            "volume_mounts": [{"name": "data", "mount_path": "/data", "sub_path": "a"}],
            "ports": [{"container_port": 80, "host_ip": "0.0.0.0"}],
            "env_from": [{"config_map_ref": {"name": "cm"}}],
        }
    )
    assert container.to_dict() == {
        "imagePullPolicy": "Always",
        "volumeMounts": [{"name": "data", "mountPath": "/data", "subPath": "a"}],
        "ports": [{"containerPort": 80, "hostIP": "0.0.0.0"}],
        "envFrom": [{"configMapRef": {"name": "cm"}}],
    }
    volume = Volume.model_validate(
        {"name": "data", "persistent_volume_claim": {"claim_name": "pvc", "read_only": True}}
    )
    assert volume.persistent_volume_claim is not None
    assert volume.persistent_volume_claim.claim_name == "pvc"
    context = PodSecurityContext.model_validate({"fs_group": 100, "run_as_user": 1000})
    assert context.to_dict() == {"fsGroup": 100, "runAsUser": 1000}


def test_missing_required_fields_are_reported() -> None:
    assert [(e["loc"], e["type"]) for e in _errors(Volume, {"emptyDir": {}})] == [
        (("name",), "missing")
    ]
    errors = _errors(Container, {"env": [{"value": "x"}]})
    assert [(e["loc"], e["type"]) for e in errors] == [(("env", 0, "name"), "missing")]
    assert _locs(HTTPGetAction, {"path": "/"}) == [("port",)]
    assert _locs(PodFailurePolicy, {"rules": [{"onExitCodes": {"values": [1]}}]}) == [
        ("rules", 0, "action"),
        ("rules", 0, "onExitCodes", "operator"),
    ]


def test_container_name_is_optional_because_polyaxon_names_containers() -> None:
    assert Container.model_validate({"image": "busybox"}).name is None


@pytest.mark.parametrize("quantity", ["500m", "4Gi", "1.5", "1e3", ".5", 2, 0.5, "{{ gpus }}"])
def test_valid_quantities(quantity: Any) -> None:
    resources = ResourceRequirements.model_validate({"limits": {"cpu": quantity}})
    assert resources.limits == {"cpu": quantity}


@pytest.mark.parametrize("quantity", ["2x", "lots", "4 Gi", "", True, [1]])
def test_invalid_quantities_are_located(quantity: Any) -> None:
    errors = _errors(ResourceRequirements, {"limits": {"nvidia.com/gpu": quantity}})
    assert [(e["loc"], e["type"]) for e in errors] == [(("limits", "nvidia.com/gpu"), "quantity")]


def test_command_and_env_follow_polyaxon_leniency() -> None:
    container = Container.model_validate(
        {
            "command": "train --lr=0.1",
            "args": ["--epochs", "10", ""],
            "env": [{"name": "N", "value": 1}, {"name": "FLAG", "value": True}],
        }
    )
    assert container.command == ["train --lr=0.1"]
    assert container.args == ["--epochs", "10"]
    assert container.env is not None
    assert [e.value for e in container.env] == ["1", "true"]
    # a template may render to a whole list, so it is kept for the renderer
    assert Container.model_validate({"args": "{{ params.as_args }}"}).args == (
        "{{ params.as_args }}"
    )
    assert _locs(Container, {"command": {"a": 1}}) != []


@pytest.mark.parametrize(
    ("word", "kind", "hint"),
    [(True, "boolean", "quote it: 'true'"), (None, "null", "quote it: 'null'"), (10, "number", "")],
)
def test_a_yaml_scalar_where_a_command_word_goes_is_refused_at_its_item(
    word: Any, kind: str, hint: str
) -> None:
    """``command: [true]`` would run the command ``True``: YAML read a boolean, not a word."""
    errors = _errors(Container, {"command": ["echo"], "args": ["--flag", word]})
    assert [(e["loc"], e["type"]) for e in errors] == [(("args",), "command_word")]
    assert errors[0]["ctx"]["at"] == 1
    assert f"YAML {kind}" in errors[0]["msg"]
    assert hint in errors[0]["ctx"]["hint"] and "quote it" in errors[0]["ctx"]["hint"]


def test_models_are_frozen() -> None:
    toleration = Toleration.model_validate({"key": "gpu", "operator": "Exists"})
    with pytest.raises(ValidationError, match="frozen"):
        toleration.key = "cpu"  # type: ignore[misc]


def test_field_names_match_the_kubernetes_python_client() -> None:
    models = pytest.importorskip("kubernetes_asyncio.client.models")
    checked = 0
    generated = [(module, name) for module in (_k8s, _k8s_objects) for name in dir(module)]
    for module, name in generated:
        cls = getattr(module, name)
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls.__module__ != (
            module.__name__
        ):
            continue
        client = getattr(models, f"V1{name}", None) or getattr(models, f"CoreV1{name}", None)
        if client is None:
            continue
        theirs = {json: attr.lstrip("_") for attr, json in client.attribute_map.items()}
        ours = {field.alias: attr for attr, field in cls.model_fields.items()}
        # compare the fields both know: the client may be a release older or newer
        for json in ours.keys() & theirs.keys():
            assert ours[json] == theirs[json], f"{name}.{json}"
            checked += 1
    assert checked > 400
