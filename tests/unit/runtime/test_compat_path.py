"""`compat_env`: which stand-ins a job gets, and where they go on its ``PYTHONPATH``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from polyaxon_prefect.runtime.render._compat_path import (
    COMPAT_DIR,
    ENV_DECLARED_OUTPUTS,
    PACKAGES,
    compat_env,
    missing_packages,
    this_interpreter,
)


def test_the_stand_ins_ship_with_the_package() -> None:
    assert (COMPAT_DIR / "_polyaxon_prefect_compat.py").is_file()
    assert (PACKAGES["polyaxon"] / "polyaxon" / "tracking" / "__init__.py").is_file()
    assert (PACKAGES["polyaxon_client"] / "polyaxon_client" / "tracking" / "__init__.py").is_file()


def test_appended_after_the_jobs_own_entries_with_the_declared_outputs() -> None:
    env = compat_env([sys.executable, "train.py"], {"PYTHONPATH": "/mine:/theirs"}, ["acc"])
    entries = env["PYTHONPATH"].split(os.pathsep)
    assert entries == [
        "/mine",
        "/theirs",
        str(COMPAT_DIR),
        str(PACKAGES["polyaxon"]),
        str(PACKAGES["polyaxon_client"]),
    ]
    assert json.loads(env[ENV_DECLARED_OUTPUTS]) == ["acc"]


def test_our_own_entries_are_not_added_twice() -> None:
    first = compat_env([sys.executable], {}, [])
    again = compat_env([sys.executable], {"PYTHONPATH": first["PYTHONPATH"]}, [])
    assert again["PYTHONPATH"] == first["PYTHONPATH"]


def test_a_command_that_is_not_python_is_answered_for_this_interpreter(tmp_path: Path) -> None:
    (tmp_path / "polyaxon_client").mkdir()
    (tmp_path / "polyaxon_client" / "__init__.py").write_text("")
    env = {"PYTHONPATH": str(tmp_path)}
    assert missing_packages(["bash", "-c", "python train.py"], env) == {"polyaxon"}


def test_a_python_that_cannot_be_probed_gets_nothing() -> None:
    assert compat_env(["/nonexistent/bin/python3.9", "x.py"], {}, []) == {}


def test_this_interpreter_is_answered_without_a_lookup(monkeypatch: Any) -> None:
    # `python_argv` made `python` this interpreter: no PATH search, no realpath, no probe
    from polyaxon_prefect.runtime.render import _compat_path

    assert this_interpreter() == os.path.realpath(sys.executable)

    def refused(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("looked up")

    expected = missing_packages(["python", "-c", "pass"], {"PATH": os.path.dirname(sys.executable)})
    monkeypatch.setattr(_compat_path.shutil, "which", refused)
    monkeypatch.setattr(_compat_path, "_missing_there", refused)
    assert missing_packages([sys.executable, "-c", "pass"], {}) == expected
