"""The pictures of a metric history (terminal chart, sparkline, SVG in the chart artifact) and
the op paths `metrics` reads a DAG's and a sweep's histories under."""

from __future__ import annotations

import base64
import math
import re
import xml.etree.ElementTree as ET
from typing import Any

from polyaxon_prefect.prefect.cli._metrics_cli import run_leaves
from polyaxon_prefect.prefect.watch._metric_charts import (
    chart_markdown,
    sparkline,
    svg_chart,
    text_chart,
)


def _points(*values: Any, steps: bool = True) -> list[dict[str, Any]]:
    return [
        {"step": i if steps else None, "value": v, "timestamp": None} for i, v in enumerate(values)
    ]


def test_a_sparkline_goes_from_the_lowest_to_the_highest_bar() -> None:
    assert sparkline(_points(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)) == "▁▂▃▄▅▆▇█"
    assert sparkline(_points(2.0, 2.0)) == "▁▁"
    assert sparkline(_points(math.nan, "x")) == ""
    assert len(sparkline(_points(*range(1000)), width=24)) == 24


def test_the_terminal_chart_has_its_axes_and_each_columns_value() -> None:
    lines = text_chart("loss", _points(4.0, 2.0, 0.0), width=21, height=5)
    assert lines[0] == "loss (3 points)"
    rows = lines[1:6]
    assert [row.split("┤")[0].strip() for row in rows] == ["4", "", "2", "", "0"]
    assert rows[0].split("┤")[1].startswith("•") and rows[-1].endswith("•")
    assert all(len(row.split("┤")[1]) <= 21 for row in rows)
    assert lines[-1].split() == ["0", "2", "step"]
    flat = text_chart("acc", _points(0.5), width=10, height=5)
    assert [row.split("┤")[0].strip() for row in flat[1:6]] == ["", "", "0.5", "", ""]
    assert text_chart("x", _points(math.inf)) == ["x: no finite value to plot"]


def test_the_svg_chart_is_a_document_with_one_point_per_value() -> None:
    svg = svg_chart("loss <train>", _points(3.0, 1.0, math.nan, 0.5))
    assert svg is not None
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    line = root.find(f"{ns}polyline")
    assert line is not None and len(line.get("points", "").split()) == 3  # NaN left out
    assert "loss <train>" in [t.text for t in root.iter(f"{ns}text")]
    assert svg_chart("empty", []) is None


def test_the_chart_artifact_holds_an_image_per_main_metric_and_a_row_per_metric() -> None:
    history = {
        "loss": _points(1.0, 0.5, 0.25),
        "lr": _points(0.1),  # one point: a row, no chart
        **{f"m{i}": _points(0.0, float(i)) for i in range(7)},
    }
    text = chart_markdown("metrics of `train`", history)
    assert text is not None and text.startswith("# metrics of `train`\n")
    images = re.findall(r"!\[([^\]]+)\]\(data:image/svg\+xml;base64,([^)]+)\)", text)
    assert [name for name, _ in images] == ["loss", "m0", "m1", "m2", "m3", "m4"]  # six
    ET.fromstring(base64.b64decode(images[0][1]))  # a whole SVG document
    assert "| loss | 3 | 1 | 0.25 | 0.25 | 1 | █▃▁ |" in text
    assert "| lr | 1 | 0.1 | 0.1 | 0.1 | 0.1 | ▁ |" in text
    assert chart_markdown("t", {"lr": _points(0.1)}) is None


def test_a_dags_ops_and_a_sweeps_trials_are_read_under_their_paths() -> None:
    run = {
        "ops": {
            "first": {"uuid": "a" * 32},
            "tune": {"uuid": "b" * 32, "trials": [{"index": 0, "uuid": "c" * 32}, {"index": 1}]},
            "nested": {"uuid": "d" * 32, "ops": {"inner": {"uuid": "e" * 32}}},
            "skipped": {"uuid": None},
        }
    }
    assert run_leaves(run) == [
        ("first", "a" * 32),
        ("tune/trial-0", "c" * 32),
        ("tune/trial-1", None),
        ("nested/inner", "e" * 32),
        ("skipped", None),
    ]
    assert run_leaves({"trials": [{"index": 3, "uuid": "f" * 32}]}) == [("trial-3", "f" * 32)]
