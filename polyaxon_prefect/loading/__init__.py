"""From files to validated specs: YAML with positions, presets, references, templates, errors.

The template helpers other layers render with are exported here and load on first use, so that
importing the package stays as light as before (no Jinja until a template is rendered).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyaxon_prefect._lazy import lazy_attributes

if TYPE_CHECKING:
    from polyaxon_prefect.loading._load import LoadedPolyaxonfile
    from polyaxon_prefect.loading._render import (
        ParamValue,
        TemplateError,
        as_str,
        build_context,
        evaluate_expression,
        read_literal,
        render_bool,
        render_text,
        render_value,
    )
    from polyaxon_prefect.loading._yaml import parse_yaml

__all__ = [
    "LoadedPolyaxonfile",
    "ParamValue",
    "TemplateError",
    "as_str",
    "build_context",
    "evaluate_expression",
    "parse_yaml",
    "read_literal",
    "render_bool",
    "render_text",
    "render_value",
]

_RENDER_NAMES = (
    "ParamValue",
    "TemplateError",
    "as_str",
    "build_context",
    "evaluate_expression",
    "read_literal",
    "render_bool",
    "render_text",
    "render_value",
)

__getattr__ = lazy_attributes(
    __name__,
    {
        **dict.fromkeys(_RENDER_NAMES, "_render"),
        "LoadedPolyaxonfile": "_load",
        "parse_yaml": "_yaml",
    },
)
