"""From files to validated specs: YAML with positions, presets, references, templates, errors.

Every name loads on first use, so importing a submodule (or the package) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyaxon_prefect._lazy import lazy_attributes

if TYPE_CHECKING:
    from polyaxon_prefect.loading._cli_overrides import (
        CliOverrides,
        matrix_from_hparams,
        parse_hparams,
        parse_tags,
    )
    from polyaxon_prefect.loading._document import resolved_document
    from polyaxon_prefect.loading._load import (
        load_operation_for_signature,
        load_polyaxonfile,
        parse_cli_params,
    )
    from polyaxon_prefect.loading._patch import (
        PATCH_STRATEGIES,
        apply_preset,
        apply_run_patch,
        patch,
    )
    from polyaxon_prefect.loading._refs import hub_dirs_from_env
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
    from polyaxon_prefect.loading._url_file import source_of
    from polyaxon_prefect.loading._yaml import parse_yaml
    from polyaxon_prefect.specs import LoadedPolyaxonfile

_LAZY = {
    "CliOverrides": "_cli_overrides",
    "matrix_from_hparams": "_cli_overrides",
    "parse_hparams": "_cli_overrides",
    "parse_tags": "_cli_overrides",
    "source_of": "_url_file",
    "LoadedPolyaxonfile": "polyaxon_prefect.specs",
    "load_polyaxonfile": "_load",
    "resolved_document": "_document",
    "load_operation_for_signature": "_load",
    "parse_cli_params": "_cli_overrides",
    "PATCH_STRATEGIES": "_patch",
    "apply_preset": "_patch",
    "apply_run_patch": "_patch",
    "patch": "_patch",
    "hub_dirs_from_env": "_refs",
    "ParamValue": "_render",
    "TemplateError": "_render",
    "build_context": "_render",
    "render_bool": "_render",
    "render_value": "_render",
    "as_str": "_render",
    "evaluate_expression": "_render",
    "read_literal": "_render",
    "render_text": "_render",
    "parse_yaml": "_yaml",
}

__all__ = [
    "PATCH_STRATEGIES",
    "CliOverrides",
    "LoadedPolyaxonfile",
    "ParamValue",
    "TemplateError",
    "apply_preset",
    "apply_run_patch",
    "as_str",
    "build_context",
    "evaluate_expression",
    "hub_dirs_from_env",
    "load_operation_for_signature",
    "load_polyaxonfile",
    "matrix_from_hparams",
    "parse_cli_params",
    "parse_hparams",
    "parse_tags",
    "parse_yaml",
    "patch",
    "read_literal",
    "render_bool",
    "render_text",
    "render_value",
    "resolved_document",
    "source_of",
]

__getattr__ = lazy_attributes(__name__, _LAZY)
