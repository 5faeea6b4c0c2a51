"""``conditions`` of a DAG op: render the expression, read a boolean, skip the op when false.

Polyaxon renders ``conditions`` with the op's params (context-only refs included) and reads the
result with ``to_bool``; anything that is not a boolean word fails the run. We do the same in the
sandboxed renderer, and also offer what Polyaxon's docs promise but its resolver never fills:
``dag.inputs.<name>``, ``ops.<op>.outputs.<name>`` (and ``inputs``, ``globals``, ``artifacts``,
``status``) and ``globals``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from polyaxon_prefect.dag._records import DagScope, op_sources
from polyaxon_prefect.exceptions import HintedError
from polyaxon_prefect.specs import Operation

__all__ = ["ConditionError", "condition_context", "evaluate_conditions"]


class ConditionError(HintedError):
    """A ``conditions`` expression could not be evaluated to a boolean.

    The message quotes the expression and says what it gave (or which name is undefined); the
    op fails with it, as in Polyaxon.
    """

    def __init__(
        self, message: str, *, expression: str, op_name: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.expression = expression
        self.op_name = op_name


def condition_context(op: Operation, params: Mapping[str, Any], scope: DagScope) -> dict[str, Any]:
    """The Jinja context of ``op``'s conditions: its params as in its own templates, plus
    ``dag.inputs``, ``ops.<name>.{outputs,inputs,globals,artifacts,status}`` and ``globals``
    (the DAG run's: the op has no run yet)."""
    from polyaxon_prefect.loading import ParamValue, build_context

    component = op.component
    ios = {io.name: io for io in component.ios} if component is not None else {}
    declared = dict(op.params or {})
    values: dict[str, ParamValue] = {}
    for name, value in params.items():
        param = declared.get(name)
        io = ios.get(name)
        if io is None or (param is not None and param.is_context_only):
            values[name] = ParamValue(value=value)
        else:
            values[name] = ParamValue(
                value=value,
                type=io.type,
                is_flag=io.is_flag is True,
                arg_format=io.arg_format,
                connection=(param.connection if param is not None else None) or io.connection,
            )
    ops = {}
    for name, record in scope.records.items():
        sources = op_sources(record)
        ops[name] = {**sources, "status": record.status}
    return build_context(values, globals=scope.globals, dag_inputs=scope.inputs, ops=ops)


def evaluate_conditions(op: Operation, params: Mapping[str, Any], scope: DagScope) -> bool:
    """Whether ``op`` should run: True without ``conditions``, else the rendered expression read
    as a boolean (``true``/``false`` and Polyaxon's words ``yes/no``, ``on/off``, ``1/0``,
    ``y/n``, ``t/f``, any case). False means the op is ``skipped``.

    ``params`` are the op's resolved params (`resolve_params`), ``scope`` a `DagScope`.

    Raises:
        ConditionError: the expression uses an undefined name, is not valid Jinja, or renders
            to something that is not a boolean (an untemplated ``x > 3`` is such a string).
    """
    from polyaxon_prefect.loading import TemplateError, render_bool

    expression = op.conditions
    if expression is None:
        return True
    try:
        context = condition_context(op, params, scope)
        return render_bool(expression, context)
    except TemplateError as exc:
        message = f"conditions of operation `{op.name}`: {exc.message}"
        if str(expression) not in message:
            message += f" (expression `{expression}`)"
        raise ConditionError(
            message, expression=str(expression), op_name=op.name, hint=exc.hint
        ) from exc
