"""Coercing one value to one named IO type (``int``, ``uri``, ``gcs``, ``git``...).

Polyaxon's coercions are kept: strings are JSON-loaded first for numbers, booleans and
containers (``-P lr=0.1``), ``str`` turns scalars into text, ``"3.5"`` is not an ``int``.
``datetime`` is a real datetime here; Polyaxon maps it to ``date`` by mistake.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlparse

__all__ = ["SCALARS", "Mismatch", "json_load", "short", "to_dict", "to_list", "to_object"]


class Mismatch(ValueError):
    """The value does not fit the type (the message says why, without the type's name)."""


def short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_MAX_JSON_DEPTH = 100


def json_load(value: object) -> Any:
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
            raise Mismatch(f"the JSON value is nested more than {_MAX_JSON_DEPTH} levels deep")
        return loaded
    return value


def _depth(value: object) -> int:
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


def _to_int(value: object) -> int:
    loaded = json_load(value)
    if isinstance(loaded, bool):
        raise Mismatch(f"expected an integer, got the boolean {short(value)}")
    if isinstance(loaded, int):
        return loaded
    if isinstance(loaded, float) and loaded.is_integer() and not isinstance(value, str):
        return int(loaded)
    raise Mismatch(f"expected an integer, got {short(value)}")


def _to_float(value: object) -> float:
    loaded = json_load(value)
    if isinstance(loaded, bool):
        raise Mismatch(f"expected a number, got the boolean {short(value)}")
    if isinstance(loaded, int | float):
        return float(loaded)
    if isinstance(loaded, str) and loaded.strip().lower() in ("nan", "inf", "-inf", "+inf"):
        return float(loaded)
    raise Mismatch(f"expected a number, got {short(value)}")


_TRUE = {"true", "yes", "y", "t", "on", "1"}
_FALSE = {"false", "no", "n", "f", "off", "0"}


def _to_bool(value: object) -> bool:
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
    raise Mismatch(f"expected a boolean (true/false, yes/no, 1/0), got {short(value)}")


def _to_str(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    raise Mismatch(f"expected a string, got {short(value)}")


def _strict_str(value: object) -> str:
    if isinstance(value, str):
        return value
    raise Mismatch(f"expected a string, got {short(value)}")


def to_dict(value: object) -> dict[Any, Any]:
    loaded = json_load(value)
    if isinstance(loaded, dict):
        return loaded
    raise Mismatch(f"expected a mapping, got {short(value)}")


def to_list(value: object) -> list[Any]:
    loaded = json_load(value)
    if isinstance(loaded, list | tuple):
        return list(loaded)
    raise Mismatch(f"expected a list, got {short(value)}")


def _to_dict_of_dicts(value: object) -> dict[Any, Any]:
    loaded = to_dict(value)
    for key, item in loaded.items():
        if not isinstance(item, dict):
            raise Mismatch(f"expected a mapping of mappings, `{key}` holds {short(item)}")
    return loaded


def _to_uri(value: object) -> str:
    text = _strict_str(value)
    parsed = urlparse(text)
    if not parsed.scheme or not parsed.netloc:
        raise Mismatch(f"expected a URL such as `https://host/path`, got {short(value)}")
    return text


def _matching(pattern: str, expected: str) -> Callable[[Any], str]:
    """A string that matches ``pattern``; else the mismatch says it ``expected`` it."""
    regex = re.compile(pattern)

    def convert(value: object) -> str:
        text = _strict_str(value)
        if not regex.match(text):
            raise Mismatch(f"expected {expected}, got {short(value)}")
        return text

    return convert


def _bucket_uri(scheme: str, example: str) -> Callable[[Any], str]:
    def convert(value: object) -> str:
        text = _strict_str(value)
        parsed = urlparse(text)
        if parsed.scheme != scheme or not parsed.netloc:
            raise Mismatch(f"expected a path such as `{example}`, got {short(value)}")
        return text

    return convert


_T = TypeVar("_T")


def _from_iso(parse: Callable[[str], _T], value: object, expected: str) -> _T:
    """``value`` as ``parse`` (an ISO 8601 reader) reads it; else the mismatch says it
    ``expected`` it."""
    if isinstance(value, str):
        try:
            return parse(value.strip())
        except ValueError:
            pass
    raise Mismatch(f"expected {expected}, got {short(value)}")


def _to_date(value: object) -> dt.date:
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0) and value.tzinfo is None:
            return value.date()
        raise Mismatch(f"expected a date, got the datetime {value.isoformat()}")
    if isinstance(value, dt.date):
        return value
    return _from_iso(dt.date.fromisoformat, value, "a date such as `2020-01-02`")


def _to_datetime(value: object) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time(0))
    return _from_iso(dt.datetime.fromisoformat, value, "a datetime such as `2020-01-02T10:30:00`")


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


def _to_timedelta(value: object) -> dt.timedelta:
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
    raise Mismatch(f"expected a duration (seconds, `HH:MM:SS` or `P1DT2H`), got {short(value)}")


def _to_uuid(value: object) -> str:
    if isinstance(value, uuid.UUID):
        return str(value)
    text = _strict_str(value)
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise Mismatch(f"expected a UUID, got {short(value)}") from None


def _to_auth(value: object) -> Any:
    """v1's ``auth``: ``user:password`` (or ``{user, password}``)."""
    if isinstance(value, dict) and {"user", "password"} <= set(value):
        return value
    if isinstance(value, str) and ":" in value:
        return value
    raise Mismatch(f"expected `user:password`, got {short(value)}")


def _to_time(value: object) -> dt.time:
    if isinstance(value, dt.time):
        return value
    return _from_iso(dt.time.fromisoformat, value, "a time such as `10:30:00`")


def _to_json(value: object) -> Any:
    if not isinstance(value, str):
        raise Mismatch(f"expected a JSON string, got {short(value)}")
    try:
        return json.loads(value)
    except ValueError:
        raise Mismatch(f"expected a JSON string, got {short(value)}") from None


def _object_model(name: str) -> Any:
    # Imported here: the object models are only needed when such a value is actually checked.
    from polyaxon_prefect.specs.params import _types_objects as objects

    return {
        "git": objects.GitType,
        "artifacts": objects.ArtifactsType,
        "dockerfile": objects.DockerfileType,
        "file": objects.FileType,
        "tensorboard": objects.TensorboardType,
        "event": objects.EventType,
    }[name]


def to_object(name: str, value: object) -> Any:
    from pydantic import BaseModel, ValidationError

    model = _object_model(name)
    if isinstance(value, model):
        return value
    loaded = json_load(value)
    if isinstance(loaded, BaseModel):
        loaded = loaded.model_dump(by_alias=True, exclude_none=True)
    if not isinstance(loaded, dict):
        raise Mismatch(f"expected a `{name}` mapping, got {short(value)}")
    try:
        return model.model_validate(loaded)
    except ValidationError as exc:
        details = "; ".join(
            ".".join(str(p) for p in err["loc"]) + ": " + err["msg"] if err["loc"] else err["msg"]
            for err in exc.errors()
        )
        raise Mismatch(f"not a valid `{name}` value ({details})") from None


SCALARS: dict[str, Callable[[Any], Any]] = {
    "any": lambda v: v,
    "str": _to_str,
    "int": _to_int,
    "float": _to_float,
    "bool": _to_bool,
    "dict": to_dict,
    "list": to_list,
    "path": _strict_str,
    "metric": _to_float,
    "metadata": to_dict,
    "uri": _to_uri,
    "image": _matching(
        r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$", "a docker image such as `repo/name:tag`"
    ),
    "gcs": _bucket_uri("gs", "gs://bucket/blob"),
    "s3": _bucket_uri("s3", "s3://bucket/key"),
    "wasb": _matching(
        r"^wasbs?://[^@/]+@[^/]+\.blob\.core\.windows\.net(/.*)?$",
        "a path such as `wasbs://container@account.blob.core.windows.net/path`",
    ),
    "date": _to_date,
    "datetime": _to_datetime,
    "timedelta": _to_timedelta,
    "uuid": _to_uuid,
    "email": _matching(r"^[^@\s]+@[^@\s]+\.[^@\s]+$", "an email address"),
    "auth": _to_auth,
    "dict_of_dicts": _to_dict_of_dicts,
    "time": _to_time,
    "Json": _to_json,
}
