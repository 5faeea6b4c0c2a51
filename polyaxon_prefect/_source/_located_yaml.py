"""YAML reading that remembers where every key and value came from.

Pydantic reports errors by field path; users need ``file:line:col``. We compose the YAML node tree,
build plain Python data from it and, on the way, record the position of each mapping key and list
item under its data path, so any path can be mapped back to the source.

Hostile input is refused with a located problem, never a traceback or an exhausted machine: a
control byte is reported where it is; building the data counts the nodes it produces (so an
alias bomb, a few hundred bytes that expand to billions of nodes, stops at
``POLYAXON_PREFECT_MAX_YAML_NODES``) and the nesting depth (so deep nesting and a recursive
alias stop at ``POLYAXON_PREFECT_MAX_YAML_DEPTH``). The node tree is composed by libyaml when
PyYAML has it (fast, and no Python recursion however deep the file), with the same resolvers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from polyaxon_prefect._source._limits import MAX_FILE_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem

__all__ = ["Document", "Positions", "SectionKind", "parse_yaml"]

Path = tuple[str | int, ...]


class _Loader(yaml.SafeLoader):
    """SafeLoader without YAML 1.1 base-60 numbers.

    PyYAML reads ``1:10:2`` as the integer 4202 (a sexagesimal literal), which silently breaks
    Polyaxon's ``range: 1:10:2`` shorthand. YAML 1.2 dropped base 60; so do we.
    """


_Loader.yaml_implicit_resolvers = {
    key: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
    ]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(
        r"""^(?:[-+]?0b[0-1_]+
        |[-+]?0[0-7_]+
        |[-+]?(?:0|[1-9][0-9_]*)
        |[-+]?0x[0-9a-fA-F_]+)$""",
        re.X,
    ),
    list("-+0123456789"),
)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


_FastLoader: type[yaml.CSafeLoader] | type[_Loader]
if yaml.__with_libyaml__:  # PyYAML defines CSafeLoader only when built with libyaml

    class _CLoader(yaml.CSafeLoader):
        """libyaml's parser with `_Loader`'s resolvers (no base 60)."""

    _CLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers
    _FastLoader = _CLoader
else:  # pragma: no cover - PyYAML built without libyaml
    _FastLoader = _Loader

# Characters YAML refuses (the same set as PyYAML's reader): C0 controls but tab, LF, CR;
# DEL and C1 controls but NEL; surrogates; U+FFFE and U+FFFF.
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


class _Budget(Exception):
    """The node or depth budget ran out at ``node``."""

    def __init__(self, message: str, node: yaml.Node, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.node = node
        self.hint = hint


@dataclass
class Positions:
    """Source positions (1-based line and column) by data path."""

    file: str | None = None
    by_path: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def find(self, path: Sequence[str | int]) -> tuple[int | None, int | None]:
        """The position of ``path``, or of its nearest ancestor that has one."""
        path = tuple(path)
        while True:
            if path in self.by_path:
                return self.by_path[path]
            if not path:
                return None, None
            path = path[:-1]

    def problem(self, problem: Problem) -> Problem:
        line, column = self.find(problem.path)
        return problem.located(file=self.file, line=line, column=column)


@dataclass
class Document:
    """Parsed YAML data plus where each piece of it came from."""

    data: Any
    positions: Positions


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    def __init__(self, loader: Any, positions: Positions) -> None:
        self.loader = loader
        self.positions = positions
        self.problems: list[Problem] = []
        self.nodes_left = MAX_YAML_NODES.value
        self.max_depth = MAX_YAML_DEPTH.value

    def _spend(self, node: yaml.Node, depth: int) -> None:
        """Count ``node`` against the budgets: raise `_Budget` where one runs out."""
        self.nodes_left -= 1
        if self.nodes_left < 0:
            raise _Budget(
                f"the file expands to more than {MAX_YAML_NODES.value} YAML nodes (are `*aliases`"
                " repeating an anchor that repeats others?)",
                node,
                MAX_YAML_NODES.hint(),
            )
        if depth > self.max_depth:
            raise _Budget(
                f"the data is nested more than {self.max_depth} levels deep (is an `*alias` "
                "inside the anchor it names?)",
                node,
                MAX_YAML_DEPTH.hint(),
            )

    def measure(self, root: yaml.Node) -> None:
        """Raise the error `build` would raise first, at the same node, without building: an
        alias bomb is refused in milliseconds instead of after building up to
        ``POLYAXON_PREFECT_MAX_YAML_NODES`` nodes (a second or more each).

        The nodes are walked in `build`'s order and count as they would there, but a node met
        again (an `*alias`) is not walked again when what it expands to (nodes, levels, both
        known from its first walk) fits in what is left: only the alias that overruns a budget
        is walked into, down to the node where it runs out. A node's first walk does what
        `build` does to it (merge keys, scalars constructed: cached for `build`), so a bad
        scalar fails here where `build` would have failed on it."""
        sizes: dict[int, tuple[int, int]] = {}  # id(node): (nodes, levels below it)
        deepest = [0]

        def walk(node: yaml.Node, depth: int) -> None:
            known = sizes.get(id(node))
            fits = known is not None and known[0] <= self.nodes_left
            if known is not None and fits and depth + known[1] <= self.max_depth:
                self.nodes_left -= known[0]
                deepest[0] = max(deepest[0], depth + known[1])
                return
            left, above = self.nodes_left, deepest[0]
            deepest[0] = depth
            self._spend(node, depth)
            for child in self._children(node):
                walk(child, depth + 1)
            sizes[id(node)] = (left - self.nodes_left, deepest[0] - depth)
            deepest[0] = max(above, deepest[0])

        try:
            walk(root, 0)
        finally:
            self.nodes_left = MAX_YAML_NODES.value

    def _children(self, node: yaml.Node) -> list[yaml.Node]:
        """The nodes `build` builds under ``node``, in its order."""
        if isinstance(node, yaml.MappingNode):
            self.loader.flatten_mapping(node)
            return [
                value
                for key, value in node.value
                if not isinstance(self.loader.construct_object(key, deep=True), list | dict)
            ]
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        self.loader.construct_object(node, deep=True)
        return []

    def build(self, node: yaml.Node, path: Path) -> Any:
        self._spend(node, len(path))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            out = []
            for index, item in enumerate(node.value):
                self.positions.by_path.setdefault((*path, index), _mark(item))
                out.append(self.build(item, (*path, index)))
            return out
        return self.loader.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[Any, Any]:
        self.loader.flatten_mapping(node)  # resolves `<<` merge keys in place
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.loader.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                line, column = _mark(key_node)
                self.problems.append(
                    Problem(
                        "a mapping key must be a plain scalar, not a list or a mapping",
                        rule="yaml_key",
                        path=path,
                        file=self.positions.file,
                        line=line,
                        column=column,
                    )
                )
                continue
            if key in out:
                line, column = _mark(key_node)
                self.problems.append(
                    Problem(
                        f"duplicate key `{key}`: YAML would silently keep only the last one",
                        rule="duplicate_key",
                        path=(*path, key),
                        file=self.positions.file,
                        line=line,
                        column=column,
                        hint="remove or rename one of the two entries",
                    )
                )
            self.positions.by_path.setdefault((*path, key), _mark(key_node))
            out[key] = self.build(value_node, (*path, key))
        return out


_PLAIN_REASONS = (
    ("expected <block end>", "this line is not indented like the lines around it"),
    ("mapping values are not allowed here", "a `key: value` pair is not allowed at this place"),
    ("found character '\\t'", "a tab character is used for indentation"),
    ("could not find expected ':'", "a key is missing its `:`"),
    ("found undefined alias", "an `*alias` refers to an anchor that is not defined"),
)


@dataclass(frozen=True)
class SectionKind:
    """A ``kind:`` value that belongs under a section of its own: met nested under a key that
    already has a value, it means the section's line was lost (``matrix:`` above
    ``kind: grid``). ``extra`` finishes the hint for a kind whose section needs more."""

    section: str
    extra: str = ""


_KEY_VALUE = re.compile(r"^\s*(?:-\s+)?([A-Za-z_][\w-]*)\s*:\s*(\S.*)?$")


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def _nesting_hint(
    lines: list[str], line: int, section_kinds: Mapping[str, SectionKind]
) -> str | None:
    """Explain the most common YAML slip: a key indented under a key that already has a value.

    Both broken examples of Polyaxon's own docs are this slip (a mapping whose `matrix:` line was
    lost, and a DAG op whose `urlRef` is indented under `name: experiment`); PyYAML only says
    "mapping values are not allowed here", which nobody can act on.
    """
    if not 0 < line <= len(lines):
        return None
    current = lines[line - 1]
    match = _KEY_VALUE.match(current)
    previous_index = next(
        (
            i
            for i in range(line - 2, -1, -1)
            if lines[i].strip() and not lines[i].lstrip().startswith("#")
        ),
        None,
    )
    if match is None or previous_index is None:
        return None
    previous = lines[previous_index]
    previous_match = _KEY_VALUE.match(previous)
    if previous_match is None or not previous_match.group(2):
        return None
    key, value = match.group(1), (match.group(2) or "").strip()
    previous_key = previous_match.group(1)
    if _indent(current) <= _indent(previous):
        return None
    lost = section_kinds.get(value) if key == "kind" else None
    if lost is not None:
        return (
            f"`kind: {value}` is a {lost.section} kind but it is indented under "
            f"`{previous_key}:` (line {previous_index + 1}); put `{lost.section}:` on its own "
            f"line above it{lost.extra}"
        )
    return (
        f"`{key}` is indented deeper than `{previous_key}:` on line {previous_index + 1}, which "
        f"already has a value, so YAML cannot nest it; indent `{key}` at the same level as "
        f"`{previous_key}`"
    )


def _yaml_problem(
    exc: yaml.YAMLError, file: str | None, text: str, section_kinds: Mapping[str, SectionKind]
) -> Problem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    column = mark.column + 1 if mark is not None else None
    raw_reason = reason = getattr(exc, "problem", None) or str(exc)
    for raw, plain in _PLAIN_REASONS:
        if raw in raw_reason:
            reason = plain
            break
    hint = None
    if line is not None:
        source_lines = text.splitlines()
        if 0 < line <= len(source_lines) and "\t" in source_lines[line - 1]:
            hint = "YAML does not allow tabs for indentation; indent with spaces"
        elif "mapping values are not allowed" in raw_reason:
            hint = _nesting_hint(source_lines, line, section_kinds) or (
                "a `key: value` appears where YAML expected a plain value; check the indentation "
                "of this line against the one above it, or quote the value if it contains `: `"
            )
        elif "expected <block end>" in raw_reason or "did not find expected" in raw_reason:
            hint = "check the indentation of this line: it does not line up with its siblings"
        elif "found character '\\t'" in raw_reason:
            hint = "YAML does not allow tabs; use spaces"
    return Problem(
        f"not valid YAML: {reason}",
        rule="yaml_syntax",
        file=file,
        line=line,
        column=column,
        hint=hint,
    )


def _control_problem(text: str, file: str | None) -> Problem | None:
    """The first character YAML refuses (NUL, other control bytes), located."""
    match = _NON_PRINTABLE.search(text)
    if match is None:
        return None
    index = match.start()
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return Problem(
        f"the file contains the control character {match.group()!r}, which YAML does not allow",
        rule="yaml_control_character",
        file=file,
        line=line,
        column=column,
        hint="a Polyaxonfile is UTF-8 text; is this a binary file, or was it damaged?",
    )


def _problem_at(
    message: str, rule: str, node: yaml.Node | None, file: str | None, hint: str
) -> Problem:
    line, column = _mark(node) if node is not None else (None, None)
    return Problem(message, rule=rule, file=file, line=line, column=column, hint=hint)


def _python_error(text: str) -> yaml.YAMLError | None:
    """PyYAML's own error for bad YAML (its messages are the ones `_PLAIN_REASONS` explains;
    libyaml words them differently). Only called for a file that failed to parse."""
    loader = _Loader(text)
    try:
        loader.get_single_node()
    except yaml.YAMLError as exc:
        return exc
    except RecursionError:
        return None
    finally:
        loader.dispose()
    return None


def parse_yaml(
    text: str, *, file: str | None = None, section_kinds: Mapping[str, SectionKind] | None = None
) -> Document:
    """Parse one YAML document, keeping positions; raise `PolyaxonfileError` on bad YAML.

    ``section_kinds`` are the ``kind:`` values whose section line a mis-indented file may have
    lost; the reader of a Polyaxonfile passes the matrix kinds (this layer sits below the
    models, so it is told them rather than keeping its own list).
    """
    limit = MAX_FILE_BYTES.value
    if len(text) > limit:
        raise PolyaxonfileError(
            [
                Problem(
                    f"the file is {len(text)} characters, more than the {limit}-byte limit",
                    rule="file_too_large",
                    file=file,
                    hint=MAX_FILE_BYTES.hint(),
                )
            ]
        )
    control = _control_problem(text, file)
    if control is not None:
        raise PolyaxonfileError([control])
    positions = Positions(file=file)
    loader = _FastLoader(text)
    builder: _Builder | None = None
    try:
        node = loader.get_single_node()
        if node is None:
            raise PolyaxonfileError(
                [Problem("the file is empty", rule="empty", file=file, line=1, column=1)]
            )
        builder = _Builder(loader, positions)
        positions.by_path[()] = _mark(node)
        builder.measure(node)
        data = builder.build(node, ())
    except yaml.YAMLError as exc:
        # libyaml refuses nesting over 1,000 levels; on that, PyYAML's parser only recurses
        # past Python's limit (seconds of CPU) to find no error of its own (`_python_error`)
        python = None if "maximum nesting depth" in str(exc) else _python_error(text)
        problem = _yaml_problem(python or exc, file, text, section_kinds or {})
        raise PolyaxonfileError([problem]) from None
    except _Budget as exc:
        rule = "yaml_too_many_nodes" if "nodes" in exc.message else "yaml_too_deep"
        raise PolyaxonfileError(
            [_problem_at(exc.message, rule, exc.node, file, exc.hint)]
        ) from None
    except RecursionError:  # the pure-Python composer on very deep nesting
        message = f"the data is nested more than {MAX_YAML_DEPTH.value} levels deep"
        raise PolyaxonfileError(
            [_problem_at(message, "yaml_too_deep", None, file, MAX_YAML_DEPTH.hint())]
        ) from None
    finally:
        loader.dispose()
    if builder.problems:
        raise PolyaxonfileError(builder.problems)
    return Document(data=data, positions=positions)
