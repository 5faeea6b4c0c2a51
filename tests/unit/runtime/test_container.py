"""The docker backend's choices that need no container: which CLI, which variables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from polyaxon_prefect.runtime._container import (
    TRACKING_PATH,
    ContainerCliError,
    container_environment,
    find_cli,
)
from polyaxon_prefect.runtime._context import new_run_context


def test_a_named_cli_that_is_not_installed_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POLYAXON_PREFECT_CONTAINER_CLI", "no-such-container-cli")
    find_cli.cache_clear()
    try:
        with pytest.raises(ContainerCliError, match=r"no-such-container-cli.*no such program"):
            find_cli()
    finally:
        find_cli.cache_clear()


def test_the_container_gets_the_contract_and_the_ops_variables_by_name_only(
    tmp_path: Path,
) -> None:
    context = new_run_context("op", artifacts_root=tmp_path)
    contract = context.env_vars({"lr": 0.1})
    env = {**os.environ, **contract, "TOKEN": "s3cret"}
    cli_env, names = container_environment(env, context)
    assert set(contract) <= set(names)
    assert "TOKEN" in names and "HOME" not in names  # inherited: means nothing in an image
    assert cli_env["TOKEN"] == "s3cret"  # the value travels in the CLI's environment
    assert cli_env["PYTHONPATH"] == TRACKING_PATH
    assert "/usr/sbin" in cli_env["PATH"].split(os.pathsep)
