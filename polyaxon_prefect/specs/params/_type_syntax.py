"""IO type strings (spec 2.2): the type vocabulary and a safe parser for type strings.

Polyaxon resolves a type string through pydantic's ``TypeAdapter`` with ``eval``-like forwarding.
We parse the string with a tiny tokenizer instead (names, brackets, commas, ``|``, literals), so
reading a Polyaxonfile never evaluates code. An unknown type string is accepted where it is
declared and only fails when a value has to be checked against it (`parse_value`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "CONSTRAINED",
    "LINEAGE_TYPES",
    "NAMED_TYPES",
    "OBJECT_TYPES",
    "STRICT",
    "TEXT_TYPES",
    "TypeSpec",
    "are_compatible",
    "is_list_type",
    "list_item_type",
    "parse_type",
]

OBJECT_TYPES = frozenset({"git", "artifacts", "dockerfile", "file", "tensorboard", "event"})
"""Types whose values are structured objects (models in ``_types_objects``)."""

TEXT_TYPES = frozenset(
    {"path", "uri", "image", "gcs", "s3", "wasb", "date", "datetime", "time", "timedelta", "uuid",
     "email"}
)  # fmt: skip
"""Types whose values are written as text that their coercion parses (a path, a URI, a date):
a string wherever a value is asked for, e.g. in a flow's typed signature."""

NAMED_TYPES = (
    frozenset({"any", "str", "int", "float", "bool", "dict", "list", "metric", "metadata", "auth",
               "dict_of_dicts"})
    | (TEXT_TYPES - {"time"})  # ``time`` is a leaf Polyaxon reads, not one of its named types
    | OBJECT_TYPES
)  # fmt: skip
"""Polyaxon's named IO types (the v1.x closed enum plus the v2 additions)."""

LINEAGE_TYPES = frozenset(
    {
        "gcs",
        "s3",
        "wasb",
        "dockerfile",
        "git",
        "image",
        "event",
        "artifacts",
        "path",
        "metric",
        "metadata",
    }
)
"""Types whose values Polyaxon records as lineage artifacts."""

_COMPATIBLE_GROUPS = (
    frozenset({"str", "path", "s3", "gcs", "wasb"}),
    frozenset({"float", "metric"}),
)


@dataclass(frozen=True)
class TypeSpec:
    """A parsed type string: ``name`` plus type arguments, or ``known=False`` with the reason.

    ``name`` is canonical (``List``/``list``/``Sequence`` -> ``list``, ``PositiveInt`` stays as
    is, ``Optional[T]`` -> ``union`` of ``T`` and ``none``), so two spellings of the same type
    compare equal. Literal arguments (for ``Literal[...]``) are kept in ``literals``.
    """

    name: str
    args: tuple[TypeSpec, ...] = ()
    literals: tuple[Any, ...] = ()
    known: bool = True
    error: str | None = None

    def __str__(self) -> str:
        if self.name == "literal":
            return "Literal[" + ", ".join(repr(v) for v in self.literals) + "]"
        if self.name == "union":
            return " | ".join(str(a) for a in self.args)
        if self.name == "none":
            return "None"
        if self.args:
            return f"{self.name}[" + ", ".join(str(a) for a in self.args) + "]"
        return self.name


# --------------------------------------------------------------------------- type-string parsing

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>'[^']*'|"[^"]*")
      | (?P<num>-?\d+(?:\.\d+)?)
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
      | (?P<ellipsis>\.\.\.)
      | (?P<punct>[\[\],|])
    )""",
    re.X,
)

# Spellings that mean the same container or scalar.
_ALIASES = {
    "List": "list",
    "Sequence": "list",
    "Iterable": "list",
    "Collection": "list",
    "MutableSequence": "list",
    "Set": "set",
    "FrozenSet": "set",
    "frozenset": "set",
    "Tuple": "tuple",
    "Dict": "dict",
    "Mapping": "dict",
    "MutableMapping": "dict",
    "Optional": "optional",
    "Union": "union",
    "Literal": "literal",
    "Any": "any",
    "None": "none",
    "NoneType": "none",
    "Text": "str",
    "AnyUrl": "uri",
    "HttpUrl": "uri",
    "AnyHttpUrl": "uri",
    "EmailStr": "email",
    "UUID": "uuid",
    "UUID1": "uuid",
    "UUID3": "uuid",
    "UUID4": "uuid",
    "UUID5": "uuid",
    "UUIDStr": "uuid",
    "Path": "path",
    "FilePath": "path",
    "DirectoryPath": "path",
    "GenericStr": "str",
    "Uri": "uri",
    "ImageStr": "image",
    "GcsPath": "gcs",
    "S3Path": "s3",
    "WasbPath": "wasb",
    "SecretStr": "str",
    "Decimal": "float",
}

# a constrained name: (the scalar it parses as, its predicate, the predicate in words)
CONSTRAINED: dict[str, tuple[str, Callable[[Any], bool], str]] = {
    "PositiveInt": ("int", lambda v: v > 0, "greater than 0"),
    "NegativeInt": ("int", lambda v: v < 0, "less than 0"),
    "NonNegativeInt": ("int", lambda v: v >= 0, "greater than or equal to 0"),
    "NonPositiveInt": ("int", lambda v: v <= 0, "less than or equal to 0"),
    "PositiveFloat": ("float", lambda v: v > 0, "greater than 0"),
    "NegativeFloat": ("float", lambda v: v < 0, "less than 0"),
    "NonNegativeFloat": ("float", lambda v: v >= 0, "greater than or equal to 0"),
    "NonPositiveFloat": ("float", lambda v: v <= 0, "less than or equal to 0"),
}
STRICT = {"StrictStr": str, "StrictInt": int, "StrictFloat": float, "StrictBool": bool}
_GENERIC = {"list", "set", "tuple", "dict", "optional", "union", "literal"}
_LEAVES = NAMED_TYPES | set(CONSTRAINED) | set(STRICT) | {"none", "Json", "time"}


class _TypeSyntaxError(ValueError):
    pass


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise _TypeSyntaxError(f"unexpected character {text[pos:].strip()[:1]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise _TypeSyntaxError("unexpected end of the type")
        if value is not None and token[1] != value:
            raise _TypeSyntaxError(f"expected {value!r}, got {token[1]!r}")
        self.pos += 1
        return token

    def union(self) -> TypeSpec:
        members = [self.single()]
        while (token := self.peek()) is not None and token[1] == "|":
            self.take("|")
            members.append(self.single())
        return members[0] if len(members) == 1 else TypeSpec("union", tuple(members))

    def literal_value(self) -> Any:
        kind, value = self.take()
        if kind == "str":
            return value[1:-1]
        if kind == "num":
            return float(value) if "." in value else int(value)
        if kind == "name" and value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[value]
        raise _TypeSyntaxError(f"Literal[...] takes literal values, got {value!r}")

    def single(self) -> TypeSpec:
        kind, value = self.take()
        if kind != "name":
            raise _TypeSyntaxError(f"expected a type name, got {value!r}")
        for prefix in ("typing.", "typing_extensions.", "pydantic.", "datetime.", "uuid.", "t."):
            if value.startswith(prefix):
                value = value[len(prefix) :]
        name = _ALIASES.get(value, value)
        token = self.peek()
        if token is None or token[1] != "[":
            if name not in _LEAVES and name not in _GENERIC:
                raise _TypeSyntaxError(f"unknown type {value!r}")
            if name in ("optional", "union", "literal"):
                raise _TypeSyntaxError(f"{value} needs type arguments: {value}[...]")
            return TypeSpec(name)
        if name not in _GENERIC:
            raise _TypeSyntaxError(f"type {value!r} takes no arguments")
        self.take("[")
        if name == "literal":
            literals = [self.literal_value()]
            while self.peek() is not None and self.peek()[1] == ",":  # type: ignore[index]
                self.take(",")
                literals.append(self.literal_value())
            self.take("]")
            return TypeSpec("literal", literals=tuple(literals))
        args = [self.arg()]
        while self.peek() is not None and self.peek()[1] == ",":  # type: ignore[index]
            self.take(",")
            args.append(self.arg())
        self.take("]")
        return _check_arity(name, value, tuple(args))

    def arg(self) -> TypeSpec:
        token = self.peek()
        if token is not None and token[0] == "ellipsis":
            self.take()
            return TypeSpec("...")
        return self.union()


def _check_arity(name: str, spelled: str, args: tuple[TypeSpec, ...]) -> TypeSpec:
    if any(a.name == "..." for a in args) and not (
        name == "tuple" and len(args) == 2 and args[1].name == "..."
    ):
        raise _TypeSyntaxError("`...` is only allowed as Tuple[T, ...]")
    if name in ("list", "set") and len(args) != 1:
        raise _TypeSyntaxError(f"{spelled}[...] takes one type argument")
    if name == "dict" and len(args) != 2:
        raise _TypeSyntaxError(f"{spelled}[...] takes two type arguments: key and value")
    if name == "optional":
        if len(args) != 1:
            raise _TypeSyntaxError(f"{spelled}[...] takes one type argument")
        return TypeSpec("union", (args[0], TypeSpec("none")))
    return TypeSpec(name, args)


@lru_cache(maxsize=512)
def parse_type(type_str: str | None) -> TypeSpec:
    """Parse a type string (``int``, ``List[float]``, ``Optional[s3]``, ``PositiveInt``...).

    Never raises: an unknown or malformed type gives ``TypeSpec(known=False, error=...)``, which
    only turns into an error once a value is checked against it (see the module docstring).
    ``None`` (no type) is ``any``.
    """
    if type_str is None:
        return TypeSpec("any")
    text = str(type_str).strip()
    try:
        parser = _Parser(_tokenize(text))
        spec = parser.union()
        if parser.peek() is not None:
            raise _TypeSyntaxError(f"unexpected {parser.peek()[1]!r} after the type")  # type: ignore[index]
    except _TypeSyntaxError as exc:
        return TypeSpec(text, known=False, error=str(exc))
    return spec


def is_list_type(type_str: str | None) -> bool:
    """Whether values of this type are lists (``list``, ``List[T]``, ``Set``, ``Tuple``)."""
    return parse_type(type_str).name in ("list", "set", "tuple")


def list_item_type(type_str: str | None) -> str | None:
    """The item type of ``List[T]`` as a string (``None`` for a bare ``list`` or a non-list)."""
    spec = parse_type(type_str)
    if spec.name in ("list", "set") and spec.args:
        return str(spec.args[0])
    return None


def are_compatible(type1: str | None, type2: str | None) -> bool:
    """Whether a value of ``type2`` may feed an IO of ``type1`` (used for DAG refs).

    Identical types, ``any`` on either side, or the same group: {str, path, s3, gcs, wasb} and
    {float, metric}. ``List[float]`` and ``List[metric]`` are compatible item by item.
    """
    if type1 is None or type2 is None:
        return True
    a, b = parse_type(type1), parse_type(type2)
    return _compatible(a, b)


def _compatible(a: TypeSpec, b: TypeSpec) -> bool:
    if a == b or a.name == "any" or b.name == "any":
        return True
    if not a.args and not b.args:
        return any(a.name in group and b.name in group for group in _COMPATIBLE_GROUPS)
    if a.name == b.name and len(a.args) == len(b.args):
        return all(_compatible(x, y) for x, y in zip(a.args, b.args, strict=True))
    return False
