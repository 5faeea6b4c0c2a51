"""Component references: pathRef, urlRef, hubRef, dagRef (urlRef over a real loopback HTTP
server: tests/process/loading/test_refs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._refs import (
    BUILTIN_HUB,
    HUB_ENV_VAR,
    hub_dirs_from_env,
    ignored_references,
    parse_hub_ref,
    resolve_reference,
)

COMPONENT = """\
version: 1.1
kind: component
name: trainer
inputs:
- {name: lr, type: float, value: 0.1, isOptional: true}
run:
  kind: job
  container:
    image: python:3.11
"""


def problem(exc: pytest.ExceptionInfo[PolyaxonfileError]):
    assert len(exc.value.problems) == 1
    return exc.value.problems[0]


# --- pathRef ------------------------------------------------------------------------------------


def test_path_ref_is_relative_to_the_referencing_file(tmp_path):
    (tmp_path / "components").mkdir()
    target = tmp_path / "components" / "train.yaml"
    target.write_text(COMPONENT)
    source = resolve_reference({"pathRef": "components/train.yaml"}, base_dir=tmp_path)
    assert source is not None
    assert source.data["name"] == "trainer"
    assert source.file == str(target)
    assert source.positions.file == str(target)
    assert source.positions.find(("run", "container", "image")) == (9, 5)


def test_path_ref_missing_names_the_resolved_path_and_the_referencing_file(tmp_path):
    with pytest.raises(PolyaxonfileError) as info:
        resolve_reference({"pathRef": "nope.yaml"}, base_dir=tmp_path, file="ops/op.yaml")
    p = problem(info)
    assert p.path == ("pathRef",)
    assert p.file == "ops/op.yaml"
    assert str(tmp_path / "nope.yaml") in p.message
    assert "referenced from `ops/op.yaml`" in p.message
    assert "relative to the directory" in p.hint


def test_path_ref_to_a_directory(tmp_path):
    with pytest.raises(PolyaxonfileError, match="which is a directory"):
        resolve_reference({"pathRef": "."}, base_dir=tmp_path)


def test_path_ref_yaml_errors_point_into_the_referenced_file(tmp_path):
    (tmp_path / "bad.yaml").write_text("kind: component\nrun: [unclosed\n")
    with pytest.raises(PolyaxonfileError, match="not valid YAML") as info:
        resolve_reference({"pathRef": "bad.yaml"}, base_dir=tmp_path)
    assert problem(info).file == str(tmp_path / "bad.yaml")


def test_path_ref_to_something_that_is_not_a_component(tmp_path):
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    (tmp_path / "op.yaml").write_text("version: 1.1\nkind: operation\nhubRef: x\n")
    with pytest.raises(PolyaxonfileError, match="expected a YAML mapping, got list"):
        resolve_reference({"pathRef": "list.yaml"}, base_dir=tmp_path)
    with pytest.raises(PolyaxonfileError, match="has `kind: operation`"):
        resolve_reference({"pathRef": "op.yaml"}, base_dir=tmp_path)


def test_path_ref_binary_file(tmp_path):
    (tmp_path / "blob.yaml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(PolyaxonfileError, match="not a UTF-8 text file"):
        resolve_reference({"pathRef": "blob.yaml"}, base_dir=tmp_path)


# --- general ------------------------------------------------------------------------------------


def test_no_reference_returns_none(tmp_path):
    assert resolve_reference({"component": {"run": {"kind": "job"}}}, base_dir=tmp_path) is None
    assert resolve_reference({}, base_dir=tmp_path) is None


def test_two_references_are_an_error(tmp_path):
    with pytest.raises(PolyaxonfileError, match="exactly one component reference") as info:
        resolve_reference({"hubRef": "kaniko", "pathRef": "x.yaml"}, base_dir=tmp_path)
    assert problem(info).rule == "one_reference"


def test_an_inline_component_wins_over_a_reference(tmp_path):
    # Polyaxon keeps both in stored operations; the inline one is used, the ref is not fetched.
    op = {"hubRef": "no-such-component", "pathRef": "missing.yaml", "component": {}}
    assert resolve_reference(op, base_dir=tmp_path) is None
    assert ignored_references(op) == ["hubRef", "pathRef"]
    assert ignored_references({"hubRef": "kaniko"}) == []


def test_a_reference_must_be_a_string(tmp_path):
    with pytest.raises(PolyaxonfileError, match="pathRef must be a non-empty string"):
        resolve_reference({"pathRef": 3}, base_dir=tmp_path)


def test_at_prefixes_the_problem_path(tmp_path):
    with pytest.raises(PolyaxonfileError) as info:
        resolve_reference({"pathRef": "x.yaml"}, base_dir=tmp_path, at=("run", "operations", 1))
    assert problem(info).path == ("run", "operations", 1, "pathRef")


# --- urlRef -------------------------------------------------------------------------------------


def test_url_ref_unreachable_host(tmp_path):
    with pytest.raises(PolyaxonfileError, match=r"cannot reach `127\.0\.0\.1:9`"):
        resolve_reference({"urlRef": "http://127.0.0.1:9/c.yaml"}, base_dir=tmp_path)


def test_url_ref_file_scheme(tmp_path):
    target = tmp_path / "c.yaml"
    target.write_text(COMPONENT)
    source = resolve_reference({"urlRef": target.as_uri()}, base_dir=tmp_path)
    assert source.data["name"] == "trainer"
    with pytest.raises(PolyaxonfileError, match="could not be fetched"):
        resolve_reference({"urlRef": (tmp_path / "none.yaml").as_uri()}, base_dir=tmp_path)


def test_url_ref_not_yaml(tmp_path):
    target = tmp_path / "c.yaml"
    target.write_text("run: {kind: job\n")
    with pytest.raises(PolyaxonfileError, match="not valid YAML") as info:
        resolve_reference({"urlRef": target.as_uri()}, base_dir=tmp_path)
    assert problem(info).file == target.as_uri()


def test_url_ref_unsupported_scheme(tmp_path):
    with pytest.raises(PolyaxonfileError, match="unsupported scheme `ftp`"):
        resolve_reference({"urlRef": "ftp://example.com/c.yaml"}, base_dir=tmp_path)


# --- hubRef -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "parts"),
    [
        ("kaniko", (None, "kaniko", None)),
        ("kaniko:v1", (None, "kaniko", "v1")),
        ("acme/trainer:1.0", ("acme", "trainer", "1.0")),
    ],
)
def test_parse_hub_ref(ref, parts):
    assert parse_hub_ref(ref) == parts


@pytest.mark.parametrize("ref", ["../etc/passwd", "a/b/c", "x:", ":tag", "..", "a b"])
def test_bad_hub_refs(ref, tmp_path):
    with pytest.raises(ValueError, match="not of the form"):
        parse_hub_ref(ref)
    with pytest.raises(PolyaxonfileError, match="not of the form") as info:
        resolve_reference({"hubRef": ref}, base_dir=tmp_path)
    assert problem(info).path == ("hubRef",)


def test_builtin_hub_components(tmp_path):
    kaniko = resolve_reference({"hubRef": "kaniko"}, base_dir=tmp_path)
    assert kaniko.file == str(BUILTIN_HUB / "kaniko.yaml")
    assert kaniko.data["run"]["kind"] == "job"
    assert kaniko.data["run"]["container"]["image"].startswith("gcr.io/kaniko-project/executor")
    # as Polyaxon's hub defines it: the image pushed is an output that later ops read
    assert {io["name"] for io in kaniko.data["inputs"]} == {"context", "cache", "cache_ttl"}
    assert kaniko.data["outputs"] == [{"name": "destination", "type": "image"}]

    tensorboard = resolve_reference({"hubRef": "tensorboard:latest"}, base_dir=tmp_path)
    assert tensorboard.data["run"]["kind"] == "service"
    assert tensorboard.data["run"]["ports"] == [6006]
    assert [io["name"] for io in tensorboard.data["inputs"]] == ["image", "uuid", "path"]


def test_hub_lookup_layouts_and_order(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "trainer").mkdir(parents=True)
    second.mkdir()
    (first / "trainer" / "v2.yaml").write_text(COMPONENT.replace("trainer", "nested-v2"))
    (second / "trainer-v2.yml").write_text(COMPONENT.replace("trainer", "dashed-v2"))
    (second / "kaniko.yaml").write_text(COMPONENT.replace("trainer", "my-kaniko"))
    monkeypatch.setenv(HUB_ENV_VAR, str(second))

    by_arg = resolve_reference({"hubRef": "trainer:v2"}, base_dir=tmp_path, hub_dirs=[first])
    assert by_arg.data["name"] == "nested-v2"
    by_env = resolve_reference({"hubRef": "trainer:v2"}, base_dir=tmp_path)
    assert by_env.data["name"] == "dashed-v2"
    # the env var comes before the built-in hub, so it can override built-in components
    assert resolve_reference({"hubRef": "kaniko"}, base_dir=tmp_path).data["name"] == "my-kaniko"


def test_hub_owner_directory(tmp_path):
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "trainer.yaml").write_text(COMPONENT)
    (tmp_path / "trainer.yaml").write_text(COMPONENT.replace("trainer", "plain"))
    source = resolve_reference({"hubRef": "acme/trainer"}, base_dir=tmp_path, hub_dirs=[tmp_path])
    assert source.data["name"] == "trainer"
    source = resolve_reference({"hubRef": "other/trainer"}, base_dir=tmp_path, hub_dirs=[tmp_path])
    assert source.data["name"] == "plain"


def test_hub_dirs_from_env():
    import os

    value = os.pathsep.join(["/a", "", "/b"])
    assert hub_dirs_from_env({HUB_ENV_VAR: value}) == [Path("/a"), Path("/b")]
    assert hub_dirs_from_env({}) == []


def test_unknown_hub_ref_lists_where_it_looked_and_suggests(tmp_path, monkeypatch):
    monkeypatch.delenv(HUB_ENV_VAR, raising=False)
    with pytest.raises(PolyaxonfileError) as info:
        resolve_reference({"hubRef": "kanico"}, base_dir=tmp_path, hub_dirs=[tmp_path])
    p = problem(info)
    assert p.path == ("hubRef",)
    assert f"`{tmp_path}`" in p.message and f"`{BUILTIN_HUB}`" in p.message
    assert "available: discord, kaniko, mattermost, slack, tensorboard, webhook" in p.message
    assert p.hint == "did you mean `kaniko`?"


def test_unknown_hub_ref_without_close_match(tmp_path, monkeypatch):
    monkeypatch.delenv(HUB_ENV_VAR, raising=False)
    with pytest.raises(PolyaxonfileError, match="not found in any hub directory") as info:
        resolve_reference({"hubRef": "zzzz"}, base_dir=tmp_path)
    assert HUB_ENV_VAR in problem(info).hint


# --- dagRef -------------------------------------------------------------------------------------


def test_dag_ref(tmp_path):
    components = {"train": {"name": "train", "run": {"kind": "job"}}}
    source = resolve_reference({"dagRef": "train"}, base_dir=tmp_path, dag_components=components)
    assert source.data == components["train"]
    assert source.positions is None
    source.data["run"]["kind"] = "changed"
    assert components["train"]["run"]["kind"] == "job"


def test_dag_ref_unknown_suggests(tmp_path):
    components = {"train": {}, "evaluate": {}}
    with pytest.raises(PolyaxonfileError, match="requires a component named `trian`") as info:
        resolve_reference(
            {"name": "a", "dagRef": "trian"}, base_dir=tmp_path, dag_components=components
        )
    p = problem(info)
    assert "op `a`" in p.message and "defined: evaluate, train" in p.message
    assert p.hint == "did you mean `train`?"
    assert p.path == ("dagRef",)


def test_dag_ref_outside_a_dag(tmp_path):
    with pytest.raises(PolyaxonfileError, match="only be used by an operation inside a DAG"):
        resolve_reference({"dagRef": "train"}, base_dir=tmp_path)
