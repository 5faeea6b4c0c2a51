"""What the command line sets on the operation: ``-P`` params, and ``run``'s Polyaxon flags:
an ad-hoc matrix from ``-HP``, and ``--name``, ``--description``, ``--tags``.

Built as Polyaxon 2.x's CLI builds them (``polyaxon/_polyaxonfile/params.py`` and
``manager/operations.py``): ``-HP name=kind:value`` splits at the first ``=`` and the first
``:``, the value is read as YAML (``choice:[0.1,0.01]`` is a list, ``range:1:10:2`` and
``linspace:0.001:0.1:5`` stay strings); the matrix is ``{kind, concurrency, params}`` with
``kind`` grid and ``concurrency`` 1 unless given, and ``numRuns`` only when given. It replaces a
matrix the file has (Polyaxon's operation patch puts the command line's over the file's). The
fields are then validated with the file's, so a bad ``-HP`` kind or value is a problem located
at its flag (``-HP: matrix.params.lr.kind: ...``), like ``-P``'s.

Pure: no I/O, no Prefect.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.loading._yaml import parse_yaml

__all__ = [
    "DEFAULT_MATRIX_CONCURRENCY",
    "DEFAULT_MATRIX_KIND",
    "CliOverrides",
    "matrix_from_hparams",
    "parse_cli_params",
    "parse_hparams",
    "parse_tags",
]

DEFAULT_MATRIX_KIND = "grid"
"""Polyaxon's CLI: "Matrix kind if hparams are provided, default grid"."""
DEFAULT_MATRIX_CONCURRENCY = 1
"""Polyaxon's CLI: "Matrix concurrency if hparams are provided, default 1"."""

_HP_HINT = "for example -HP 'lr=choice:[0.1,0.01]' or -HP 'epochs=range:1:10:2'"


def _hp_problem(message: str, value: str, hint: str = _HP_HINT) -> Problem:
    return Problem(message, rule="cli_hparam", file="-HP", value=value, hint=hint)


def parse_cli_params(items: Iterable[str]) -> dict[str, str]:
    """``["lr=0.1", "layers=[1,2]"]`` -> ``{"lr": "0.1", ...}``.

    Values stay strings here: like Polyaxon, they are parsed later by the input's declared type,
    so ``lr=0.1`` becomes a float for a float input and stays ``"0.1"`` for a str input.
    """
    params: dict[str, str] = {}
    problems: list[Problem] = []
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            problems.append(
                Problem(
                    f"invalid -P parameter `{item}`: expected NAME=VALUE",
                    rule="cli_param",
                    file="-P",
                    hint="for example -P learning_rate=0.01",
                )
            )
        elif name in params:
            problems.append(
                Problem(f"-P `{name}` is given twice", rule="cli_param", file="-P", value=item)
            )
        else:
            params[name] = value
    if problems:
        raise PolyaxonfileError(problems)
    return params


def parse_hparams(items: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``["lr=choice:[0.1,0.01]"]`` -> ``{"lr": {"kind": "choice", "value": [0.1, 0.01]}}``;
    raise `PolyaxonfileError` with one problem per bad item (file ``-HP``).

    Whether the kind exists and fits its value is the matrix model's check, done with the
    file's (`load_polyaxonfile`), so ``-HP`` and a file say the same thing about a param."""
    params: dict[str, dict[str, Any]] = {}
    problems: list[Problem] = []
    for item in items:
        name, sep, spec = item.partition("=")
        name = name.strip()
        kind, colon, text = spec.partition(":")
        kind = kind.strip()
        if not sep or not name:
            problems.append(_hp_problem(f"invalid -HP `{item}`: expected NAME=KIND:VALUE", item))
        elif name in params:
            problems.append(
                _hp_problem(f"-HP `{name}` is given twice", item, hint="give each param once")
            )
        elif not colon or not kind or not text.strip():
            problems.append(
                _hp_problem(
                    f"-HP `{name}` has no kind and value: `{spec}` (expected KIND:VALUE)", item
                )
            )
        else:
            try:
                value = parse_yaml(text, file="-HP").data
            except PolyaxonfileError as error:
                why = error.problems[0].message if error.problems else "not YAML"
                problems.append(
                    _hp_problem(f"-HP `{name}`: the value `{text}` is not valid: {why}", item)
                )
                continue
            params[name] = {"kind": kind, "value": value}
    if problems:
        raise PolyaxonfileError(problems)
    return params


def matrix_from_hparams(
    hparams: dict[str, dict[str, Any]],
    *,
    kind: str | None = None,
    concurrency: int | None = None,
    num_runs: int | None = None,
) -> dict[str, Any]:
    """The ``matrix`` section Polyaxon's CLI makes of ``-HP`` and the ``--matrix-*`` flags."""
    matrix: dict[str, Any] = {
        "kind": kind or DEFAULT_MATRIX_KIND,
        "concurrency": concurrency or DEFAULT_MATRIX_CONCURRENCY,
        "params": hparams,
    }
    if num_runs:
        matrix["numRuns"] = num_runs
    return matrix


def parse_tags(text: str | None) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]`` (Polyaxon's ``--tags``: comma separated)."""
    if not text:
        return []
    return list(dict.fromkeys(tag.strip() for tag in text.split(",") if tag.strip()))


@dataclass(frozen=True)
class CliOverrides:
    """The operation fields a command line sets, each on top of the file's."""

    matrix: dict[str, Any] | None = None
    name: str | None = None
    description: str | None = None
    tags: Sequence[str] = field(default_factory=tuple)

    def apply(self, op: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
        """Set the fields on ``op`` (an assembled operation); returns where each went and the
        flag that set it, for problems to be located at the flag."""
        placed: list[tuple[tuple[str | int, ...], str]] = []
        if self.matrix is not None:
            op["matrix"] = self.matrix
            placed.append((("matrix",), "-HP"))
        if self.name is not None:
            op["name"] = self.name
            placed.append((("name",), "--name"))
        if self.description is not None:
            op["description"] = self.description
            placed.append((("description",), "--description"))
        if self.tags:
            op["tags"] = list(dict.fromkeys([*_file_tags(op), *self.tags]))
            placed.append((("tags",), "--tags"))
        return placed


def _file_tags(op: dict[str, Any]) -> list[str]:
    """The tags the run has without ``--tags`` (the operation's, else its component's), which
    ``--tags`` adds to: a job shows the operation's tags over its component's."""
    component = op.get("component")
    tags = op.get("tags") or (component.get("tags") if isinstance(component, dict) else None)
    if isinstance(tags, str):
        return parse_tags(tags) if "{{" not in tags else []
    return [str(tag) for tag in tags] if isinstance(tags, list) else []
