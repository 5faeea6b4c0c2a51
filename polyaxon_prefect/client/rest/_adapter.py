"""What the thin client needs of Prefect's REST API, checked against the server's
``/openapi.json`` (tests/prefect/test_thin_client.py reads a live server's): a route, a body
field, a model field or a sort order that moves is one line naming it, not a silent misread."""

from __future__ import annotations

from typing import Any

__all__ = ["REQUIRED", "missing"]

REQUIRED: dict[str, Any] = {
    "routes": {
        ("post", "/flow_runs/filter"): ("flow_runs", "sort", "limit", "offset"),
        ("post", "/flow_runs/count"): ("flow_runs",),
        ("post", "/artifacts/filter"): ("artifacts", "sort", "limit", "offset"),
        ("post", "/task_runs/filter"): ("flow_runs", "task_runs", "sort", "limit"),
        ("get", "/flow_runs/{id}"): (),
        ("get", "/task_runs/{id}"): (),
        ("post", "/logs/filter"): ("logs", "sort", "limit", "offset"),
        ("post", "/flow_runs/{id}/set_state"): ("state", "force"),
        ("get", "/health"): (),
    },
    "fields": {
        "FlowRun": (
            "id",
            "name",
            "labels",
            "state",
            "start_time",
            "end_time",
            "total_run_time",
            "tags",
            "parameters",
            "parent_task_run_id",
        ),
        "TaskRun": ("id", "name", "state", "flow_run_id"),
        "Log": ("id", "flow_run_id", "task_run_id", "message", "timestamp", "level"),
        "LogFilter": ("flow_run_id", "timestamp"),
        "TaskRunFilter": ("id",),
        "StateCreate": ("type", "name", "message", "state_details"),
        "StateDetails": ("flow_run_id", "transition_id"),
        "OrchestrationResult": ("state", "status", "details"),
        "State": ("type", "name", "message"),
        "Artifact": ("key", "type", "data", "description", "flow_run_id", "task_run_id"),
        "FlowRunFilter": ("id", "name", "state", "parent_task_run_id", "parent_flow_run_id"),
        "ArtifactFilter": ("flow_run_id", "type"),
    },
    "enums": {
        "FlowRunSort": ("START_TIME_DESC", "EXPECTED_START_TIME_DESC", "ID_DESC"),
        "LogSort": ("TIMESTAMP_ASC",),
        "SetStateStatus": ("ACCEPT", "REJECT", "ABORT"),
        "TaskRunSort": ("EXPECTED_START_TIME_ASC",),
        "ArtifactSort": ("CREATED_DESC",),
        "StateType": (
            "SCHEDULED",
            "PENDING",
            "RUNNING",
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "CRASHED",
            "PAUSED",
            "CANCELLING",
        ),
    },
}
"""The routes (with the body fields sent), model fields read and enum values sent or read."""


def _schema(openapi: dict[str, Any], ref: str) -> dict[str, Any]:
    found: dict[str, Any] = openapi.get("components", {}).get("schemas", {}).get(ref) or {}
    return found


def _body_fields(openapi: dict[str, Any], operation: dict[str, Any]) -> set[str]:
    content = (operation.get("requestBody") or {}).get("content") or {}
    schema = (content.get("application/json") or {}).get("schema") or {}
    ref = schema.get("$ref", "")
    if ref:
        schema = _schema(openapi, ref.rsplit("/", 1)[-1])
    return set(schema.get("properties") or {})


def missing(openapi: dict[str, Any]) -> list[str]:
    """Each route, field or value of `REQUIRED` the API described by ``openapi`` lacks."""
    problems: list[str] = []
    paths = openapi.get("paths") or {}
    for (method, path), body in REQUIRED["routes"].items():
        operation = (paths.get(path) or paths.get(f"/api{path}") or {}).get(method)
        if operation is None:
            problems.append(f"route {method.upper()} {path} is gone")
            continue
        have = _body_fields(openapi, operation)
        problems += [f"{method.upper()} {path} takes no `{f}`" for f in body if f not in have]
    for model, fields in REQUIRED["fields"].items():
        have = set(_schema(openapi, model).get("properties") or {})
        problems += [f"model {model} has no field `{f}`" for f in fields if f not in have]
    for enum, values in REQUIRED["enums"].items():
        have = set(_schema(openapi, enum).get("enum") or [])
        problems += [f"{enum} has no value {v}" for v in values if v not in have]
    return problems
