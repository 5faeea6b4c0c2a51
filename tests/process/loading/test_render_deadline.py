"""A template render stops at its wall-clock limit (waits about 1 s). The other template
attacks are in tests/unit/loading/test_hostile_loading.py."""

from __future__ import annotations

import time

import pytest

from polyaxon_prefect.loading._render import TemplateError, render_value

pytestmark = pytest.mark.slow


def test_5_a_render_has_a_wall_clock_limit(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("POLYAXON_PREFECT_MAX_TEMPLATE_ITERATIONS", str(10**9))
    monkeypatch.setenv("POLYAXON_PREFECT_TEMPLATE_TIMEOUT", "1")
    template = "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
    started = time.monotonic()
    with pytest.raises(TemplateError, match="longer than 1 s"):
        render_value(template, {})
    assert time.monotonic() - started < 3
