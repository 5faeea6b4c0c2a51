"""``joins``: select finished runs of the DAG with a Polyaxon query and gather values from them.

Polyaxon runs the query (PQL) against every run of the project on its server. Locally the runs a
DAG op can see are the ops of its DAG that have finished (`DagScope.records`), so the query is
evaluated over those. The syntax is Polyaxon's: comma-separated ``field: condition`` terms that
must all hold, where a condition is

* ``value`` (equal; ``tags: a`` means "has tag a"), ``a|b|c`` (any of), ``~cond`` (not),
* ``>x``, ``>=x``, ``<x``, ``<=x``, ``a..b`` (inclusive range) on numbers and times,
* ``nil`` (no value; ``~nil``: has a value), ``%text%``, ``text%``, ``%text`` (contains, starts
  with, ends with).

A run without a value for the field never matches (except ``nil``), as in SQL. Fields:
``status``, ``name``, ``uuid``, ``kind``, ``tags``, ``metrics.<m>``, ``outputs.<o>``,
``inputs.<i>``/``params.<i>``, ``started_at``, ``finished_at``, ``duration``,
``component.name``/``hub.name``, and ``project.name``/``project.uuid``/``pipeline`` (every local
run belongs to this DAG's project and pipeline, so these compare against the DAG's globals).

``sort`` is a comma-separated list of fields, ``-`` for descending; runs without the value go
last either way. Without ``sort`` the runs keep the order in which they finished. The ``ref`` of
a join is ignored: the runs are always this DAG's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from polyaxon_prefect.dag._records import MISSING, DagScope, OpRecord, op_sources, read_path
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.specs import IO, Join, JoinParam, Operation

__all__ = ["QueryTerm", "filter_records", "parse_query", "resolve_joins", "sort_records"]

_TIME_FIELDS = frozenset({"started_at", "finished_at", "created_at", "updated_at"})


@dataclass(frozen=True)
class QueryTerm:
    """One ``field: condition`` of a query."""

    field: str
    op: str  # eq, in, gt, ge, lt, le, range, nil, contains, startswith, endswith
    values: tuple[str, ...] = ()
    negate: bool = False


def _query_error(message: str, path: tuple[str | int, ...], hint: str | None = None) -> Exception:
    return PolyaxonfileError([Problem(message, rule="join_query", path=path, hint=hint)])


def parse_query(query: str, *, path: tuple[str | int, ...] = ()) -> list[QueryTerm]:
    """Parse a Polyaxon query string into terms (all of which must hold).

    Raises:
        PolyaxonfileError: rule ``join_query``: a term without ``field:``.
    """
    terms: list[QueryTerm] = []
    for raw in query.split(","):
        raw = raw.strip()
        if not raw:
            continue
        field, sep, expr = raw.partition(":")
        field, expr = field.strip(), expr.strip()
        if not sep or not field or not expr:
            raise _query_error(
                f"invalid query term `{raw}` in `{query}`: expected `field: condition`",
                path,
                hint="e.g. `status: succeeded, metrics.loss: <0.1`",
            )
        negate = expr.startswith("~")
        if negate:
            expr = expr[1:].strip()
        if expr == "nil":
            term = QueryTerm(field, "nil", (), negate)
        elif ".." in expr:
            low, _, high = expr.partition("..")
            term = QueryTerm(field, "range", (low.strip(), high.strip()), negate)
        elif expr[:2] in (">=", "<="):
            term = QueryTerm(field, "ge" if expr[0] == ">" else "le", (expr[2:].strip(),), negate)
        elif expr[:1] in (">", "<"):
            term = QueryTerm(field, "gt" if expr[0] == ">" else "lt", (expr[1:].strip(),), negate)
        elif "|" in expr:
            values = tuple(v.strip() for v in expr.split("|") if v.strip())
            term = QueryTerm(field, "in", values, negate)
        elif len(expr) > 1 and expr.startswith("%") and expr.endswith("%"):
            term = QueryTerm(field, "contains", (expr[1:-1],), negate)
        elif expr.endswith("%"):
            term = QueryTerm(field, "startswith", (expr[:-1],), negate)
        elif expr.startswith("%"):
            term = QueryTerm(field, "endswith", (expr[1:],), negate)
        else:
            term = QueryTerm(field, "eq", (expr,), negate)
        terms.append(term)
    return terms


# --------------------------------------------------------------------------------------------------
# Fields


def _field_getter(
    field: str, globals_: Mapping[str, Any], path: tuple[str | int, ...]
) -> Callable[[OpRecord], Any]:
    """A function reading ``field`` from a record (`MISSING` when it has no value)."""
    head, _, rest = field.partition(".")
    if rest and head in ("metrics", "outputs", "inputs", "params"):
        attr = "inputs" if head == "params" else head
        return lambda r: getattr(r, attr).get(rest, MISSING)
    simple: dict[str, Callable[[OpRecord], Any]] = {
        "status": lambda r: r.status,
        "name": lambda r: r.name,
        "uuid": lambda r: r.uuid if r.uuid is not None else r.globals.get("uuid", MISSING),
        "kind": lambda r: r.kind,
        "tags": lambda r: list(r.tags),
        "started_at": lambda r: r.started_at,
        "finished_at": lambda r: r.finished_at,
        "duration": lambda r: (
            r.finished_at - r.started_at
            if r.finished_at is not None and r.started_at is not None
            else None
        ),
        "component.name": lambda r: r.component,
        "hub.name": lambda r: r.component,
        "hub": lambda r: r.component,
        "component": lambda r: r.component,
        "project.name": lambda r: globals_.get("project_name"),
        "project": lambda r: globals_.get("project_name"),
        "project.uuid": lambda r: globals_.get("project_uuid"),
        "pipeline": lambda r: globals_.get("uuid"),
        "pipeline.uuid": lambda r: globals_.get("uuid"),
        "controller": lambda r: globals_.get("uuid"),
    }
    if field in simple:
        return simple[field]
    raise _query_error(
        f"unknown query field `{field}`",
        path,
        hint="joins over a local DAG can filter on status, name, uuid, kind, tags, "
        "metrics.<m>, outputs.<o>, inputs.<i>, started_at, finished_at, duration, "
        "component.name, project.name, pipeline",
    )


def _number(text: object, *, time: bool = False) -> float | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, int | float):
        return float(text)
    if isinstance(text, datetime):
        value = text if text.tzinfo else text.replace(tzinfo=UTC)
        return value.timestamp()
    if not isinstance(text, str):
        return None
    try:
        return float(text)
    except ValueError:
        pass
    if time:
        try:
            return _number(datetime.fromisoformat(text))
        except ValueError:
            return None
    return None


def _equal(value: object, token: str, *, time: bool) -> bool:
    if isinstance(value, list | tuple | set):
        return any(_equal(v, token, time=time) for v in value)
    if isinstance(value, bool):
        return token.lower() in (("true", "1") if value else ("false", "0"))
    a, b = _number(value, time=time), _number(token, time=time)
    if a is not None and b is not None:
        return a == b
    return str(value) == token


def _holds(term: QueryTerm, value: object) -> bool:
    absent = value is MISSING or value is None
    if term.op == "nil":
        return absent != term.negate
    if absent:
        return False  # like SQL: a run without the value matches no condition on it
    time = term.field in _TIME_FIELDS
    if term.op == "eq":
        result = _equal(value, term.values[0], time=time)
    elif term.op == "in":
        result = any(_equal(value, v, time=time) for v in term.values)
    elif term.op in ("contains", "startswith", "endswith"):
        items = value if isinstance(value, list | tuple) else [value]
        needle = term.values[0].lower()
        check: Callable[[str], bool] = {
            "contains": lambda s: needle in s,
            "startswith": lambda s: s.startswith(needle),
            "endswith": lambda s: s.endswith(needle),
        }[term.op]
        result = any(check(str(item).lower()) for item in items)
    else:
        number = _number(value, time=time)
        given = [_number(v, time=time) for v in term.values]
        bounds = [b for b in given if b is not None]
        if number is None or len(bounds) != len(given) or math.isnan(number):
            return False
        compare: Callable[[], bool] = {
            "gt": lambda: number > bounds[0],
            "ge": lambda: number >= bounds[0],
            "lt": lambda: number < bounds[0],
            "le": lambda: number <= bounds[0],
            "range": lambda: bounds[0] <= number <= bounds[1],
        }[term.op]
        result = compare()
    return result != term.negate


def filter_records(
    records: Sequence[OpRecord],
    query: str,
    *,
    globals: Mapping[str, Any] | None = None,
    path: tuple[str | int, ...] = (),
) -> list[OpRecord]:
    """The records matching every term of ``query`` (order kept)."""
    terms = parse_query(query, path=path)
    getters = [(term, _field_getter(term.field, globals or {}, path)) for term in terms]
    return [r for r in records if all(_holds(term, get(r)) for term, get in getters)]


def sort_records(
    records: Sequence[OpRecord],
    sort: str,
    *,
    globals: Mapping[str, Any] | None = None,
    path: tuple[str | int, ...] = (),
) -> list[OpRecord]:
    """``records`` sorted by ``sort`` (``"-metrics.accuracy, name"``); stable; missing last."""
    ordered = list(records)
    keys = [k.strip() for k in sort.split(",") if k.strip()]
    for key in reversed(keys):
        descending = key.startswith("-")
        field = key.lstrip("+-").strip()
        get = _field_getter(field, globals or {}, path)
        time = field in _TIME_FIELDS

        def sort_key(
            record: OpRecord, get: Any = get, time: bool = time, descending: bool = descending
        ) -> tuple[Any, ...]:
            # reverse=True flips every element, so "missing" must rank lowest when descending
            # for those runs to end up last either way.
            missing_rank, present_rank = (0, 1) if descending else (1, 0)
            value = get(record)
            if value is MISSING or value is None:
                return (missing_rank, 0, 0.0, "")
            number = _number(value, time=time)
            if number is not None:
                return (present_rank, 0, number, "")
            return (present_rank, 1, 0.0, str(value))

        ordered.sort(key=sort_key, reverse=descending)
    return ordered


# --------------------------------------------------------------------------------------------------
# Joins of an op


def _join_context(params: Mapping[str, Any] | None, scope: DagScope) -> dict[str, Any]:
    from polyaxon_prefect.loading import ParamValue, build_context

    values = {k: ParamValue(value=v) for k, v in (params or {}).items()}
    return build_context(values, globals=scope.globals, dag_inputs=scope.inputs)


def _render(value: object, context: Mapping[str, Any], path: tuple[str | int, ...]) -> Any:
    from polyaxon_prefect.loading import TemplateError, render_value

    try:
        return render_value(value, context)
    except TemplateError as exc:
        raise PolyaxonfileError([exc.problem(path)]) from None


def _count(
    value: object, name: str, context: Mapping[str, Any], path: tuple[str | int, ...]
) -> int:
    rendered = _render(value, context, path)
    if isinstance(rendered, bool) or not isinstance(rendered, int) or rendered < 0:
        raise PolyaxonfileError(
            [
                Problem(
                    f"join `{name}` must be a non-negative integer, got {rendered!r}",
                    rule="join_query",
                    path=path,
                    value=rendered,
                )
            ]
        )
    return rendered


def _gather(selected: Sequence[OpRecord], value: object) -> Any:
    """The values of one join param over the selected runs (ArtifactsType dicts are merged)."""
    from polyaxon_prefect.specs import parse_ref_value

    if isinstance(value, Mapping):
        merged: dict[str, list[Any]] = {}
        for record in selected:
            sources = op_sources(record)
            for key, paths in read_path(sources, value, base=sources["artifacts"]["base"]).items():
                merged.setdefault(key, []).extend(paths)
        return merged
    parts = parse_ref_value(str(value))
    values = []
    for record in selected:
        item = read_path(op_sources(record), parts)
        values.append(None if item is MISSING else item)
    return values


def _select(
    join: Join,
    base: tuple[str | int, ...],
    records: list[OpRecord],
    context: Mapping[str, Any],
    scope: DagScope,
) -> list[OpRecord]:
    """The runs one join selects: ``query``, then ``sort``, ``offset`` and ``limit``."""
    query = str(_render(join.query, context, (*base, "query")))
    selected = filter_records(records, query, globals=scope.globals, path=(*base, "query"))
    if join.sort is not None:
        sort = str(_render(join.sort, context, (*base, "sort")))
        selected = sort_records(selected, sort, globals=scope.globals, path=(*base, "sort"))
    offset = 0 if join.offset is None else _count(join.offset, "offset", context, base)
    selected = selected[offset:]
    if join.limit is not None:
        selected = selected[: _count(join.limit, "limit", context, (*base, "limit"))]
    return selected


def _typed(
    name: str, values: object, io: IO, join_param: JoinParam, path: tuple[str | int, ...]
) -> Any:
    """The gathered ``values`` typed by the receiving input."""
    try:
        return io.validate_value(values)
    except ValueError as exc:
        raise PolyaxonfileError(
            [
                Problem(
                    f"join param `{name}` gathered {values!r}, which does not fit "
                    f"the input of type `{io.full_type}`: {exc}",
                    rule="join_type",
                    path=path,
                    hint="runs without the value give null; exclude them in the "
                    f"query, e.g. `{join_param.value}: ~nil`",
                )
            ]
        ) from None


def resolve_joins(
    op: Operation, scope: DagScope, params: Mapping[str, Any] | None = None
) -> dict[str, list[Any]]:
    """The values ``op.joins`` feed into the op's inputs, one list per join param.

    Each join selects from ``scope.records`` with ``query``, orders with ``sort``, then applies
    ``offset`` and ``limit``; each of its params reads a path (``outputs.loss``,
    ``globals.uuid``, ``inputs.lr``, ``artifacts.x``) from every selected run, ``None`` for a run
    without it. Templates in ``query``/``sort``/``limit``/``offset`` are rendered with ``params``
    (the op's other resolved params: ``limit: "{{ top }}"``), ``globals`` and ``dag.inputs``.
    Lists are typed by the receiving input unless the join param is ``contextOnly``. A param the
    op sets itself wins over a join param of the same name, and the first join wins over later
    ones (Polyaxon's rule).

    Raises:
        PolyaxonfileError: an invalid query or count (``join_query``), a template error, or
            values that do not fit the input (``join_type``).
    """
    joins = op.joins
    if joins is None:
        return {}
    if isinstance(joins, str):
        raise PolyaxonfileError(
            [
                Problem(
                    "`joins` is a template; only a list of joins can be resolved",
                    rule="join_template",
                    path=("joins",),
                )
            ]
        )
    component = op.component
    ios = {io.name: io for io in component.ios} if component is not None else {}
    own = set(op.params or {})
    context = _join_context(params, scope)
    records = list(scope.records.values())
    result: dict[str, Any] = {}
    for index, join in enumerate(joins):
        base: tuple[str | int, ...] = ("joins", index)
        selected = _select(join, base, records, context, scope)
        join_params = join.params or {}
        if isinstance(join_params, str):
            raise PolyaxonfileError(
                [
                    Problem(
                        "join `params` is a template; only a mapping can be resolved",
                        rule="join_template",
                        path=(*base, "params"),
                    )
                ]
            )
        for name, join_param in join_params.items():
            if name in own or name in result:
                continue
            values = _gather(selected, join_param.value)
            io = ios.get(name)
            if io is not None and join_param.context_only is not True:
                values = _typed(name, values, io, join_param, (*base, "params", name))
            result[name] = values
    return result
