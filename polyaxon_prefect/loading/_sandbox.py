"""The template sandbox's cost budget: Jinja's sandbox stops attribute escapes, not cost.

``{{ 'a' * 10**9 }}`` takes gigabytes and ``{{ 9 ** (9 ** 9) }}`` or nested loops run for
hours. Every render gets a budget (`start_budget`): strings and lists it builds stay under
`MAX_TEMPLATE_SIZE` items, integer powers under 4096 bits, loops under
`MAX_TEMPLATE_ITERATIONS` iterations in all, and the whole render under `TEMPLATE_TIMEOUT`
seconds, checked at each iteration, call, filter and output. Going over raises Jinja's
``SecurityError``, which the renderer reports as a located template problem.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

from jinja2 import nodes as jinja_nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from polyaxon_prefect._source import Limit

__all__ = [
    "MAX_TEMPLATE_ITERATIONS",
    "MAX_TEMPLATE_SIZE",
    "TEMPLATE_TIMEOUT",
    "bounded_environment",
    "check_size",
    "start_budget",
]

MAX_TEMPLATE_SIZE = Limit("POLYAXON_PREFECT_MAX_TEMPLATE_SIZE", 1_000_000, "characters or items")
MAX_TEMPLATE_ITERATIONS = Limit(
    "POLYAXON_PREFECT_MAX_TEMPLATE_ITERATIONS", 100_000, "loop iterations in one render"
)
TEMPLATE_TIMEOUT = Limit("POLYAXON_PREFECT_TEMPLATE_TIMEOUT", 2, "seconds for one render")
_MAX_POWER_BITS = 4096
_ITER_NAME = "__polyaxon_prefect_bounded_iter"
_T = TypeVar("_T")


class _Budget(threading.local):
    deadline = 0.0
    iterations = 0


_BUDGET = _Budget()


def _over(message: str) -> SecurityError:
    return SecurityError(message)


def _tick() -> None:
    if time.monotonic() > _BUDGET.deadline:
        raise _over(f"the render took longer than {TEMPLATE_TIMEOUT.value} s")


def check_size(value: _T) -> _T:
    """``value``, unless it is a sized value over the limit (then a `SecurityError`)."""
    if (
        isinstance(value, str | list | tuple | dict | bytes)
        and len(value) > MAX_TEMPLATE_SIZE.value
    ):
        raise _over(f"the template builds a value of more than {MAX_TEMPLATE_SIZE.value} items")
    return value


def _check_args(args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    limit = MAX_TEMPLATE_SIZE.value
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > limit:
            raise _over(f"an argument of {arg} is more than the {limit} allowed")


def _bounded_iter(iterable: Any) -> Iterator[Any]:
    limit = MAX_TEMPLATE_ITERATIONS.value
    for item in iterable:
        _BUDGET.iterations += 1
        if _BUDGET.iterations > limit:
            raise _over(f"the template's loops run more than {limit} iterations")
        if _BUDGET.iterations % 256 == 0:
            _tick()
        yield item


def _bounded_filter(function: Any) -> Any:
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _check_args(args[1:], kwargs)
        _tick()
        return check_size(function(*args, **kwargs))

    for attribute in ("jinja_pass_arg",):
        if hasattr(function, attribute):
            setattr(bounded, attribute, getattr(function, attribute))
    return bounded


def _huge_power(left: object, right: object) -> bool:
    if not (isinstance(left, int) and isinstance(right, int)) or right <= 0 or abs(left) <= 1:
        return False
    return left.bit_length() * right > _MAX_POWER_BITS


class _BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox, with a cost budget on operators, calls, filters, loops and output."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _tick()
        if operator == "**" and _huge_power(left, right):
            raise _over(f"the template computes {left} ** {right}, a number too large")
        if operator == "*":
            for count, other in ((left, right), (right, left)):
                if (
                    isinstance(count, int)
                    and isinstance(other, str | list | tuple)
                    and count * len(other) > MAX_TEMPLATE_SIZE.value
                ):
                    raise _over(
                        f"the template builds a value of more than {MAX_TEMPLATE_SIZE.value} items"
                    )
        if operator == "%":
            _check_args(right if isinstance(right, tuple) else (right,), {})
        return check_size(super().call_binop(context, operator, left, right))

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _tick()
        _check_args(args, kwargs)
        return check_size(super().call(__context, __obj, *args, **kwargs))

    def _parse(self, source: str, name: str | None, filename: str | None) -> Any:
        """Route every ``{% for %}`` through `_bounded_iter`."""
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(jinja_nodes.For):
            loop.iter = jinja_nodes.Call(
                jinja_nodes.Name(_ITER_NAME, "load"), [loop.iter], [], None, None
            )
        return tree


def start_budget() -> None:
    """Start the budget of one render (or one expression) on this thread."""
    _BUDGET.deadline = time.monotonic() + TEMPLATE_TIMEOUT.value
    _BUDGET.iterations = 0


def bounded_environment(**options: object) -> _BoundedEnvironment:
    """A sandboxed environment with the budget on; add filters with `bounded_filter` (or
    before calling `bound_filters`)."""
    environment = _BoundedEnvironment(finalize=_finalize, **options)
    environment.globals[_ITER_NAME] = _bounded_iter
    return environment


def bound_filters(environment: ImmutableSandboxedEnvironment) -> None:
    """Put every filter of ``environment`` under the budget."""
    for name, function in list(environment.filters.items()):
        environment.filters[name] = _bounded_filter(function)


def _finalize(value: object) -> Any:
    _tick()
    return value
