"""Put Polyaxon's tracking APIs on a job's ``PYTHONPATH`` when its Python has none of its own.

A training script written for Polyaxon starts with ``from polyaxon import tracking`` (v1/v2)
or ``from polyaxon_client.tracking import Experiment`` (v0). The wheel ships stand-ins for both
under ``polyaxon_prefect/_compat`` (``v1/polyaxon``, ``v0/polyaxon_client``, mapped onto
`polyaxon_prefect.tracking`); each is added, at the *end* of the job's ``PYTHONPATH``, only
when the job's interpreter cannot import the real package, so a real install is never shadowed
(a ``PYTHONPATH`` entry would come before site-packages).

Which interpreter, and how it is checked cheaply:

- the job's ``argv[0]`` when it is this Python (``python``/``python3`` are run with it, see
  `python_argv`) or a command that is not a Python (a shell script most often runs the ``python``
  of the same environment): looked up in this process with `importlib.machinery.PathFinder`
  over the job's ``PYTHONPATH`` then our ``sys.path``, no import, microseconds;
- another Python (``/opt/conda/bin/python``, ``python3.10``): asked once, in a subprocess
  (``find_spec``, about 20 ms), the answer cached for the process's lifetime by interpreter and
  ``PYTHONPATH``. A probe that fails (no such program, timeout) adds nothing.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib.machinery import PathFinder
from pathlib import Path

__all__ = [
    "COMPAT_DIR",
    "ENV_DECLARED_OUTPUTS",
    "compat_env",
    "missing_packages",
    "this_interpreter",
]

COMPAT_DIR = Path(__file__).resolve().parents[2] / "_compat"
"""Holds ``_polyaxon_prefect_compat.py`` (the shared implementation), ``v1/`` and ``v0/``."""

ENV_DECLARED_OUTPUTS = "POLYAXON_PREFECT_DECLARED_OUTPUTS"
"""The component's declared output names (JSON list), for the compat ``log_outputs``: Polyaxon
accepts any name, our outputs only declared ones, so the others are set aside, not failed."""

PACKAGES: dict[str, Path] = {
    "polyaxon": COMPAT_DIR / "v1",
    "polyaxon_client": COMPAT_DIR / "v0",
}
"""Each stand-in package and the directory that holds it."""

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_OURS = {str(COMPAT_DIR), *(str(path) for path in PACKAGES.values())}
_PROBE = (
    "import importlib.util as u;"
    f"print(' '.join(n for n in {sorted(PACKAGES)!r} if u.find_spec(n) is None))"
)


@functools.cache
def this_interpreter() -> str:
    """The real path of the interpreter running this process, resolved once: it cannot change
    while the process lives, and a ``realpath`` is a system call per part of the path (each
    one a wait for the GIL on a busy machine), on every op's path."""
    return os.path.realpath(sys.executable)


def _path_entries(pythonpath: str) -> tuple[str, ...]:
    return tuple(entry for entry in pythonpath.split(os.pathsep) if entry and entry not in _OURS)


@functools.lru_cache(maxsize=64)
def _missing_here(pythonpath: str) -> frozenset[str]:
    entries = [*_path_entries(pythonpath), *(p for p in sys.path if p not in _OURS)]
    return frozenset(name for name in PACKAGES if PathFinder.find_spec(name, entries) is None)


@functools.lru_cache(maxsize=64)
def _missing_there(interpreter: str, pythonpath: str) -> frozenset[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(_path_entries(pythonpath))
    try:
        done = subprocess.run(
            [interpreter, "-c", _PROBE],
            env=env,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    if done.returncode != 0:
        return frozenset()
    return frozenset(done.stdout.split()) & set(PACKAGES)


def missing_packages(argv: Sequence[str], env: Mapping[str, str]) -> frozenset[str]:
    """The Polyaxon packages (``polyaxon``, ``polyaxon_client``) the job's Python lacks."""
    pythonpath = env.get("PYTHONPATH", "")
    program = argv[0] if argv else ""
    # `python_argv` made a bare `python` this very interpreter: nothing to look up
    if program and program != sys.executable and _PYTHON.match(Path(program).name):
        found = shutil.which(program, path=env.get("PATH")) or program
        if os.path.realpath(found) != this_interpreter():
            return _missing_there(found, pythonpath)
    return _missing_here(pythonpath)


def compat_env(
    argv: Sequence[str], env: Mapping[str, str], declared_outputs: Sequence[str]
) -> dict[str, str]:
    """The variables to add to the job's ``env`` (none when both real packages are there):
    ``PYTHONPATH`` with the stand-ins appended, and the declared outputs' names."""
    missing = missing_packages(argv, env)
    if not missing:
        return {}
    entries = list(_path_entries(env.get("PYTHONPATH", "")))
    entries += [str(COMPAT_DIR), *(str(PACKAGES[name]) for name in sorted(missing))]
    return {
        "PYTHONPATH": os.pathsep.join(entries),
        ENV_DECLARED_OUTPUTS: json.dumps(list(declared_outputs)),
    }
