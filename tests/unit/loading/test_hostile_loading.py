"""Hostile and careless input to `check`, `upgrade` and the loader: one test per attack.

The attacks met in this process. Those that run `check` in a child process (to measure its
memory and time) or fetch from an HTTP server on loopback are in
tests/process/loading/test_hostile_loading.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._render import TemplateError, render_value

# ----------------------------------------------------------------------------- 5: templates


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("{{ 'a' * 10**9 }}", "more than 1000000 items"),
        ("{{ 9 ** (9 ** 9) }}", "a number too large"),
        ("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", "loops"),
        ("{{ 'a' | center(10**9) }}", "argument of 1000000000"),
        ("{{ 'a'.ljust(10**9) }}", "argument of 1000000000"),
    ],
)
def test_5_costly_templates_fail_fast_with_a_bounded_error(template: str, says: str):
    started = time.monotonic()
    with pytest.raises(TemplateError) as caught:
        render_value(template, {})
    assert says in str(caught.value)
    assert "POLYAXON_PREFECT_MAX_TEMPLATE" in (caught.value.hint or "")
    assert time.monotonic() - started < 2


def test_5_a_costly_command_template_is_a_located_error(tmp_path: Path):
    path = tmp_path / "job.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: t\nrun:\n  kind: job\n"
        "  container: {command: [echo, \"{{ 'a' * 10**9 }}\"]}\n",
        encoding="utf-8",
    )
    from polyaxon_prefect.loading._load import load_polyaxonfile
    from polyaxon_prefect.runtime._one_process import prepare_job

    with pytest.raises(PolyaxonfileError) as caught:
        prepare_job(load_polyaxonfile(path))
    [problem] = caught.value.problems
    assert problem.file == str(path) and problem.line == 6
    assert "more than 1000000 items" in problem.message


# ----------------------------------------------------------------------------- 15: size


def test_15_base_60_and_duplicate_keys_hold_with_the_fast_parser(tmp_path: Path):
    from polyaxon_prefect._source._located_yaml import parse_yaml

    document = parse_yaml("a: 1:10:2\nb: 0x1f\nc: 1_000\n")
    assert document.data == {"a": "1:10:2", "b": 31, "c": 1000}
    assert document.positions.by_path[("c",)] == (3, 1)
    with pytest.raises(PolyaxonfileError, match="duplicate key `a`"):
        parse_yaml("a: 1\na: 2\n")
