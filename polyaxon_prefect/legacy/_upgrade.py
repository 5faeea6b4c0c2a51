"""``polyaxon-prefect upgrade``: rewrite a legacy Polyaxonfile as v1.1 YAML.

The output is plain block-style YAML in the order people read a Polyaxonfile (version, kind,
name... then the matrix and the component), headed by a comment that says where it came from
and one ``# NOTE:`` line for everything that was dropped or approximated, so a reviewer sees at
a glance what to check by hand.
"""

from __future__ import annotations

import yaml

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.legacy._convert import LegacyConversion, convert, is_legacy

__all__ = ["dump_yaml", "render_upgrade", "upgrade_text"]


class _Dumper(yaml.SafeDumper):
    """Block style, no ``&id001`` anchors, multi-line strings as ``|`` blocks."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def dump_yaml(data: object) -> str:
    """``data`` as block-style YAML, keys in insertion order, long lines never folded."""
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=10_000,
    )


def render_upgrade(conversion: LegacyConversion, *, file: str | None = None) -> str:
    """The upgraded file's text: header comment, ``# NOTE:`` lines, then the v1.1 YAML."""
    source = file or "a legacy (v0.x) Polyaxonfile"
    lines = [f"# upgraded from {source} by polyaxon-prefect upgrade"]
    if conversion.notes:
        lines.append("# Review these changes (legacy path: what happened):")
        for note in conversion.notes:
            text = " ".join(note.format().split())
            lines.append(f"# NOTE: {text}")
    return "\n".join(lines) + "\n" + dump_yaml(conversion.data)


def upgrade_text(text: str, *, file: str | None = None) -> str:
    """Parse a legacy Polyaxonfile, convert it, and return the v1.1 YAML text.

    Raises `PolyaxonfileError` (with file:line:col) when the text is not valid YAML, is not a
    legacy file, or breaks a legacy rule.
    """
    from polyaxon_prefect._source import parse_yaml

    document = parse_yaml(text, file=file)
    if not is_legacy(document.data):
        raise PolyaxonfileError(
            [
                document.positions.problem(
                    Problem(
                        "this is not a legacy (v0.x) Polyaxonfile: nothing to upgrade",
                        rule="not_legacy",
                        path=("version",) if isinstance(document.data, dict) else (),
                        hint="legacy files have `version: 1` and `kind: experiment` or "
                        "`kind: group`",
                    )
                )
            ]
        )
    conversion = convert(document.data, positions=document.positions)
    return render_upgrade(conversion, file=file)
