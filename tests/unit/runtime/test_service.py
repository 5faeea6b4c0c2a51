"""A local service's ports, base url and URL (pure parts of `runtime._local_service`)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.runtime import new_run_context
from polyaxon_prefect.runtime._local_service import (
    ServiceContext,
    base_url,
    local_ports,
    service_settings,
    service_url,
)


def test_a_port_in_use_is_replaced_by_a_free_one_with_a_note() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        (port,), notes = local_ports((taken,))
    assert port != taken and notes == [
        f"port {taken} is in use on this machine; the service gets {port}"
    ]


def test_base_url_and_url_follow_polyaxon_and_rewrite_path(tmp_path: Path) -> None:
    context = new_run_context("board", "proj", artifacts_root=tmp_path)
    path = base_url(context)
    assert path == f"/services/v1/local/local/proj/runs/{context.uuid}"
    assert base_url(context, rewrite_path=True).startswith("/rewrite-services/v1/local/")
    assert service_url("127.0.0.1", (6006,), path, rewrite_path=False) == (
        f"http://127.0.0.1:6006{path}/"
    )
    assert service_url("127.0.0.1", (8000,), path, rewrite_path=True) == "http://127.0.0.1:8000/"
    assert service_url("127.0.0.1", (), path, rewrite_path=False) is None
    globals_ = ServiceContext.of(context, (6006,), rewrite_path=False).globals_dict()
    assert globals_["ports"] == [6006] and globals_["base_url"] == path
    assert globals_["uuid"] == context.uuid


def test_a_port_out_of_range_is_located(tmp_path: Path) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(
        "version: 1.1\nkind: component\ninputs: [{name: p, type: int, value: 70000}]\n"
        "run:\n  kind: service\n  ports: '{{ [p] }}'\n  container: {command: [echo]}\n"
    )
    context = new_run_context("svc", "proj", artifacts_root=tmp_path)
    with pytest.raises(PolyaxonfileError) as info:
        service_settings(load_polyaxonfile(path), {}, context)
    [problem] = info.value.problems
    assert problem.rule == "service_port" and problem.path[-2:] == ("ports", 0)
    assert "70000" in problem.message
