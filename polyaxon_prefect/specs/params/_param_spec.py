"""Operation params (spec 3.1): literal values, or references to another run, op or the DAG."""

import re
import uuid
from typing import Any

from pydantic import StrictStr, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import PARAM_REGEX, BaseSpec, is_template
from polyaxon_prefect.specs._or_ref import BoolOrRef

__all__ = [
    "CONTEXTS",
    "CONTEXTS_WITH_NESTING",
    "FULL_FORM_KEYS",
    "Param",
    "normalize_params",
    "parse_ref_value",
    "validate_ref",
    "validate_ref_value",
]

CONTEXTS = ("inputs", "outputs", "io", "artifacts")
"""What a one-part ref value may name (``value: outputs`` = all outputs of the referenced run)."""

CONTEXTS_WITH_NESTING = ("inputs", "outputs", "artifacts", "globals")
"""What the head of a two-part ref value may be (``outputs.loss``, ``globals.uuid``)."""

FULL_FORM_KEYS = frozenset(
    {
        "value",
        "ref",
        "toInit",
        "to_init",
        "toEnv",
        "to_env",
        "contextOnly",
        "context_only",
        "connection",
    }
)
"""A param dict holding any of these keys is in full form; anything else is a bare value."""

_OP_NAME = re.compile(r"^[-a-zA-Z0-9_]+$")


def normalize_params(raw: object) -> Any:
    """Turn short-form params (``lr: 0.1``) into full form (``lr: {value: 0.1}``).

    A dict with any of :data:`FULL_FORM_KEYS` is full form, and so is ``{}`` (value null); every
    other value is wrapped. Anything that is not a mapping is returned untouched, for pydantic
    to reject with its usual message.
    """
    if not isinstance(raw, dict):
        return raw
    return {key: _normalize_one(value) for key, value in raw.items()}


def _normalize_one(value: object) -> Any:
    if isinstance(value, BaseSpec):
        return value
    if isinstance(value, dict) and (not value or FULL_FORM_KEYS & value.keys()):
        return value
    return {"value": value}


def parse_ref_value(value: str) -> tuple[str, ...]:
    """``"{{ outputs.loss }}"`` or ``"outputs.loss"`` -> ``("outputs", "loss")``."""
    match = PARAM_REGEX.search(value)
    text = match.group(1) if match else value
    return tuple(part.strip() for part in text.strip().split("."))


def validate_ref_value(value: object, *, is_dag: bool = False) -> tuple[str, ...]:
    """Check the path a ref param (or join param) reads from its target; return its parts.

    One part from ``inputs, outputs, io, artifacts`` (not ``outputs`` of the enclosing dag),
    two parts headed by ``inputs, outputs, artifacts, globals``, three parts only under
    ``artifacts``.

    Raises:
        ValueError: the path does not follow that grammar.
    """
    if not isinstance(value, str):
        raise ValueError(
            f"the value of a ref param must be a string path such as `outputs.loss`, got {value!r}"
        )
    parts = parse_ref_value(value)
    if any(not part for part in parts):
        raise ValueError(f"`{value}` is not a dotted path such as `outputs.loss`")
    if len(parts) > 3:
        raise ValueError(f"`{value}` has more than 3 parts, refs read at most `artifacts.x.y`")
    if len(parts) == 1:
        if parts[0] not in CONTEXTS:
            raise ValueError(f"`{value}` must be one of {', '.join(CONTEXTS)} or a dotted path")
        if is_dag and parts[0] == "outputs":
            raise ValueError(
                "`outputs` of the current dag cannot be referenced (they do not exist yet)"
            )
    elif len(parts) == 2 and parts[0] not in CONTEXTS_WITH_NESTING:
        raise ValueError(
            f"`{value}` must start with one of {', '.join(CONTEXTS_WITH_NESTING)}, got `{parts[0]}`"
        )
    elif len(parts) == 3 and parts[0] != "artifacts":
        raise ValueError(f"`{value}` has 3 parts, which only `artifacts.<name>.<path>` may have")
    return parts


def validate_ref(ref: str) -> str:
    """``runs.<uuid>``, ``ops.<op name>`` or ``dag``.

    Raises:
        ValueError: anything else (naming the three accepted forms).
    """
    if ref == "dag":
        return ref
    head, _, tail = ref.partition(".")
    if head == "runs" and tail:
        try:
            uuid.UUID(tail)
        except ValueError:
            raise ValueError(f"`{ref}` does not name a run: `{tail}` is not a valid UUID") from None
        return ref
    if head == "ops" and tail:
        if not _OP_NAME.match(tail):
            raise ValueError(f"`{ref}` does not name an op: `{tail}` is not a valid op name")
        return ref
    raise ValueError(f"a ref must be `ops.<op name>`, `runs.<uuid>` or `dag`, got `{ref}`")


class Param(BaseSpec):
    """A value for an input/output: a literal, or ``ref`` + a path read from the referenced run.

    ``contextOnly`` params are not matched against the component's IO; they only add a variable
    to the template context.
    """

    ref: StrictStr | None = None
    value: Any = None
    context_only: BoolOrRef | None = None
    connection: StrictStr | None = None
    to_init: BoolOrRef | None = None
    to_env: StrictStr | None = None

    @field_validator("ref")
    @classmethod
    def _check_ref(cls, ref: str | None) -> str | None:
        if ref is None:
            return ref
        try:
            return validate_ref(ref)
        except ValueError as exc:
            raise PydanticCustomError(
                "param_ref",
                "{message}",
                {"message": str(exc), "hint": "e.g. `ref: ops.train` with `value: outputs.loss`"},
            ) from None

    @field_validator("value")
    @classmethod
    def _check_ref_value(cls, value: object, info: ValidationInfo) -> object:
        ref = info.data.get("ref")
        if ref is None:
            return value
        try:
            validate_ref_value(value, is_dag=ref == "dag")
        except ValueError as exc:
            raise PydanticCustomError(
                "param_ref_value",
                "{message}",
                {
                    "message": str(exc),
                    "hint": "with `ref`, `value` names what to read: `outputs.<name>`, "
                    "`inputs.<name>`, `globals.<key>` or `artifacts[.<name>]`",
                },
            ) from None
        return value

    @property
    def is_ref(self) -> bool:
        return self.ref is not None

    @property
    def is_literal(self) -> bool:
        """A plain value: no ``ref`` and no ``{{ }}`` template anywhere at the top."""
        return self.ref is None and not is_template(self.value)

    @property
    def is_template(self) -> bool:
        """A ``{{ }}`` value without ``ref``: checked only once rendered."""
        return self.ref is None and is_template(self.value)

    @property
    def is_context_only(self) -> bool:
        return self.context_only is True

    @property
    def entity_kind(self) -> str | None:
        """``"ops"``, ``"runs"`` or ``"dag"`` for a ref param, else ``None``."""
        if self.ref is None:
            return None
        return self.ref.partition(".")[0]

    @property
    def reads_dag(self) -> bool:
        """Whether this is a ``ref: dag`` param (it reads the DAG's own inputs and globals)."""
        return self.entity_kind == "dag"

    @property
    def entity_ref(self) -> str | None:
        """The op name of ``ops.<name>``, the uuid of ``runs.<uuid>``; ``None`` otherwise."""
        if self.ref is None or self.ref == "dag":
            return None
        return self.ref.partition(".")[2]

    @property
    def ref_op(self) -> str | None:
        """The upstream op name when ``ref: ops.<name>`` (a DAG edge), else ``None``."""
        return self.entity_ref if self.entity_kind == "ops" else None

    @property
    def ref_path(self) -> tuple[str, ...] | None:
        """The parts of the referenced path, e.g. ``("outputs", "loss")``, for a ref param."""
        if self.ref is None or not isinstance(self.value, str):
            return None
        return parse_ref_value(self.value)

    @property
    def entity_type(self) -> str | None:
        """The head of the referenced path (``outputs``, ``inputs``, ``artifacts``...)."""
        path = self.ref_path
        return path[0] if path else None

    @property
    def searchable_ref(self) -> str | None:
        """``"ops.a.outputs.loss"``: the key to look the ref up in a DAG context."""
        path = self.ref_path
        if path is None:
            return None
        return ".".join((self.ref or "", *path))
