"""IO type strings (spec 2.2): parsing them safely and coercing values to them.

Polyaxon resolves a type string through pydantic's ``TypeAdapter`` with ``eval``-like forwarding.
We parse the string with a tiny tokenizer instead (names, brackets, commas, ``|``, literals), so
reading a Polyaxonfile never evaluates code, and convert values with plain functions, so ``check``
stays fast. Polyaxon's coercions are kept: strings are JSON-loaded first for numbers, booleans and
containers (``-P lr=0.1``), ``str`` turns scalars into text, ``"3.5"`` is not an ``int``.

An unknown type string is accepted where it is declared and only fails when a value has to be
checked against it, as in Polyaxon (which lets component authors declare types from newer
versions). ``datetime`` is a real datetime here; Polyaxon maps it to ``date`` by mistake.

The parser lives in `_type_syntax` and the one-value coercions in `_type_coercions`; this module
converts a value to a whole type (lists, unions, dicts, constrained and strict types) and is the
one the rest of the package imports.
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.specs.params._type_coercions import (
    SCALARS,
    Mismatch,
    json_load,
    short,
    to_dict,
    to_list,
    to_object,
)
from polyaxon_prefect.specs.params._type_syntax import (
    CONSTRAINED,
    LINEAGE_TYPES,
    NAMED_TYPES,
    OBJECT_TYPES,
    STRICT,
    TEXT_TYPES,
    TypeSpec,
    are_compatible,
    is_list_type,
    list_item_type,
    parse_type,
)

__all__ = [
    "LINEAGE_TYPES",
    "NAMED_TYPES",
    "OBJECT_TYPES",
    "TEXT_TYPES",
    "TypeSpec",
    "are_compatible",
    "is_list_type",
    "list_item_type",
    "parse_type",
    "parse_value",
]


def _convert(spec: TypeSpec, value: object) -> Any:
    name = spec.name
    if name == "none":
        if value is None:
            return None
        raise Mismatch(f"expected null, got {short(value)}")
    if name == "union":
        if value is None and any(a.name == "none" for a in spec.args):
            return None
        errors = []
        for member in spec.args:
            try:
                return _convert(member, value)
            except Mismatch as exc:
                errors.append(str(exc))
        raise Mismatch(f"{short(value)} matches none of {spec}: " + "; ".join(errors))
    if name == "literal":
        loaded = json_load(value) if not any(isinstance(v, str) for v in spec.literals) else value
        for option in spec.literals:
            if loaded == option and type(loaded) is type(option):
                return option
        raise Mismatch(f"expected one of {list(spec.literals)}, got {short(value)}")
    if name in ("list", "set", "tuple"):
        items = to_list(value)
        variadic = len(spec.args) == 2 and spec.args[1].name == "..."
        if name == "tuple" and spec.args and not variadic:
            if len(items) != len(spec.args):
                raise Mismatch(f"expected {len(spec.args)} items, got {len(items)}")
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
        mapping = to_dict(value)
        if not spec.args:
            return mapping
        key_type, value_type = spec.args
        result = {}
        for key, item in mapping.items():
            try:
                new_key = _convert(key_type, key)
            except Mismatch as exc:
                raise Mismatch(f"key {short(key)}: {exc}") from None
            try:
                result[new_key] = _convert(value_type, item)
            except Mismatch as exc:
                raise Mismatch(f"at key {short(key)}: {exc}") from None
        return result
    if name in CONSTRAINED:
        base, predicate, wording = CONSTRAINED[name]
        number = SCALARS[base](value)
        if not predicate(number):
            raise Mismatch(f"expected a value {wording}, got {short(value)}")
        return number
    if name in STRICT:
        expected = STRICT[name]
        if type(value) is expected or (expected is float and type(value) is int):
            return float(value) if expected is float and isinstance(value, int) else value
        raise Mismatch(f"expected exactly a {expected.__name__}, got {short(value)}")
    if name in OBJECT_TYPES:
        return to_object(name, value)
    return SCALARS[name](value)


def _item(index: int, spec: TypeSpec | None, value: object) -> Any:
    if spec is None:
        return value
    try:
        return _convert(spec, value)
    except Mismatch as exc:
        raise Mismatch(f"item {index}: {exc}") from None


def parse_value(type_str: str | None, value: object, *, is_list: bool = False) -> Any:
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
    except Mismatch as exc:
        raise ValueError(str(exc)) from None
