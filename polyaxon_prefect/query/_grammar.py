"""Polyaxon's query and sort specs (``ops ls -q ... -s ...``), parsed into plain conditions.

The subset of Polyaxon's query language (PQL) that a run read back from Prefect can answer:

* a query is conditions separated by ``,`` (or the word ``AND``), all of which must hold;
* a condition is ``field:operation``; ``~`` before the operation negates it;
* ``nil`` (the field has no value), ``a|b|c`` (one of), ``<``, ``<=``, ``>``, ``>=``,
  ``a .. b`` (a range, for dates), ``%foo%``, ``foo%``, ``%foo`` (contains, starts with, ends
  with: for ``name`` and ids), else equality;
* each field takes the operations of its condition kind, as Polyaxon's runs query does:
  ``value`` (status, kind, tags, params.*, outputs.*), ``search`` (name, id/uuid), ``scalar``
  (metrics.*, duration) and ``datetime`` (created_at, started_at, finished_at).

``OR`` and parentheses (Polyaxon 2.x's boolean grammar) are refused with their position rather
than read as part of a value. Every error is a `QueryError` that says where (1-based character
of the query) and what; the CLI turns it into one usage line.

Pure and standard library only (the status words are `client`'s, so the thin client's
``ls -q`` parses here without pydantic): no I/O, no Prefect; the caller passes rows
(`polyaxon_prefect.query._match`).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

# the status words of the one state table (stdlib): the thin client parses queries without pydantic
from polyaxon_prefect.client import STATUSES

__all__ = [
    "FIELDS",
    "Condition",
    "FieldSpec",
    "QueryError",
    "SortKey",
    "parse_query",
    "parse_sort",
]


class QueryError(ValueError):
    """A query or sort spec that cannot be read: ``at`` is the 1-based character it is about."""

    def __init__(self, at: int, message: str) -> None:
        super().__init__(f"at {at}: {message}")
        self.at = at
        self.message = message


@dataclass(frozen=True)
class FieldSpec:
    """A queryable field: the row key it reads, its condition kind, and whether it takes a
    name after a dot (``metrics.loss``)."""

    column: str
    kind: str  # value | search | scalar | datetime
    keyed: bool = False


FIELDS: dict[str, FieldSpec] = {
    "id": FieldSpec("id", "search"),
    "uid": FieldSpec("id", "search"),
    "uuid": FieldSpec("id", "search"),
    "name": FieldSpec("name", "search"),
    "status": FieldSpec("status", "value"),
    "kind": FieldSpec("kind", "value"),
    "tags": FieldSpec("tags", "value"),
    "created_at": FieldSpec("created_at", "datetime"),
    "started_at": FieldSpec("started_at", "datetime"),
    "finished_at": FieldSpec("finished_at", "datetime"),
    "created": FieldSpec("created_at", "datetime"),
    "started": FieldSpec("started_at", "datetime"),
    "finished": FieldSpec("finished_at", "datetime"),
    "duration": FieldSpec("duration", "scalar"),
    "params": FieldSpec("params", "value", keyed=True),
    "inputs": FieldSpec("params", "value", keyed=True),
    "in": FieldSpec("params", "value", keyed=True),
    "outputs": FieldSpec("outputs", "value", keyed=True),
    "out": FieldSpec("outputs", "value", keyed=True),
    "metrics": FieldSpec("metrics", "scalar", keyed=True),
}
"""Polyaxon's run fields and aliases (``inputs``/``in``/``params``, ``outputs``/``out``, ``id``/
``uid``/``uuid``) that a run here has; ``created``/``started``/``finished`` are this CLI's
column names for the ``*_at`` fields."""

_STATUSES = frozenset(STATUSES)
_KINDS = frozenset({"job", "dag", "matrix"})
_COMPARISONS = ("<=", ">=", "=<", "=>", "<", ">")
_DATE_FORMATS = (
    ("%Y-%m-%d %H:%M:%S", timedelta(seconds=1)),
    ("%Y-%m-%dT%H:%M:%S", timedelta(seconds=1)),
    ("%Y-%m-%d %H:%M", timedelta(minutes=1)),
    ("%Y-%m-%dT%H:%M", timedelta(minutes=1)),
    ("%Y-%m-%d", timedelta(days=1)),
)
_KEYWORD = re.compile(r"\s(AND|OR)\s", re.IGNORECASE)
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_][A-Za-z0-9_.\-]*)?$")


@dataclass(frozen=True)
class Span:
    """A moment given to a precision (a day, a minute, a second): ``start`` to ``start +
    length``, in this machine's local time (the time ``ls`` shows)."""

    start: datetime
    length: timedelta

    @property
    def end(self) -> datetime:
        return self.start + self.length


@dataclass(frozen=True)
class Condition:
    """One ``field:operation`` of a query.

    ``op``: ``nil``, ``=``, ``|`` (one of ``values``), ``<``, ``<=``, ``>``, ``>=``, ``..``
    (``values`` is the two ends), ``%%`` (contains), ``_%`` (starts with), ``%_`` (ends with).
    ``values`` are parsed (JSON where the text is JSON, a `Span` for a date); ``texts`` are the
    same values as written (a param recorded as text compares equal to its text)."""

    field: str
    column: str
    key: str | None
    kind: str
    op: str
    negation: bool
    values: tuple[Any, ...]
    texts: tuple[str, ...]
    at: int


@dataclass(frozen=True)
class SortKey:
    """One field of a sort spec (``-metrics.loss``: ``descending``)."""

    field: str
    column: str
    key: str | None
    descending: bool


def _json(text: str) -> Any:
    """A value as Polyaxon reads one: JSON where it is JSON (``0.2``, ``true``), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _pieces(text: str, separator: str, offset: int) -> list[tuple[str, int]]:
    """``text`` split on ``separator``, each piece stripped, with its 1-based position."""
    pieces: list[tuple[str, int]] = []
    start = 0
    for part in text.split(separator):
        stripped = part.strip()
        lead = len(part) - len(part.lstrip())
        pieces.append((stripped, offset + start + lead + 1))
        start += len(part) + len(separator)
    return pieces


def _field(name: str, at: int, *, sort: bool = False) -> tuple[str, FieldSpec, str | None]:
    """The field ``name`` names (``metrics.loss`` -> metrics, its spec, ``loss``)."""
    if not _FIELD.match(name):
        raise QueryError(at, f"`{name}` is not a field name (a field is `name` or `metrics.loss`)")
    base, _, key = name.partition(".")
    spec = FIELDS.get(base)
    if spec is None:
        close = difflib.get_close_matches(base, list(FIELDS), n=1, cutoff=0.6)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        known = ", ".join(sorted({f for f, s in FIELDS.items() if not f.endswith("ed")}))
        raise QueryError(at, f"unknown field `{base}`{hint} (fields: {known})")
    if spec.keyed and not key:
        raise QueryError(at, f"`{base}` takes a name: `{base}.NAME`, e.g. `{base}.loss`")
    if not spec.keyed and key:
        raise QueryError(at, f"`{base}` takes no name after a dot (`{name}`)")
    if sort and base == "tags":
        raise QueryError(at, "runs cannot be sorted by `tags`")
    return base, spec, key or None


def _comparison(text: str) -> tuple[str | None, str]:
    for op in _COMPARISONS:
        if text.startswith(op):
            return {"=<": "<=", "=>": ">="}.get(op, op), text[len(op) :].strip()
    return None, text


def _date(text: str, at: int) -> Span:
    for fmt, length in _DATE_FORMATS:
        try:
            moment = datetime.strptime(text, fmt)
        except ValueError:
            continue
        return Span(moment.astimezone(), length)
    raise QueryError(
        at, f"`{text}` is not a date: YYYY-MM-DD, YYYY-MM-DD HH:MM or YYYY-MM-DD HH:MM:SS"
    )


def _number(text: str, at: int, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise QueryError(at, f"`{field}` compares numbers, not `{text}`") from None
    if value != value:  # NaN compares with nothing
        raise QueryError(at, f"`{field}` compares numbers, not `{text}`")
    return value


def _check_word(base: str, value: object, text: str, at: int) -> None:
    """A status or kind that no run can have is a typo: say so rather than match nothing."""
    for field, known in (("status", _STATUSES), ("kind", _KINDS)):
        if base == field and text not in known:
            close = difflib.get_close_matches(text, sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            raise QueryError(at, f"no {field} `{text}`{hint} (one of: {', '.join(sorted(known))})")


def _values(pieces: list[tuple[str, int]], base: str) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    for text, at in pieces:
        _check_word(base, text, text, at)
    return tuple(_json(text) for text, _ in pieces), tuple(text for text, _ in pieces)


def _operation(name: str, base: str, spec: FieldSpec, text: str, at: int) -> tuple[Any, ...]:
    """``(op, negation, values, texts)`` of the operation ``text`` (at ``at``) on ``name``."""
    negation = text.startswith("~")
    if negation:
        rest = text[1:]
        at += 1 + len(rest) - len(rest.lstrip())
        text = rest.strip()
    if not text:
        raise QueryError(at, f"`{name}:` has no value (e.g. `{name}:VALUE`, `{name}:nil`)")
    if text == "nil":
        return "nil", negation, (), ()
    kind = spec.kind
    if ".." in text:
        if kind != "datetime":
            raise QueryError(at, f"`..` ranges are for dates; `{name}` takes no range")
        ends = _pieces(text, "..", at - 1)
        if len(ends) != 2 or not all(end for end, _ in ends):
            raise QueryError(at, f"a range is `START .. END`, not `{text}`")
        spans = tuple(_date(end, end_at) for end, end_at in ends)
        if spans[0].start > spans[1].start:
            raise QueryError(at, f"the range `{text}` ends before it starts")
        return "..", negation, spans, tuple(end for end, _ in ends)
    if "|" in text:
        if kind in ("scalar", "datetime"):
            raise QueryError(at, f"`|` (one of) is not for `{name}`: compare with <, <=, >, >=")
        pieces = _pieces(text, "|", at - 1)
        empty = next((p_at for piece, p_at in pieces if not piece), None)
        if empty is not None or len(pieces) < 2:
            raise QueryError(empty or at, f"`{text}`: every value around `|` must be given")
        values, texts = _values(pieces, base)
        return "|", negation, values, texts
    op, value_text = _comparison(text)
    value_at = at + len(text) - len(value_text) if op else at
    if op is not None:
        if kind == "search":
            raise QueryError(at, f"`{op}` is not for `{name}`: use a value, `a|b` or `%part%`")
        if not value_text:
            raise QueryError(value_at, f"`{name}:{op}` has no value to compare with")
    if kind == "datetime":
        return op or "=", negation, (_date(value_text, value_at),), (value_text,)
    if kind == "scalar":
        return op or "=", negation, (_number(value_text, value_at, name),), (value_text,)
    if kind == "search" and ("%" in value_text):
        return _like(name, value_text, value_at, negation)
    values, texts = _values([(value_text, value_at)], base)
    return op or "=", negation, values, texts


def _like(name: str, text: str, at: int, negation: bool) -> tuple[Any, ...]:
    part = text.strip("%")
    if not part or "%" in part:
        raise QueryError(at, f"`{name}:{text}`: `%` only at the start and/or end of a value")
    op = "%%" if text.startswith("%") and text.endswith("%") else "%_"
    if not text.startswith("%"):
        op = "_%"
    return op, negation, (part,), (part,)


def _expressions(query: str) -> list[tuple[str, int]]:
    """The query's ``field:operation`` pieces and positions (``,`` and ``AND`` separate them)."""
    keyword = _KEYWORD.search(query)
    if keyword is not None and keyword.group(1).upper() == "OR":
        raise QueryError(
            keyword.start(1) + 1,
            "`OR` is not supported: conditions separated by `,` must all hold; "
            "for one of several values use `field:a|b`",
        )
    for bracket in ("(", ")"):
        if bracket in query:
            raise QueryError(
                query.index(bracket) + 1,
                "parentheses are not supported: use `,` between conditions",
            )
    text = _KEYWORD.sub(lambda m: "," + " " * (len(m.group(0)) - 1), query)
    return _pieces(text, ",", 0)


def parse_query(query: str) -> tuple[Condition, ...]:
    """The conditions of ``query`` (``"status:running, metrics.loss:<=0.2"``), all of which a
    run must meet. Raises `QueryError` (with the position) for anything it cannot read."""
    if not query.strip():
        raise QueryError(1, "the query is empty (e.g. `status:running, metrics.loss:<=0.2`)")
    conditions: list[Condition] = []
    for expression, at in _expressions(query):
        if not expression:
            raise QueryError(at, "an empty condition between `,` (remove the extra `,`)")
        name, colon, operation = expression.partition(":")
        if not colon:
            raise QueryError(at, f"`{expression}` is not `field:value` (e.g. `status:running`)")
        name = name.strip()
        base, spec, key = _field(name, at)
        op_at = at + len(expression) - len(operation) + len(operation) - len(operation.lstrip())
        op, negation, values, texts = _operation(name, base, spec, operation.strip(), op_at)
        conditions.append(
            Condition(
                field=base,
                column=spec.column,
                key=key,
                kind=spec.kind,
                op=op,
                negation=negation,
                values=values,
                texts=texts,
                at=at,
            )
        )
    return tuple(conditions)


def parse_sort(spec: str) -> tuple[SortKey, ...]:
    """The keys of a sort spec (``"-metrics.loss, started_at"``: ``-`` is descending), first
    key first. Raises `QueryError` (with the position) for an unknown field."""
    keys: list[SortKey] = []
    for piece, at in _pieces(spec, ",", 0):
        if not piece:
            raise QueryError(at, "an empty sort field (e.g. `-metrics.loss, started_at`)")
        descending = piece.startswith("-")
        name = piece.lstrip("-+").strip()
        base, field_spec, key = _field(name, at + len(piece) - len(name), sort=True)
        keys.append(SortKey(base, field_spec.column, key, descending))
    return tuple(keys)
