"""Turn pydantic validation errors into located, readable `Problem`s.

Pydantic speaks in ``loc`` tuples that mix data keys with union-member labels (``int``,
``function-after[...]``, discriminator tags). Users speak in YAML lines. This module walks each
``loc`` against the data that was validated, keeps only the steps that exist in the data, and
asks `Positions` where that path starts in the file. Errors that differ only by union member are
merged into one sentence, and unknown keys get a "did you mean" hint from the model's fields.

Validators can point below the field they validate: a `PydanticCustomError` whose context has
``at`` (a key, an index, or a list of them) is located at that entry, and ``hint`` becomes the
problem's hint.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from polyaxon_prefect._source._located_yaml import Positions
from polyaxon_prefect.exceptions import NO_VALUE, Problem

__all__ = ["problems_from_validation_error", "suggest"]

_MISSING = object()


def suggest(word: str, candidates: Sequence[str]) -> str | None:
    """The closest candidate to ``word``, for "did you mean" hints."""
    matches = difflib.get_close_matches(str(word), list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _data_path(data: object, loc: Sequence[str | int]) -> tuple[tuple[str | int, ...], Any, bool]:
    """Walk ``loc`` through ``data``; return the data path, the value there, and whether the
    whole loc was consumed by data steps (False when the last step is a missing key)."""
    path: list[str | int] = []
    current = data
    found = True
    for index, step in enumerate(loc):
        if isinstance(current, dict) and step in current:
            current = current[step]
            path.append(step)
        elif (
            isinstance(current, dict)
            and isinstance(step, str)
            and (key := _snake_hit(current, step)) is not None
        ):
            current = current[key]
            path.append(key)
        elif isinstance(current, list) and isinstance(step, int) and 0 <= step < len(current):
            current = current[step]
            path.append(step)
        elif (
            index == len(loc) - 1
            and isinstance(current, dict)
            and isinstance(step, str)
            and current.get("kind") != step  # a model validator's loc ends at its union tag
        ):
            # the last step names a key that is absent: a missing field
            path.append(step)
            current = _MISSING
            found = False
        # else: a union member label or discriminator tag, not part of the data: skip it
    return tuple(path), current, found


def _snake_hit(mapping: dict[Any, Any], step: str) -> str | None:
    """Pydantic reports camelCase aliases; users may have written snake_case (or vice versa)."""
    from pydantic.alias_generators import to_camel, to_snake

    for candidate in (to_camel(step), to_snake(step)):
        if candidate in mapping:
            return candidate
    return None


def _unwrap(tp: object) -> list[Any]:
    """The concrete alternatives of a type annotation (Annotated, Optional and unions removed)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        args = typing.get_args(tp)
        lazy = _lazy_model(args[1:])
        return [lazy] if lazy is not None else _unwrap(args[0])
    if origin in (typing.Union, types.UnionType):
        out: list[Any] = []
        for arg in typing.get_args(tp):
            out.extend(_unwrap(arg))
        return out
    return [tp]


def _kind_of(model: type[BaseModel]) -> str | None:
    field = model.model_fields.get("kind")
    if field is None:
        return None
    args = typing.get_args(field.annotation)
    return str(args[0]) if args else None


def _lazy_model(metadata: Sequence[Any]) -> Any:
    """The model a lazily imported reference (``specs.lazy_model``) stands for, found by its
    ``resolve_model`` method; None when ``metadata`` holds no such reference."""
    for item in metadata:
        resolve = getattr(item, "resolve_model", None)
        if callable(resolve):
            return resolve()
    return None


def _field_by_key(model: type[BaseModel], key: str) -> Any:
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            lazy = _lazy_model(field.metadata)
            return lazy if lazy is not None else field.annotation
    return _MISSING


def _allowed_keys(root: object, loc: Sequence[str | int]) -> list[str]:
    """The keys the model at ``loc[:-1]`` accepts, found by walking type annotations."""
    candidates = _unwrap(root)
    for step in loc[:-1]:
        nxt: list[Any] = []
        for tp in candidates:
            origin = typing.get_origin(tp)
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                if isinstance(step, str):
                    annotation = _field_by_key(tp, step)
                    if annotation is not _MISSING:
                        nxt.extend(_unwrap(annotation))
                    elif _kind_of(tp) == step or tp.__name__ == step:
                        nxt.append(tp)
            elif origin in (list, tuple, Sequence) and isinstance(step, int):
                nxt.extend(_unwrap(typing.get_args(tp)[0]))
            elif origin is dict and isinstance(step, str):
                args = typing.get_args(tp)
                if len(args) == 2:
                    nxt.extend(_unwrap(args[1]))
        if not nxt:
            # a union label (e.g. a discriminator tag): keep the current candidates
            if isinstance(step, str):
                kept = [
                    tp
                    for tp in candidates
                    if isinstance(tp, type)
                    and issubclass(tp, BaseModel)
                    and (_kind_of(tp) == step or tp.__name__ == step)
                ]
                nxt = kept or candidates
            else:
                return []
        candidates = nxt
    models = [tp for tp in candidates if isinstance(tp, type) and issubclass(tp, BaseModel)]
    if len(models) != 1:
        return []
    return [field.alias or name for name, field in models[0].model_fields.items()]


def _says_value(message: str, value: object) -> bool:
    """Whether ``message`` already quotes the value (``..., got -2``): say a value once."""
    return any(f"got {shown}" in message for shown in {_short(value), str(value), repr(value)})


def _reported_value(value: object, rule: str) -> Any:
    """The value a problem carries (``check --json``): none for an unknown key, whose value may
    be anything, a secret of a file a ``pathRef`` pointed at included; long strings cut."""
    if value is _MISSING or rule == "extra_forbidden":
        return NO_VALUE
    if isinstance(value, str) and len(value) > 200:
        return value[:197] + "..."
    return value


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _message(error: ErrorDetails, root: object, value: object) -> tuple[str, str | None]:
    kind = error["type"]
    loc = error["loc"]
    ctx = error.get("ctx") or {}
    hint = ctx.get("hint")
    last = loc[-1] if loc else None
    if kind == "extra_forbidden":
        allowed = _allowed_keys(root, loc)
        close = suggest(str(last), allowed) if allowed else None
        message = f"unknown key `{last}`"
        if close:
            hint = f"did you mean `{close}`?"
        elif allowed:
            hint = "allowed keys here: " + ", ".join(sorted(allowed))
        return message, hint
    if kind == "missing":
        return f"required field `{last}` is missing", hint
    if kind == "union_tag_invalid":
        tag = ctx.get("tag")
        options = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",")]
        close = suggest(str(tag), options)
        discriminator = str(ctx.get("discriminator", "kind")).strip("'")
        message = f"unknown {discriminator} `{tag}`; expected one of {', '.join(options)}"
        return message, (f"did you mean `{close}`?" if close else hint)
    if kind == "union_tag_not_found":
        discriminator = str(ctx.get("discriminator", "kind")).strip("'")
        return f"`{discriminator}` is required here to tell which kind of object this is", hint
    msg = str(error.get("msg", "invalid value"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    msg = msg[:1].lower() + msg[1:]
    return msg, hint


def problems_from_validation_error(
    exc: ValidationError,
    data: object,
    positions: Positions,
    *,
    root: object = None,
    prefix: tuple[str | int, ...] = (),
) -> list[Problem]:
    """Every error of ``exc`` as a located `Problem`, union-member duplicates merged.

    ``data`` is what was validated, ``positions`` where its pieces came from, ``prefix`` the path
    of ``data`` inside the positions' document, and ``root`` the validated type (for hints).
    """
    grouped: dict[tuple[str | int, ...], list[tuple[str, str | None, str, Any]]] = {}
    order: list[tuple[str | int, ...]] = []
    for error in exc.errors(include_url=False):
        path, value, found = _data_path(data, error["loc"])
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            # point at the `kind` key itself, and show the bad tag rather than the whole object
            discriminator = str((error.get("ctx") or {}).get("discriminator", "kind")).strip("'")
            if isinstance(value, dict) and discriminator in value:
                path = (*path, discriminator)
                value = value[discriminator]
        at = (error.get("ctx") or {}).get("at")
        if at is not None:
            # a model-level validator that knows which entry is at fault says so with ctx["at"]
            for step in at if isinstance(at, list | tuple) else (at,):
                in_dict = isinstance(value, dict) and step in value
                in_list = isinstance(value, list) and isinstance(step, int) and step < len(value)
                if in_dict or in_list:
                    value = value[step]
                    path = (*path, step)
        if error["type"] == "extra_forbidden" and error["loc"]:
            value = error.get("input", value)
        message, hint = _message(error, root, value)
        if path not in grouped:
            grouped[path] = []
            order.append(path)
        grouped[path].append((message, hint, error["type"], value if found else _MISSING))
    problems: list[Problem] = []
    for path in order:
        entries = grouped[path]
        messages: list[str] = []
        for message, *_ in entries:
            if message not in messages:
                messages.append(message)
        hint = next((h for _, h, _, _ in entries if h), None)
        rule = entries[0][2] if len({e[2] for e in entries}) == 1 else "union"
        value = entries[0][3]
        if len(messages) > 1:
            # one value failed every member of a union: say what would have been accepted
            if any("template" in m for m in messages):
                messages = [m for m in messages if "template" not in m] or messages
                hint = hint or "a `{{ template }}` string is accepted here too"
            message = " or ".join(messages)
        else:
            message = messages[0]
        if (
            value is not _MISSING
            and rule not in ("extra_forbidden", "missing", "union_tag_invalid")
            and not _says_value(message, value)
        ):
            message = f"{message} (got {_short(value)})"
        full_path = prefix + path
        line, column = positions.find(full_path)
        problems.append(
            Problem(
                message,
                rule=rule,
                path=full_path,
                file=positions.file,
                line=line,
                column=column,
                value=_reported_value(value, rule),
                hint=hint,
            )
        )
    return problems
