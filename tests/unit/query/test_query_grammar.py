"""Polyaxon's query and sort specs: what each piece means, and that every bad query is one
`QueryError` located at the character it is about (never another exception)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyaxon_prefect.query import QueryError, parse_query, parse_sort


def test_the_issue_query_parses_into_five_conditions() -> None:
    query = "status:running, kind:job, metrics.loss:<=0.2, name:~resnet, tags:nightly"
    got = [(c.field, c.key, c.op, c.negation, c.values, c.at) for c in parse_query(query)]
    assert got == [
        ("status", None, "=", False, ("running",), 1),
        ("kind", None, "=", False, ("job",), 17),
        ("metrics", "loss", "<=", False, (0.2,), 27),
        ("name", None, "=", True, ("resnet",), 47),  # `~` is Polyaxon's NOT, not a pattern
        ("tags", None, "=", False, ("nightly",), 61),
    ]


@pytest.mark.parametrize(
    ("text", "op", "negation", "values"),
    [
        ("status:running|failed", "|", False, ("running", "failed")),
        ("status: ~ running | failed", "|", True, ("running", "failed")),
        ("metrics.loss:~<0.1", "<", True, (0.1,)),
        ("metrics.loss:=>3", ">=", False, (3.0,)),
        ("metrics.loss:nil", "nil", False, ()),
        ("outputs.acc:~nil", "nil", True, ()),
        ("name:%resnet%", "%%", False, ("resnet",)),
        ("name:resnet%", "_%", False, ("resnet",)),
        ("name:~%resnet", "%_", True, ("resnet",)),
        ("params.lr:0.01", "=", False, (0.01,)),
        ("in.activation:sigmoid|relu", "|", False, ("sigmoid", "relu")),
        ("duration:>60", ">", False, (60.0,)),
    ],
)
def test_operations(text: str, op: str, negation: bool, values: tuple[object, ...]) -> None:
    (condition,) = parse_query(text)
    assert (condition.op, condition.negation, condition.values) == (op, negation, values)


def test_aliases_read_the_same_column() -> None:
    columns = {parse_query(f"{f}.x:1")[0].column for f in ("params", "inputs", "in")}
    assert columns == {"params"}
    assert parse_query("out.x:1")[0].column == "outputs"
    assert {parse_query(f"{f}:abc")[0].column for f in ("id", "uid", "uuid")} == {"id"}


def test_dates_keep_their_precision_and_ranges_both_ends() -> None:
    (day,) = parse_query("started_at:2026-03-01")
    assert day.values[0].length == timedelta(days=1)
    assert day.values[0].start == datetime(2026, 3, 1).astimezone()
    (minute,) = parse_query("created_at:>=2026-03-01 10:30")
    assert minute.values[0].length == timedelta(minutes=1)
    (span,) = parse_query("finished_at:~2026-03-01 .. 2026-03-05")
    assert (span.op, span.negation, len(span.values)) == ("..", True, 2)


def test_and_keyword_separates_like_a_comma() -> None:
    assert len(parse_query("status:running AND kind:job")) == 2


@pytest.mark.parametrize(
    ("text", "at", "words"),
    [
        ("status:runing", 8, "did you mean `running`"),
        ("kind:jobb", 6, "did you mean `job`"),
        ("metrics.loss:<=abc", 16, "compares numbers"),
        ("foo:1", 1, "unknown field `foo`"),
        ("stauts:running", 1, "did you mean `status`"),
        ("status:running OR kind:job", 16, "`OR` is not supported"),
        ("(status:running)", 1, "parentheses"),
        ("name:, kind:job", 6, "has no value"),
        ("metrics:<1", 1, "takes a name"),
        ("status.x:running", 1, "takes no name"),
        ("status:running,,kind:job", 16, "empty condition"),
        ("started_at:2026-01-01..", 12, "START .. END"),
        ("started_at:2026-02-01 .. 2026-01-01", 12, "ends before it starts"),
        ("started_at:yesterday", 12, "not a date"),
        ("name:<3", 6, "not for `name`"),
        ("metrics.loss:0.1|0.2", 14, "`|` (one of) is not for"),
        ("params.lr:1..2", 11, "ranges are for dates"),
        ("kind job", 1, "not `field:value`"),
        ("name:a%b", 6, "`%` only at the start"),
        ("", 1, "empty"),
    ],
)
def test_bad_queries_say_where(text: str, at: int, words: str) -> None:
    with pytest.raises(QueryError) as caught:
        parse_query(text)
    assert caught.value.at == at
    assert words in str(caught.value)
    assert str(caught.value).startswith(f"at {at}: ")


def test_sort_spec() -> None:
    keys = parse_sort("-metrics.loss, started_at,+name")
    assert [(k.column, k.key, k.descending) for k in keys] == [
        ("metrics", "loss", True),
        ("started_at", None, False),
        ("name", None, False),
    ]
    with pytest.raises(QueryError, match=r"^at 11: unknown field `bogus`"):
        parse_sort("duration,-bogus")
    with pytest.raises(QueryError, match="tags"):
        parse_sort("tags")


@pytest.mark.slow  # 400 examples: seconds, so outside `make test-fast`
@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("stau:,~<>=|.%() nilmercoAND0123-x")), max_size=40))
def test_any_text_parses_or_is_one_located_error(text: str) -> None:
    try:
        conditions = parse_query(text)
    except QueryError as exc:
        assert 1 <= exc.at <= len(text) + 2, (text, exc.at)
    else:
        assert conditions


@pytest.mark.slow  # 200 examples: seconds, so outside `make test-fast`
@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_any_sort_spec_parses_or_is_one_located_error(text: str) -> None:
    try:
        parse_sort(text)
    except QueryError as exc:
        assert exc.at >= 1
