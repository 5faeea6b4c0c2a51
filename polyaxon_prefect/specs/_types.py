"""IO type strings (spec 2.2): parsing them safely and coercing values to them.

Polyaxon resolves a type string through pydantic's ``TypeAdapter`` with ``eval``-like forwarding.
We parse the string with a tiny tokenizer instead (names, brackets, commas, ``|``, literals), so
reading a Polyaxonfile never evaluates code, and convert values with plain functions, so ``check``
stays fast. Polyaxon's coercions are kept: strings are JSON-loaded first for numbers, booleans and
containers (``-P lr=0.1``), ``str`` turns scalars into text, ``"3.5"`` is not an ``int``.

An unknown type string is accepted where it is declared and only fails when a value has to be
checked against it, as in Polyaxon (which lets component authors declare types from newer
versions). ``datetime`` is a real datetime here; Polyaxon maps it to ``date`` by mistake.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlparse

__all__ = [
    "LINEAGE_TYPES",
    "NAMED_TYPES",
    "OBJECT_TYPES",
    "TypeSpec",
    "are_compatible",
    "is_list_type",
    "list_item_type",
    "parse_type",
    "parse_value",
]

OBJECT_TYPES = frozenset({"git", "artifacts", "dockerfile", "file", "tensorboard", "event"})
"""Types whose values are structured objects (models in ``_types_objects``)."""

NAMED_TYPES = frozenset(
    {
        "any",
        "str",
        "int",
        "float",
        "bool",
        "dict",
        "list",
        "path",
        "metric",
        "metadata",
        "uri",
        "image",
        "gcs",
        "s3",
        "wasb",
        "date",
        "datetime",
        "timedelta",
        "uuid",
        "email",
        "auth",
        "dict_of_dicts",
        *OBJECT_TYPES,
    }
)
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

_CONSTRAINED = {
    "PositiveInt": ("int", lambda v: v > 0, "greater than 0"),
    "NegativeInt": ("int", lambda v: v < 0, "less than 0"),
    "NonNegativeInt": ("int", lambda v: v >= 0, "greater than or equal to 0"),
    "NonPositiveInt": ("int", lambda v: v <= 0, "less than or equal to 0"),
    "PositiveFloat": ("float", lambda v: v > 0, "greater than 0"),
    "NegativeFloat": ("float", lambda v: v < 0, "less than 0"),
    "NonNegativeFloat": ("float", lambda v: v >= 0, "greater than or equal to 0"),
    "NonPositiveFloat": ("float", lambda v: v <= 0, "less than or equal to 0"),
}
_STRICT = {"StrictStr": str, "StrictInt": int, "StrictFloat": float, "StrictBool": bool}
_GENERIC = {"list", "set", "tuple", "dict", "optional", "union", "literal"}
_LEAVES = NAMED_TYPES | set(_CONSTRAINED) | set(_STRICT) | {"none", "Json", "time"}


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


# --------------------------------------------------------------------------- value conversion


class _Mismatch(ValueError):
    """The value does not fit the type (the message says why, without the type's name)."""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_MAX_JSON_DEPTH = 100


def _json_load(value: Any) -> Any:
    """``-P x=...`` values arrive as strings: read JSON first, keep the string otherwise.

    JSON nested deeper than 100 levels is refused (Python's JSON reader would raise
    ``RecursionError`` on a few thousand, and deep data breaks everything after it)."""
    if isinstance(value, str):
        try:
            loaded = json.loads(value)
        except ValueError:
            return value
        except RecursionError:
            loaded = None
        if (loaded is None and value.strip() != "null") or _depth(loaded) > _MAX_JSON_DEPTH:
            raise _Mismatch(f"the JSON value is nested more than {_MAX_JSON_DEPTH} levels deep")
        return loaded
    return value


def _depth(value: Any) -> int:
    """How deep lists and mappings nest in ``value`` (without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level <= _MAX_JSON_DEPTH:
                children = item.values() if isinstance(item, dict) else item
                stack.extend((child, level + 1) for child in children)
    return deepest


def _to_int(value: Any) -> int:
    loaded = _json_load(value)
    if isinstance(loaded, bool):
        raise _Mismatch(f"expected an integer, got the boolean {_short(value)}")
    if isinstance(loaded, int):
        return loaded
    if isinstance(loaded, float) and loaded.is_integer() and not isinstance(value, str):
        return int(loaded)
    raise _Mismatch(f"expected an integer, got {_short(value)}")


def _to_float(value: Any) -> float:
    loaded = _json_load(value)
    if isinstance(loaded, bool):
        raise _Mismatch(f"expected a number, got the boolean {_short(value)}")
    if isinstance(loaded, int | float):
        return float(loaded)
    if isinstance(loaded, str) and loaded.strip().lower() in ("nan", "inf", "-inf", "+inf"):
        return float(loaded)
    raise _Mismatch(f"expected a number, got {_short(value)}")


_TRUE = {"true", "yes", "y", "t", "on", "1"}
_FALSE = {"false", "no", "n", "f", "off", "0"}


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    raise _Mismatch(f"expected a boolean (true/false, yes/no, 1/0), got {_short(value)}")


def _to_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    raise _Mismatch(f"expected a string, got {_short(value)}")


def _strict_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _Mismatch(f"expected a string, got {_short(value)}")


def _to_dict(value: Any) -> dict[Any, Any]:
    loaded = _json_load(value)
    if isinstance(loaded, dict):
        return loaded
    raise _Mismatch(f"expected a mapping, got {_short(value)}")


def _to_list(value: Any) -> list[Any]:
    loaded = _json_load(value)
    if isinstance(loaded, list | tuple):
        return list(loaded)
    raise _Mismatch(f"expected a list, got {_short(value)}")


def _to_dict_of_dicts(value: Any) -> dict[Any, Any]:
    loaded = _to_dict(value)
    for key, item in loaded.items():
        if not isinstance(item, dict):
            raise _Mismatch(f"expected a mapping of mappings, `{key}` holds {_short(item)}")
    return loaded


def _to_uri(value: Any) -> str:
    text = _strict_str(value)
    parsed = urlparse(text)
    if not parsed.scheme or not parsed.netloc:
        raise _Mismatch(f"expected a URL such as `https://host/path`, got {_short(value)}")
    return text


_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$")


def _to_image(value: Any) -> str:
    text = _strict_str(value)
    if not _IMAGE.match(text):
        raise _Mismatch(f"expected a docker image such as `repo/name:tag`, got {_short(value)}")
    return text


def _bucket_uri(scheme: str, example: str) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        text = _strict_str(value)
        parsed = urlparse(text)
        if parsed.scheme != scheme or not parsed.netloc:
            raise _Mismatch(f"expected a path such as `{example}`, got {_short(value)}")
        return text

    return convert


_WASB = re.compile(r"^wasbs?://[^@/]+@[^/]+\.blob\.core\.windows\.net(/.*)?$")


def _to_wasb(value: Any) -> str:
    text = _strict_str(value)
    if not _WASB.match(text):
        raise _Mismatch(
            "expected a path such as `wasbs://container@account.blob.core.windows.net/path`, "
            f"got {_short(value)}"
        )
    return text


def _to_date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0) and value.tzinfo is None:
            return value.date()
        raise _Mismatch(f"expected a date, got the datetime {value.isoformat()}")
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise _Mismatch(f"expected a date such as `2020-01-02`, got {_short(value)}")


def _to_datetime(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time(0))
    if isinstance(value, str):
        try:
            return dt.datetime.fromisoformat(value.strip())
        except ValueError:
            pass
    raise _Mismatch(f"expected a datetime such as `2020-01-02T10:30:00`, got {_short(value)}")


_ISO_DURATION = re.compile(
    r"^(?P<sign>[-+]?)P(?:(?P<weeks>\d+(?:\.\d+)?)W)?(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$",
    re.I,
)
_CLOCK_DURATION = re.compile(
    r"^(?P<sign>[-+]?)(?:(?P<days>\d+)\s*(?:d|days?),?\s*)?"
    r"(?:(?:(?P<hours>\d+):)?(?P<minutes>\d+):)?(?P<seconds>\d+(?:\.\d+)?)$",
    re.I,
)


def _to_timedelta(value: Any) -> dt.timedelta:
    if isinstance(value, dt.timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return dt.timedelta(seconds=value)
    if isinstance(value, str):
        text = value.strip()
        match = _ISO_DURATION.match(text) if text.upper().lstrip("+-").startswith("P") else None
        match = match or _CLOCK_DURATION.match(text)
        if match and any(v for k, v in match.groupdict().items() if k != "sign"):
            parts = {k: float(v) for k, v in match.groupdict().items() if v and k != "sign"}
            delta = dt.timedelta(**parts)
            return -delta if match.group("sign") == "-" else delta
    raise _Mismatch(f"expected a duration (seconds, `HH:MM:SS` or `P1DT2H`), got {_short(value)}")


def _to_uuid(value: Any) -> str:
    if isinstance(value, uuid.UUID):
        return str(value)
    text = _strict_str(value)
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise _Mismatch(f"expected a UUID, got {_short(value)}") from None


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _to_email(value: Any) -> str:
    text = _strict_str(value)
    if not _EMAIL.match(text):
        raise _Mismatch(f"expected an email address, got {_short(value)}")
    return text


def _to_auth(value: Any) -> Any:
    """v1's ``auth``: ``user:password`` (or ``{user, password}``)."""
    if isinstance(value, dict) and {"user", "password"} <= set(value):
        return value
    if isinstance(value, str) and ":" in value:
        return value
    raise _Mismatch(f"expected `user:password`, got {_short(value)}")


def _to_time(value: Any) -> dt.time:
    if isinstance(value, dt.time):
        return value
    if isinstance(value, str):
        try:
            return dt.time.fromisoformat(value.strip())
        except ValueError:
            pass
    raise _Mismatch(f"expected a time such as `10:30:00`, got {_short(value)}")


def _to_json(value: Any) -> Any:
    if not isinstance(value, str):
        raise _Mismatch(f"expected a JSON string, got {_short(value)}")
    try:
        return json.loads(value)
    except ValueError:
        raise _Mismatch(f"expected a JSON string, got {_short(value)}") from None


def _object_model(name: str) -> Any:
    # Imported here: the object models are only needed when such a value is actually checked.
    from . import _types_objects as objects

    return {
        "git": objects.GitType,
        "artifacts": objects.ArtifactsType,
        "dockerfile": objects.DockerfileType,
        "file": objects.FileType,
        "tensorboard": objects.TensorboardType,
        "event": objects.EventType,
    }[name]


def _to_object(name: str, value: Any) -> Any:
    from pydantic import BaseModel, ValidationError

    model = _object_model(name)
    if isinstance(value, model):
        return value
    loaded = _json_load(value)
    if isinstance(loaded, BaseModel):
        loaded = loaded.model_dump(by_alias=True, exclude_none=True)
    if not isinstance(loaded, dict):
        raise _Mismatch(f"expected a `{name}` mapping, got {_short(value)}")
    try:
        return model.model_validate(loaded)
    except ValidationError as exc:
        details = "; ".join(
            ".".join(str(p) for p in err["loc"]) + ": " + err["msg"] if err["loc"] else err["msg"]
            for err in exc.errors()
        )
        raise _Mismatch(f"not a valid `{name}` value ({details})") from None


_SCALARS: dict[str, Callable[[Any], Any]] = {
    "any": lambda v: v,
    "str": _to_str,
    "int": _to_int,
    "float": _to_float,
    "bool": _to_bool,
    "dict": _to_dict,
    "list": _to_list,
    "path": _strict_str,
    "metric": _to_float,
    "metadata": _to_dict,
    "uri": _to_uri,
    "image": _to_image,
    "gcs": _bucket_uri("gs", "gs://bucket/blob"),
    "s3": _bucket_uri("s3", "s3://bucket/key"),
    "wasb": _to_wasb,
    "date": _to_date,
    "datetime": _to_datetime,
    "timedelta": _to_timedelta,
    "uuid": _to_uuid,
    "email": _to_email,
    "auth": _to_auth,
    "dict_of_dicts": _to_dict_of_dicts,
    "time": _to_time,
    "Json": _to_json,
}


def _convert(spec: TypeSpec, value: Any) -> Any:
    name = spec.name
    if name == "none":
        if value is None:
            return None
        raise _Mismatch(f"expected null, got {_short(value)}")
    if name == "union":
        if value is None and any(a.name == "none" for a in spec.args):
            return None
        errors = []
        for member in spec.args:
            try:
                return _convert(member, value)
            except _Mismatch as exc:
                errors.append(str(exc))
        raise _Mismatch(f"{_short(value)} matches none of {spec}: " + "; ".join(errors))
    if name == "literal":
        loaded = _json_load(value) if not any(isinstance(v, str) for v in spec.literals) else value
        for option in spec.literals:
            if loaded == option and type(loaded) is type(option):
                return option
        raise _Mismatch(f"expected one of {list(spec.literals)}, got {_short(value)}")
    if name in ("list", "set", "tuple"):
        items = _to_list(value)
        variadic = len(spec.args) == 2 and spec.args[1].name == "..."
        if name == "tuple" and spec.args and not variadic:
            if len(items) != len(spec.args):
                raise _Mismatch(f"expected {len(spec.args)} items, got {len(items)}")
            return [_item(i, a, v) for i, (a, v) in enumerate(zip(spec.args, items, strict=True))]
        item_type = spec.args[0] if spec.args else None
        out = [_item(i, item_type, v) for i, v in enumerate(items)] if item_type else items
        if name == "set":
            unique: list[Any] = []
            for item in out:
                if item not in unique:
                    unique.append(item)
            return unique
        return out
    if name == "dict":
        mapping = _to_dict(value)
        if not spec.args:
            return mapping
        key_type, value_type = spec.args
        result = {}
        for key, item in mapping.items():
            try:
                new_key = _convert(key_type, key)
            except _Mismatch as exc:
                raise _Mismatch(f"key {_short(key)}: {exc}") from None
            try:
                result[new_key] = _convert(value_type, item)
            except _Mismatch as exc:
                raise _Mismatch(f"at key {_short(key)}: {exc}") from None
        return result
    if name in _CONSTRAINED:
        base, predicate, wording = _CONSTRAINED[name]
        number = _SCALARS[base](value)
        if not predicate(number):
            raise _Mismatch(f"expected a value {wording}, got {_short(value)}")
        return number
    if name in _STRICT:
        expected = _STRICT[name]
        if type(value) is expected or (expected is float and type(value) is int):
            return float(value) if expected is float and isinstance(value, int) else value
        raise _Mismatch(f"expected exactly a {expected.__name__}, got {_short(value)}")
    if name in OBJECT_TYPES:
        return _to_object(name, value)
    return _SCALARS[name](value)


def _item(index: int, spec: TypeSpec | None, value: Any) -> Any:
    if spec is None:
        return value
    try:
        return _convert(spec, value)
    except _Mismatch as exc:
        raise _Mismatch(f"item {index}: {exc}") from None


def parse_value(type_str: str | None, value: Any, *, is_list: bool = False) -> Any:
    """Coerce ``value`` to the IO type ``type_str`` (``isList`` wraps it in ``List[...]``).

    Returns the typed value (structured types come back as their models, sets and tuples as
    lists). ``None`` is returned as is: whether it is allowed depends on the IO being optional.

    Raises:
        ValueError: the value does not fit, or the type is unknown (the message says which).
    """
    if value is None:
        return None
    spec = parse_type(type_str)
    if not spec.known:
        raise ValueError(f"cannot check the value against type `{type_str}`: {spec.error}")
    if is_list:
        spec = TypeSpec("list", (spec,))
    try:
        return _convert(spec, value)
    except _Mismatch as exc:
        raise ValueError(str(exc)) from None
