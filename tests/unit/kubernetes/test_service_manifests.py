"""``kind: service`` as Kubernetes manifests (Deployment + ClusterIP Service), and connection
kinds that cannot be honoured in a pod: located problems before anything is created."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.cli import main
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.kubernetes import build_manifests, port_forward_command
from polyaxon_prefect.kubernetes._connection_kinds import connection_problems
from polyaxon_prefect.loading import load_polyaxonfile
from tests.process.kubernetes.service_cluster import api_server_rules

SERVICE = (
    "version: 1.1\nkind: component\nname: notebook\n"
    "run:\n  kind: service\n  ports: [8888, 6006]\n{extra}"
    "  container:\n    image: jupyter/base-notebook\n    command: [jupyter, lab]\n"
)


def _file(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "svc.yaml"
    path.write_text(SERVICE.format(extra=extra))
    return path


def test_a_service_is_a_deployment_and_a_cluster_ip_service(
    tmp_path: Path, validate: Callable[[dict[str, Any]], None]
) -> None:
    deployment, service = build_manifests(
        load_polyaxonfile(_file(tmp_path, "  replicas: 2\n")), namespace="ml"
    )
    for manifest in (deployment, service):
        validate(manifest)
        assert api_server_rules(manifest) == []
    assert (deployment["apiVersion"], deployment["kind"]) == ("apps/v1", "Deployment")
    assert deployment["spec"]["replicas"] == 2
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    pod = deployment["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Always"
    assert [p["containerPort"] for p in pod["containers"][0]["ports"]] == [8888, 6006]
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert [p["port"] for p in service["spec"]["ports"]] == [8888, 6006]


def test_one_replica_by_default_and_no_service_without_ports(tmp_path: Path) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: worker\nrun:\n  kind: service\n"
        "  container: {image: busybox, command: [sleep, infinity]}\n"
    )
    [deployment] = build_manifests(load_polyaxonfile(path))
    assert deployment["spec"]["replicas"] == 1


def test_the_port_forward_line() -> None:
    assert port_forward_command("ml", "board", [6006, 8888]) == (
        "kubectl port-forward -n ml svc/board 6006:6006 8888:8888"
    )


def test_compile_prints_both_manifests_and_refuses_a_service_without_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    assert main(["compile", "-f", str(_file(tmp_path)), "--target", "kubernetes"]) == 0
    kinds = [doc["kind"] for doc in yaml.safe_load_all(capsys.readouterr().out)]
    assert kinds == ["Deployment", "Service"]
    path = tmp_path / "no-image.yaml"
    path.write_text(_file(tmp_path).read_text().replace("    image: jupyter/base-notebook\n", ""))
    assert main(["compile", "-f", str(path), "--target", "kubernetes"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:" in err and "has no `image`" in err


@pytest.mark.parametrize(
    ("conn", "rule", "says"),
    [
        (
            {"kind": "volume_claim", "schema": {"mountPath": "/d"}},
            "k8s_connection_unusable",
            "volumeClaim",
        ),
        (
            {"kind": "host_path", "schema": {"hostPath": "/d"}},
            "k8s_connection_unusable",
            "mountPath",
        ),
        ({"kind": "s3", "schema": {}}, "k8s_connection_unusable", "schema.bucket"),
        ({"kind": "gcs", "schema": {"bucket": "s3://x"}}, "k8s_connection_bucket", "not a gcs URL"),
        ({"kind": "git", "schema": {}}, "k8s_connection_unusable", "schema.url"),
        ({"kind": "registry", "schema": {}}, "k8s_connection_unusable", "schema.url"),
        ({"schema": {"bucket": "s3://x"}}, "k8s_connection_kind", "no `kind`"),
        (
            {"kind": "s3", "schema": {"bucket": "s3://x"}, "secret": {}},
            "k8s_connection_resource",
            "secret",
        ),
    ],
)
def test_a_connection_that_cannot_be_honoured_is_a_problem(
    conn: dict[str, Any], rule: str, says: str
) -> None:
    [problem] = connection_problems("data", conn, ("component", "run", "connections", 0))
    assert problem.rule == rule and says in problem.message and problem.hint


@pytest.mark.parametrize(
    "conn",
    [
        {"kind": "volume_claim", "schema": {"volumeClaim": "c", "mountPath": "/d"}},
        {"kind": "host_path", "schema": {"hostPath": "/h", "mountPath": "/d"}},
        {"kind": "s3", "schema": {"bucket": "s3://x"}, "secret": {"name": "aws"}},
        {"kind": "wasb", "schema": {"bucket": "wasbs://c@a.blob.core.windows.net"}},
        {"kind": "git", "schema": {"url": "https://github.com/o/r"}, "secret": {"name": "tok"}},
        {"kind": "registry", "schema": {"url": "ghcr.io/o"}, "secret": {"name": "pull"}},
        {"kind": "custom", "configMap": {"name": "settings"}},
    ],
)
def test_connections_polyaxon_describes_are_honoured(conn: dict[str, Any]) -> None:
    assert connection_problems("data", conn, ("component", "run", "connections", 0)) == []


def test_an_unusable_connection_is_located_in_the_file_before_anything_is_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "  connections: [data]\n")
    with pytest.raises(PolyaxonfileError) as info:
        build_manifests(load_polyaxonfile(path), connections={"data": {"kind": "s3", "schema": {}}})
    [problem] = info.value.problems
    assert problem.path == ("component", "run", "connections", 0)
    assert problem.rule == "k8s_connection_unusable"
    conns = tmp_path / "connections.yaml"
    conns.write_text("- {name: data, kind: s3, schema: {}}\n")
    argv = ["compile", "-f", str(path), "--target", "kubernetes", "--connections", str(conns)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{path}:7:" in err and "component.run.connections[0]" in err
    assert "cannot be honoured on Kubernetes without `schema.bucket`" in err
