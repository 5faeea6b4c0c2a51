"""Which rows a parsed query keeps, and in what order a sort spec puts them.

A row is a plain dict with the columns `FIELDS` names: ``id`` and ``uuid`` (strings), ``name``,
``status``, ``kind``, ``tags`` (a list), ``created_at``/``started_at``/``finished_at`` (aware
datetimes or None), ``duration`` (seconds or None), and ``params``/``outputs``/``metrics``
(dicts; values as recorded, numbers in text read as numbers).

A value a run does not have (None, or a name its dict lacks) meets only ``nil``, negated or
not otherwise: as in Polyaxon's SQL, ``metrics.loss:~<0.2`` does not keep a run with no loss.
Text comparisons of ``%`` patterns ignore case (Polyaxon's are ``icontains``-like).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from polyaxon_prefect.query._grammar import Condition, SortKey, Span

__all__ = ["matches", "row_value", "select", "sort_rows"]

_MISSING: Any = object()


def row_value(row: dict[str, Any], column: str, key: str | None) -> Any:
    """The value of ``column`` (``key`` inside it, for params/outputs/metrics); None: none."""
    value = row.get(column)
    if key is not None:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def _decoded(value: object) -> Any:
    """A recorded value as a number where its text is one (a param table stores text)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _numeric(value: object) -> float | None:
    value = _decoded(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def _equal(actual: object, wanted: object, text: str) -> bool:
    if _text(actual) == text:
        return True
    left, right = _numeric(actual), _numeric(wanted)
    if left is not None and right is not None:
        return left == right
    return bool(_decoded(actual) == wanted)


def _ordered(op: str, left: Any, right: Any) -> bool:
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _compare(op: str, actual: object, wanted: object) -> bool | None:
    """``actual op wanted`` for numbers or texts alike; None where they do not compare."""
    left, right = _numeric(actual), _numeric(wanted)
    if left is not None and right is not None:
        return _ordered(op, left, right)
    if isinstance(actual, str) and isinstance(wanted, str):
        return _ordered(op, actual, wanted)
    return None


def _on_date(op: str, moment: datetime, values: tuple[Any, ...]) -> bool:
    span: Span = values[0]
    if op == "=":
        return span.start <= moment < span.end
    if op == "..":
        last: Span = values[1]
        return span.start <= moment < last.end
    if op == "<":
        return moment < span.start
    if op == "<=":
        return moment < span.end
    if op == ">":
        return moment >= span.end
    return moment >= span.start


def _like(op: str, actual: str, part: str) -> bool:
    actual, part = actual.lower(), part.lower()
    if op == "%%":
        return part in actual
    if op == "_%":
        return actual.startswith(part)
    return actual.endswith(part)


def _one(condition: Condition, actual: object) -> bool | None:
    """Whether the single value ``actual`` meets ``condition`` (before negation); None: it
    cannot say (no such value, or not comparable), which keeps no row either way."""
    op, values, texts = condition.op, condition.values, condition.texts
    if actual is None:
        return None
    if condition.kind == "datetime":
        return _on_date(op, actual, values) if isinstance(actual, datetime) else None
    if op in ("%%", "_%", "%_"):
        return _like(op, _text(actual), values[0])
    if op == "=":
        return _equal(actual, values[0], texts[0])
    if op == "|":
        return any(_equal(actual, v, t) for v, t in zip(values, texts, strict=True))
    return _compare(op, actual, values[0])


def _ids(row: dict[str, Any]) -> list[str]:
    """The ids a run answers to: its flow-run id and its Polyaxon uuid, without dashes."""
    return [str(v).replace("-", "").lower() for v in (row.get("id"), row.get("uuid")) if v]


def matches(row: dict[str, Any], conditions: Iterable[Condition]) -> bool:
    """Whether ``row`` meets every condition."""
    for condition in conditions:
        candidates: list[Any]
        if condition.column == "id":
            normal = tuple(t.replace("-", "").lower() for t in condition.texts)
            condition = replace(condition, values=normal, texts=normal)
            candidates = _ids(row)
        else:
            actual = row_value(row, condition.column, condition.key)
            candidates = list(actual) if isinstance(actual, list) else [actual]
            candidates = [value for value in candidates if value is not None]
        if condition.op == "nil":
            if bool(candidates) != condition.negation:
                return False
            continue
        results = [_one(condition, value) for value in candidates]
        if condition.column in ("tags", "id"):
            # a list field meets `=`/`|` when one of its items does; `~` when none does
            met: bool | None = any(r is True for r in results)
        else:
            met = results[0] if results else None
        if met is None or met == condition.negation:
            return False
    return True


def select(rows: Iterable[dict[str, Any]], conditions: Iterable[Condition]) -> list[dict[str, Any]]:
    """The rows that meet every condition, in their order."""
    conditions = tuple(conditions)
    return [row for row in rows if matches(row, conditions)]


def _sortable(value: object) -> tuple[int, Any]:
    """A key that orders numbers (by value), then dates, then texts, never raising."""
    number = _numeric(value)
    if number is not None:
        return 0, number
    if isinstance(value, datetime):
        return 1, value.timestamp()
    return 2, _text(value)


def sort_rows(rows: Iterable[dict[str, Any]], keys: Iterable[SortKey]) -> list[dict[str, Any]]:
    """``rows`` ordered by ``keys`` (the first key first; ties keep their order). Rows without
    a key's value come after those with one, ascending or descending."""
    ordered = list(rows)
    for key in reversed(tuple(keys)):
        present = [r for r in ordered if row_value(r, key.column, key.key) is not None]
        missing = [r for r in ordered if row_value(r, key.column, key.key) is None]
        present.sort(
            key=lambda r: _sortable(row_value(r, key.column, key.key)),
            reverse=key.descending,
        )
        ordered = present + missing
    return ordered
