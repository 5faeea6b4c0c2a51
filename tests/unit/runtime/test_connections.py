"""Connections file loading and what a connection gives a local process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyaxon_prefect.runtime import (
    ConnectionsError,
    UnknownConnectionError,
    connection_env,
    get_connection,
    load_connections,
)
from polyaxon_prefect.runtime.render._connections import ENV_CONNECTIONS

FILE = """\
artifactsStore:
  name: store
  kind: host_path
  schema: {hostPath: /data/artifacts, mountPath: /plx-artifacts}
connections:
  - name: training-data
    kind: volume_claim
    description: "radio images"
    tags: data, images
    schema: {volumeClaim: data-pvc, mountPath: /data}
  - name: my-s3
    kind: s3
    schema: {bucket: "s3://my-bucket"}
    secret: {name: aws-creds, items: [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY]}
    env:
      - {name: AWS_DEFAULT_REGION, value: eu-west-1}
      - name: DB_PASSWORD
        valueFrom: {secretKeyRef: {name: db, key: PASSWORD}}
  - name: repo
    kind: git
    schema: {url: "https://github.com/org/repo"}
namespace: polyaxon
"""


def _write(tmp_path: Path, text: str, name: str = "connections.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_load_agent_style_file(tmp_path: Path) -> None:
    conns = load_connections(_write(tmp_path, FILE))
    assert list(conns) == ["store", "training-data", "my-s3", "repo"]
    assert conns["training-data"].tags == ["data", "images"]
    assert conns["my-s3"].secret is not None
    assert conns["my-s3"].secret.items == ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
    assert conns["repo"].schema_ == {"url": "https://github.com/org/repo"}


def test_load_a_plain_list(tmp_path: Path) -> None:
    conns = load_connections(_write(tmp_path, "- {name: a, kind: slack}\n"))
    assert list(conns) == ["a"]


def test_path_from_env_or_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_CONNECTIONS, raising=False)
    assert load_connections() == {}
    monkeypatch.setenv(ENV_CONNECTIONS, str(_write(tmp_path, FILE)))
    assert "repo" in load_connections()


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConnectionsError, match="cannot read the connections file"):
        load_connections(tmp_path / "nope.yaml")


def test_invalid_connection_is_located_by_line(tmp_path: Path) -> None:
    text = "connections:\n  - name: a\n    kind: s3\n  - name: b\n    kind: dropbox\n"
    with pytest.raises(ConnectionsError) as info:
        load_connections(_write(tmp_path, text))
    problem = info.value.problems[0]
    assert "unknown connection kind (got 'dropbox')" in problem.message
    assert problem.line == 5
    assert problem.hint and "volume_claim" in problem.hint


def test_unknown_key_is_rejected(tmp_path: Path) -> None:
    text = "connections:\n  - name: a\n    kind: s3\n    secrets: {name: x}\n"
    with pytest.raises(ConnectionsError) as info:
        load_connections(_write(tmp_path, text))
    assert info.value.problems[0].line == 4


def test_duplicate_names_are_rejected(tmp_path: Path) -> None:
    text = "- {name: a, kind: s3}\n- {name: a, kind: gcs}\n"
    with pytest.raises(ConnectionsError, match="`a` is defined more than once"):
        load_connections(_write(tmp_path, text))


def test_bad_yaml_is_a_connections_error(tmp_path: Path) -> None:
    with pytest.raises(ConnectionsError, match="not valid YAML"):
        load_connections(_write(tmp_path, "connections: [\n  - name: a\n"))


def test_not_a_connections_document(tmp_path: Path) -> None:
    with pytest.raises(ConnectionsError, match="must be a list of connections"):
        load_connections(_write(tmp_path, "name: a\nkind: s3\n"))


def test_get_connection_lists_the_known_names(tmp_path: Path) -> None:
    conns = load_connections(_write(tmp_path, FILE))
    with pytest.raises(UnknownConnectionError, match=r"`nope` is not defined.*`my-s3`"):
        get_connection(conns, "nope")


def test_schema_becomes_path_bucket_and_url_env(tmp_path: Path) -> None:
    conns = load_connections(_write(tmp_path, FILE))
    env, secrets = connection_env(conns["store"], secrets_dir=tmp_path, environ={})
    assert env["POLYAXON_PREFECT_CONNECTION_STORE_PATH"] == "/data/artifacts"
    assert json.loads(env["POLYAXON_PREFECT_CONNECTION_STORE_SCHEMA"])["hostPath"] == (
        "/data/artifacts"
    )
    assert secrets == []
    env, _ = connection_env(conns["training-data"], secrets_dir=tmp_path, environ={})
    assert env["POLYAXON_PREFECT_CONNECTION_TRAINING_DATA_PATH"] == "/data"
    env, _ = connection_env(conns["repo"], secrets_dir=tmp_path, environ={})
    assert env["POLYAXON_PREFECT_CONNECTION_REPO_URL"] == "https://github.com/org/repo"


def test_secret_items_from_dotenv_file_then_environment(tmp_path: Path) -> None:
    conns = load_connections(_write(tmp_path, FILE))
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "aws-creds.env").write_text(
        "# aws\nexport AWS_ACCESS_KEY_ID=AKIA123\nUNLISTED=zzz\n"
    )
    (secrets_dir / "db.env").write_text('PASSWORD="hunter22"\n')
    env, secrets = connection_env(
        conns["my-s3"],
        secrets_dir=secrets_dir,
        environ={"AWS_SECRET_ACCESS_KEY": "from-ci-env"},
    )
    assert env["AWS_ACCESS_KEY_ID"] == "AKIA123"
    assert env["AWS_SECRET_ACCESS_KEY"] == "from-ci-env"
    assert "UNLISTED" not in env  # `items` restricts the keys
    assert env["AWS_DEFAULT_REGION"] == "eu-west-1"
    assert env["DB_PASSWORD"] == "hunter22"
    assert env["POLYAXON_PREFECT_CONNECTION_MY_S3_BUCKET"] == "s3://my-bucket"
    assert sorted(secrets) == ["AKIA123", "from-ci-env", "hunter22"]


def test_missing_secret_key_names_the_file_and_key(tmp_path: Path) -> None:
    conns = load_connections(_write(tmp_path, FILE))
    with pytest.raises(ConnectionsError) as info:
        connection_env(conns["my-s3"], secrets_dir=tmp_path, environ={})
    problem = info.value.problems[0]
    assert "connection `my-s3`: secret `aws-creds` has no key `AWS_ACCESS_KEY_ID`" in (
        problem.message
    )
    assert "aws-creds.env" in (problem.hint or "")


def test_secret_without_items_needs_a_local_file(tmp_path: Path) -> None:
    conns = load_connections(_write(tmp_path, "- {name: slack, kind: slack, secret: {name: s}}\n"))
    with pytest.raises(ConnectionsError, match=r"secret `s` has no local file"):
        connection_env(conns["slack"], secrets_dir=tmp_path, environ={})
    (tmp_path / "s.env").write_text("SLACK_TOKEN=xoxb-abc\n")
    env, secrets = connection_env(conns["slack"], secrets_dir=tmp_path, environ={})
    assert env == {"SLACK_TOKEN": "xoxb-abc"}
    assert secrets == ["xoxb-abc"]


def test_mounted_secret_exposes_a_directory(tmp_path: Path) -> None:
    text = (
        "- {name: reg, kind: registry, secret: {name: docker-conf, mountPath: /kaniko/.docker}}\n"
    )
    conns = load_connections(_write(tmp_path, text))
    with pytest.raises(ConnectionsError, match="no local directory"):
        connection_env(conns["reg"], secrets_dir=tmp_path, environ={})
    (tmp_path / "docker-conf").mkdir()
    (tmp_path / "docker-conf" / "config.json").write_text('{"auths": "tok3n"}')
    env, secrets = connection_env(conns["reg"], secrets_dir=tmp_path, environ={})
    assert env == {"POLYAXON_PREFECT_CONNECTION_REG_SECRET_PATH": str(tmp_path / "docker-conf")}
    assert secrets == ['{"auths": "tok3n"}']


def test_config_map_values_are_not_secrets(tmp_path: Path) -> None:
    text = "- {name: cfg, kind: custom, configMap: {name: settings}}\n"
    (tmp_path / "settings.env").write_text("MODE=fast\n")
    conns = load_connections(_write(tmp_path, text))
    env, secrets = connection_env(conns["cfg"], secrets_dir=tmp_path, environ={})
    assert env == {"MODE": "fast"} and secrets == []


def test_unsupported_value_from_is_an_error(tmp_path: Path) -> None:
    text = (
        "- name: c\n  kind: custom\n  env:\n"
        "    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}\n"
    )
    conns = load_connections(_write(tmp_path, text))
    with pytest.raises(ConnectionsError, match="no local meaning"):
        connection_env(conns["c"], secrets_dir=tmp_path, environ={})


def test_secrets_dir_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "s.env").write_text("TOKEN=abcdef\n")
    monkeypatch.setenv("POLYAXON_PREFECT_SECRETS_DIR", str(tmp_path))
    conns = load_connections(_write(tmp_path, "- {name: c, kind: slack, secret: {name: s}}\n"))
    assert connection_env(conns["c"], environ={})[0] == {"TOKEN": "abcdef"}
