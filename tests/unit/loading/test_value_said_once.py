"""A problem names the offending value once."""

from __future__ import annotations

from pathlib import Path

from polyaxon_prefect import check

DAG = """\
version: 1.1
kind: component
name: c
run:
  kind: dag
  concurrency: -2
  operations:
  - {name: a, dagRef: noop, trigger: all_finished}
  components:
  - {name: noop, run: {kind: job, container: {command: [python, -c, "pass"]}}}
"""


def test_the_value_is_said_once(tmp_path: Path):
    path = tmp_path / "dag.yaml"
    path.write_text(DAG, encoding="utf-8")

    messages = [p.message for p in check(path)]

    assert len(messages) == 2, messages
    trigger = next(m for m in messages if "all_finished" in m)
    concurrency = next(m for m in messages if "-2" in m)
    assert trigger.count("all_finished") == 1 and concurrency.count("-2") == 1
