"""Find kind switches in source: code that decides by a run kind, a matrix kind or an op shape.

A new kind should need a model in ``specs`` and one registry entry; every other module that
compares a kind string grows a branch per kind and quietly misses the next one. This finds the
switch however it is spelled, so the architecture report cannot be met by rewording it:

- a compare (``==``, ``!=``, ``in``, ``not in``, ``is``) with a kind literal (also spelled in
  pieces, ``"jo" + "b"``), a tuple, list or set of them, or a module or class constant holding
  them (``JOB = "job"``, ``KUBEFLOW_KINDS``, ``self.SHAPES``);
- a ``match`` whose ``case`` patterns are kind literals or shape classes (``case Dag():``);
- a dict literal keyed by kind literals used as a table (a constant, indexed where it is
  written, or keyed by two kinds or more);
- ``isinstance(x, Dag)`` with a shape class (a run or matrix model, imported from ``specs``
  or named as ``specs.Dag``).

Not caught: a kind built at run time (``"".join(...)``, an f-string) or read from elsewhere
and compared under another name; the probes in ``tests/unit/test_architecture_report.py``
list the spellings that are.

The kinds and the shape classes are passed in by the caller, which reads them from the models,
so a kind added to ``specs`` is checked without an edit here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["Switch", "kind_constants", "kind_switches"]

_SET_BUILDERS = {"frozenset", "set", "tuple", "list"}


@dataclass(frozen=True)
class Switch:
    """One kind switch: where it is and how it is spelled."""

    line: int
    how: str


def _is_kind_value(node: ast.expr, kinds: frozenset[str], constants: frozenset[str]) -> bool:
    """Whether ``node`` evaluates to a kind or a collection of kinds."""
    match node:
        case ast.Constant(value=str() as value):
            return value in kinds
        case ast.Tuple(elts=elts) | ast.List(elts=elts) | ast.Set(elts=elts):
            # every element: a list that merely mentions a kind among other words is not a
            # switch on kinds (a v0 kind list, reserved names)
            return bool(elts) and all(_is_kind_value(elt, kinds, constants) for elt in elts)
        case ast.Name(id=name):
            return name in constants
        case ast.Attribute(attr=name):
            return name in constants
        case ast.BinOp(op=ast.Add()) if _folded(node) is not None:
            # ``"jo" + "b"``: a kind spelled in pieces
            return _folded(node) in kinds
        case ast.BinOp(left=left, right=right):
            return _is_kind_value(left, kinds, constants) or _is_kind_value(right, kinds, constants)
        case ast.Call(func=ast.Name(id=builder), args=[arg]) if builder in _SET_BUILDERS:
            return _is_kind_value(arg, kinds, constants)
    return False


def _folded(node: ast.expr) -> str | None:
    """The string a ``+`` of string literals makes, or None when it is not one."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return left + right if left is not None and right is not None else None
    return None


def _assigned(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """``NAME = value`` and ``NAME: T = value`` at module level, and upper-case constants of
    class bodies (compared as ``self.NAME``; a model's ``kind`` field default is no switch)."""
    yield from _body_assignments(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for name, value in _body_assignments(node.body):
                if name.isupper():
                    yield name, value


def _body_assignments(body: list[ast.stmt]) -> Iterator[tuple[str, ast.expr]]:
    for node in body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield from _named(node.target, node.value)


def _named(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    if isinstance(target, ast.Name):
        yield target.id, value


def kind_constants(trees: Iterable[ast.Module], kinds: frozenset[str]) -> frozenset[str]:
    """Names of module constants that hold a kind or kinds, in any of ``trees`` (a constant
    defined in one module is usually compared in another, after an import)."""
    assignments = [pair for tree in trees for pair in _assigned(tree)]
    found: set[str] = set()
    while True:
        more = {
            name
            for name, value in assignments
            if name not in found and _is_kind_value(value, kinds, frozenset(found))
        }
        if not more:
            return frozenset(found)
        found |= more


def _pattern_hits(pattern: ast.pattern, kinds: frozenset[str], shapes: _Shapes) -> bool:
    match pattern:
        case ast.MatchValue(value=ast.Constant(value=str() as value)):
            return value in kinds
        case ast.MatchOr(patterns=patterns):
            return any(_pattern_hits(p, kinds, shapes) for p in patterns)
        case ast.MatchAs(pattern=inner) if inner is not None:
            return _pattern_hits(inner, kinds, shapes)
        case ast.MatchClass(cls=cls):
            return shapes.named(cls)
    return False


@dataclass(frozen=True)
class _Shapes:
    """The shape classes as this module can name them: bare names it imported from ``specs``,
    any attribute spelling (``specs.Dag``)."""

    imported: frozenset[str]
    every: frozenset[str]

    def named(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.imported
        if isinstance(node, ast.Attribute):
            return node.attr in self.every
        return False


def _shape_test(node: ast.Call, shapes: _Shapes) -> bool:
    """``isinstance(x, Dag)`` or ``isinstance(x, (Dag, Job))`` with a shape class."""
    if not (isinstance(node.func, ast.Name) and node.func.id == "isinstance"):
        return False
    if len(node.args) != 2:
        return False
    classes = node.args[1]
    candidates = classes.elts if isinstance(classes, ast.Tuple) else [classes]
    return any(shapes.named(c) for c in candidates)


def _specs_names(tree: ast.Module, shapes: frozenset[str]) -> frozenset[str]:
    """The shape classes this module imports from ``specs`` (so ``collections.abc.Mapping``
    is not mistaken for the ``Mapping`` matrix model)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or module.startswith("polyaxon_prefect.specs"):
                names |= {a.asname or a.name for a in node.names if a.name in shapes}
    return frozenset(names)


def _dispatch_dicts(tree: ast.Module, kinds: frozenset[str]) -> set[int]:
    """Ids of dict literals used as a table: a module or class constant, subscripted or
    ``.get``-ed where it is written, or keyed by two kinds or more wherever it is (a local
    ``{"matrix": None}`` update names a field, not a table)."""
    tables = {id(value) for _, value in _assigned(tree) if isinstance(value, ast.Dict)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.value, ast.Dict):
            tables.add(id(node.value))
        elif isinstance(node, ast.Dict) and len(node.keys) > 1:
            keys = [key for key in node.keys if key is not None]
            if keys and all(_is_kind_value(key, kinds, frozenset()) for key in keys):
                tables.add(id(node))
    return tables


def kind_switches(
    source: str,
    kinds: frozenset[str],
    shapes: frozenset[str],
    constants: frozenset[str] = frozenset(),
) -> list[Switch]:
    """Every kind switch in ``source``.

    ``kinds`` are the kind strings (run kinds, matrix kinds, op shapes), ``shapes`` the class
    names of the models that stand for a kind, ``constants`` names of constants known to hold
    kinds in other modules (this module's own are found here).
    """
    tree = ast.parse(source)
    constants = constants | kind_constants([tree], kinds)
    named = _Shapes(_specs_names(tree, shapes), shapes)
    tables = _dispatch_dicts(tree, kinds)
    found: list[Switch] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_kind_value(o, kinds, constants) for o in operands):
                found.append(Switch(node.lineno, "compared with a kind"))
        elif isinstance(node, ast.Match):
            if any(_pattern_hits(case.pattern, kinds, named) for case in node.cases):
                found.append(Switch(node.lineno, "match on a kind"))
        elif isinstance(node, ast.Dict) and id(node) in tables:
            if any(k is not None and _is_kind_value(k, kinds, frozenset()) for k in node.keys):
                found.append(Switch(node.lineno, "table keyed by kind"))
        elif isinstance(node, ast.Call) and _shape_test(node, named):
            found.append(Switch(node.lineno, "isinstance of a kind's model"))
    return sorted(found, key=lambda switch: switch.line)
