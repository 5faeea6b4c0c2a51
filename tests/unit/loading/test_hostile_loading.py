"""Hostile and careless input to `check`, `upgrade` and the loader: one test per attack.

Real files, real child processes (to measure memory and time), and a real HTTP server on
loopback for the URL cases. Each test asserts the exact outcome: a located error naming the
rule, bounded memory (peak RSS of the child under 200 MB) and time (under 10 s).
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect import check
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._render import TemplateError, render_value

PY = sys.executable
JOB = (
    "version: 1.1\nkind: component\nname: {name}\n"
    "run:\n  kind: job\n  container: {{command: [echo]}}\n"
)


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 30
) -> tuple[int, str, str, int]:
    """Run the CLI in a child that reports its own peak RSS (KiB) on its last stderr line
    (Linux's /proc; elsewhere 0, and the memory bound is not checked)."""
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child forked from a big
    # pytest process would report the parent's size.
    code = (
        "import sys\n"
        "from polyaxon_prefect.cli import main\n"
        "def hwm():\n"
        "    import os\n"
        "    if not os.path.exists('/proc/self/status'):\n"
        "        return 0\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM:'):\n"
        "            return int(line.split()[1])\n"
        "    return 0\n"
        "try:\n    rc = main(sys.argv[1:])\n"
        "finally:\n"
        "    print('RSS', hwm(), file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [PY, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )
    *lines, last = done.stderr.rstrip("\n").splitlines() or ["RSS 0"]
    assert last.startswith("RSS "), done.stderr
    return done.returncode, done.stdout, "\n".join(lines), int(last.split()[1])


def timed_check(path: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str, int]:
    started = time.monotonic()
    code, out, err, rss_kb = cli("check", "-f", str(path), *extra, env=env)
    assert time.monotonic() - started < 10
    assert rss_kb < 200 * 1024, rss_kb
    return code, out + err, rss_kb


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- a loopback server


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: dict[str, Any] = {}

    def do_GET(self) -> None:
        route = self.routes.get(self.path)
        if route is None:
            self.send_error(404)
            return
        if callable(route):
            route(self)
            return
        body = route.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, Any]]]:
    routes: dict[str, Any] = {}
    handler = type("Handler", (_Handler,), {"routes": routes})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", routes
    finally:
        httpd.shutdown()
        httpd.server_close()


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


def test_5_a_render_has_a_wall_clock_limit(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("POLYAXON_PREFECT_MAX_TEMPLATE_ITERATIONS", str(10**9))
    monkeypatch.setenv("POLYAXON_PREFECT_TEMPLATE_TIMEOUT", "1")
    template = "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
    started = time.monotonic()
    with pytest.raises(TemplateError, match="longer than 1 s"):
        render_value(template, {})
    assert time.monotonic() - started < 3


def test_5_a_costly_command_template_is_a_located_error(tmp_path: Path):
    path = tmp_path / "job.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: t\nrun:\n  kind: job\n"
        "  container: {command: [echo, \"{{ 'a' * 10**9 }}\"]}\n",
        encoding="utf-8",
    )
    from polyaxon_prefect.loading._load import load_polyaxonfile
    from polyaxon_prefect.runtime._job import prepare_job

    with pytest.raises(PolyaxonfileError) as caught:
        prepare_job(load_polyaxonfile(path))
    [problem] = caught.value.problems
    assert problem.file == str(path) and problem.line == 6
    assert "more than 1000000 items" in problem.message


# ----------------------------------------------------------------------------- 10: echoes


def test_10_unknown_keys_of_a_referenced_file_are_named_not_echoed(tmp_path: Path):
    token = "AKIA-TOKEN-0123456789-never-show"
    (tmp_path / "secrets.yaml").write_text(
        JOB.format(name="s") + f"aws_secret_key: {token}\n", encoding="utf-8"
    )
    op = tmp_path / "op.yaml"
    op.write_text("version: 1.1\nkind: operation\npathRef: secrets.yaml\n", encoding="utf-8")

    code, output, _ = timed_check(op, "--json")

    assert code == 1
    assert token not in output
    [problem] = json.loads(_json_part(output))
    assert problem["path"] == "aws_secret_key" and problem["rule"] == "extra_forbidden"
    assert "value" not in problem


def _json_part(output: str) -> str:
    start = output.index("[")
    return output[start : output.rindex("]") + 1]


def test_10_refs_in_a_url_fetched_file_resolve_against_its_url(tmp_path: Path, server: Any):
    base, routes = server
    token = "LOCAL-SECRET-never-read-0123"
    secret = tmp_path / "local-secret.yaml"
    secret.write_text(JOB.format(name="local") + f"# {token}\n", encoding="utf-8")
    routes["/dag.yaml"] = (
        "version: 1.1\nkind: component\nname: remote\nrun:\n  kind: dag\n  operations:\n"
        f"  - {{name: a, pathRef: {secret}}}\n  - {{name: b, pathRef: job.yaml}}\n"
    )
    routes["/job.yaml"] = JOB.format(name="remote-job")
    op = tmp_path / "op.yaml"
    op.write_text(f"version: 1.1\nkind: operation\nurlRef: {base}/dag.yaml\n", encoding="utf-8")

    code, output, _ = timed_check(op)

    assert code == 1
    assert token not in output
    assert f"{base}{secret}" in output and "404" in output  # asked of the server, not the disk
    assert output.count("problem") == 1 and "1 problem found." in output  # job.yaml: fetched


# ----------------------------------------------------------------------------- 11: alias bombs


def test_11_an_alias_bomb_is_refused_with_bounded_memory(tmp_path: Path):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(), encoding="utf-8")
    assert path.stat().st_size < 600

    code, output, _ = timed_check(path)

    assert code == 1
    assert "bomb.yaml:" in output and "POLYAXON_PREFECT_MAX_YAML_NODES" in output
    assert "more than 200000 YAML nodes" in output


def test_11_an_alias_bomb_behind_a_url_ref(tmp_path: Path, server: Any):
    base, routes = server
    routes["/bomb.yaml"] = alias_bomb()
    op = tmp_path / "op.yaml"
    op.write_text(f"version: 1.1\nkind: operation\nurlRef: {base}/bomb.yaml\n", encoding="utf-8")

    code, output, _ = timed_check(op)

    assert code == 1 and "more than 200000 YAML nodes" in output


# ----------------------------------------------------------------------------- 12: cycles


def test_12_two_self_references_end_at_once_naming_files_and_lines(tmp_path: Path):
    path = tmp_path / "self.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: self\nrun:\n  kind: dag\n  operations:\n"
        "  - {name: a, pathRef: self.yaml}\n  - {name: b, pathRef: self.yaml}\n",
        encoding="utf-8",
    )

    code, output, _ = timed_check(path)

    assert code == 1
    assert f"{path}:7:" in output and f"{path}:8:" in output
    assert f"cycle: {path} -> {path} (at {path}:7)" in output
    assert "<input>" not in output


def test_12_a_cycle_through_two_files(tmp_path: Path):
    (tmp_path / "b.yaml").write_text(
        "version: 1.1\nkind: component\nname: b\nrun:\n  kind: dag\n  operations:\n"
        "  - {name: x, pathRef: c.yaml}\n",
        encoding="utf-8",
    )
    (tmp_path / "c.yaml").write_text(
        "version: 1.1\nkind: component\nname: c\nrun:\n  kind: dag\n  operations:\n"
        "  - {name: y, pathRef: b.yaml}\n  - {name: z, pathRef: b.yaml}\n",
        encoding="utf-8",
    )

    code, output, _ = timed_check(tmp_path / "b.yaml")

    assert code == 1
    b, c = tmp_path / "b.yaml", tmp_path / "c.yaml"
    assert f"{b} -> {c} (at {b}:7) -> {b} (at {c}:7)" in output
    assert f"{b} -> {c} (at {b}:7) -> {b} (at {c}:8)" in output


def test_12_the_total_number_of_references_is_bounded(tmp_path: Path):
    (tmp_path / "leaf.yaml").write_text(JOB.format(name="leaf"), encoding="utf-8")
    ops = "".join(f"  - {{name: op{i}, pathRef: leaf.yaml}}\n" for i in range(30))
    path = tmp_path / "wide.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: wide\nrun:\n  kind: dag\n  operations:\n" + ops,
        encoding="utf-8",
    )

    code, output, _ = timed_check(path, env={"POLYAXON_PREFECT_MAX_REFERENCES": "10"})

    assert code == 1
    assert "more than 10 component references" in output and f"{path}:17:" in output
    assert "1 problem found." in output


# ----------------------------------------------------------------------------- 13: url deadline


def test_13_a_trickling_server_hits_the_total_deadline(tmp_path: Path, server: Any):
    base, routes = server

    def trickle(handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        for _ in range(60):
            handler.wfile.write(b"#")
            handler.wfile.flush()
            time.sleep(0.5)

    routes["/slow.yaml"] = trickle
    op = tmp_path / "op.yaml"
    op.write_text(f"version: 1.1\nkind: operation\nurlRef: {base}/slow.yaml\n", encoding="utf-8")
    started = time.monotonic()

    code, output, _ = timed_check(op, env={"POLYAXON_PREFECT_URL_TIMEOUT": "2"})

    assert code == 1 and "took longer than 2s" in output
    assert time.monotonic() - started < 6


# ----------------------------------------------------------------------------- 14: special files


def test_14_path_ref_to_a_device_is_refused_without_reading(tmp_path: Path):
    op = tmp_path / "op.yaml"
    op.write_text("version: 1.1\nkind: operation\npathRef: /dev/zero\n", encoding="utf-8")

    code, output, _ = timed_check(op)

    assert code == 1 and "/dev/zero is not a regular file" in output and "op.yaml:3:" in output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_14_path_ref_to_a_fifo_does_not_hang(tmp_path: Path):
    os.mkfifo(tmp_path / "pipe.yaml")
    op = tmp_path / "op.yaml"
    op.write_text("version: 1.1\nkind: operation\npathRef: pipe.yaml\n", encoding="utf-8")

    code, output, _ = timed_check(op)

    assert code == 1 and "pipe.yaml is not a regular file" in output


# ----------------------------------------------------------------------------- 15: size


def test_15_a_50_mb_file_is_refused_at_once(tmp_path: Path):
    path = tmp_path / "big.yaml"
    with path.open("w", encoding="utf-8") as handle:
        handle.write("version: 1.1\nkind: component\nname: big\nx:\n")
        line = "- " + "y" * 97 + "\n"
        handle.write(line * (50 * 1024 * 1024 // len(line)))

    code, output, _ = timed_check(path)

    assert code == 1
    assert "more than the 4194304-byte limit" in output
    assert "POLYAXON_PREFECT_MAX_FILE_BYTES" in output


def test_15_the_limit_is_a_setting(tmp_path: Path):
    path = tmp_path / "job.yaml"
    path.write_text(JOB.format(name="small"), encoding="utf-8")

    code, output, _ = timed_check(path, env={"POLYAXON_PREFECT_MAX_FILE_BYTES": "20"})

    assert code == 1 and "more than the 20-byte limit" in output


def test_15_base_60_and_duplicate_keys_hold_with_the_fast_parser(tmp_path: Path):
    from polyaxon_prefect._source._yaml import parse_yaml

    document = parse_yaml("a: 1:10:2\nb: 0x1f\nc: 1_000\n")
    assert document.data == {"a": "1:10:2", "b": 31, "c": 1000}
    assert document.positions.by_path[("c",)] == (3, 1)
    with pytest.raises(PolyaxonfileError, match="duplicate key `a`"):
        parse_yaml("a: 1\na: 2\n")


# ----------------------------------------------------------------------------- 16, 17: bytes, depth


@pytest.mark.parametrize(
    ("char", "line", "column"), [("\x00", 2, 5), ("\x1b", 2, 5), ("\x7f", 2, 5)]
)
def test_16_control_bytes_are_located(tmp_path: Path, char: str, line: int, column: int):
    path = tmp_path / "ctl.yaml"
    path.write_text(f"version: 1.1\nkind{char}: component\n", encoding="utf-8")

    code, output, _ = timed_check(path)

    assert code == 1
    assert f"ctl.yaml:{line}:{column}: the file contains the control character {char!r}" in output
    assert "Traceback" not in output


def test_16_a_file_of_zeros(tmp_path: Path):
    path = tmp_path / "z"
    path.write_bytes(b"\0" * 64)

    code, output, _ = timed_check(path)

    assert code == 1 and "z:1:1: the file contains the control character" in output


@pytest.mark.parametrize(
    "text",
    ["a: " + "[" * 600 + "]" * 600 + "\n", "a: " + "{b: " * 600 + "1" + "}" * 600 + "\n"],
)
def test_17_deep_nesting_is_located(tmp_path: Path, text: str):
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")

    code, output, _ = timed_check(path)

    assert code == 1
    assert "deep.yaml:1:" in output and "nested more than 64 levels" in output
    assert "RecursionError" not in output


def test_17_a_recursive_alias_is_located(tmp_path: Path):
    path = tmp_path / "rec.yaml"
    path.write_text("version: 1.1\na: &a [1, *a]\n", encoding="utf-8")

    code, output, _ = timed_check(path)

    assert code == 1 and "rec.yaml:2:" in output and "nested more than 64 levels" in output


def test_17_deeply_nested_p_json_is_a_problem(tmp_path: Path):
    path = tmp_path / "job.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: j\ninputs:\n- {name: d, type: dict}\n"
        "run: {kind: job, container: {command: [echo]}}\n",
        encoding="utf-8",
    )
    deep = '{"a":' * 5000 + "1" + "}" * 5000

    code, output, _ = timed_check(path, "-P", f"d={deep}")

    assert code == 1
    assert "-P: params.d.value" in output and "nested more than 100 levels deep" in output
    assert len(output) < 2000  # the value is cut, not echoed


# ----------------------------------------------------------------------------- 18, 19


def test_18_upgrade_of_a_non_utf8_file(tmp_path: Path):
    path = tmp_path / "old.yml"
    path.write_bytes(b"version: 1\nkind: experiment\n# caf\xe9\n")

    code, out, err, _ = cli("upgrade", "-f", str(path))

    assert code == 1 and out == ""
    assert "is not a UTF-8 text file (byte 0xe9 at line 3)" in err
    assert "Traceback" not in err


def test_19_check_says_what_a_matrix_runs(tmp_path: Path):
    (tmp_path / "job.yaml").write_text(
        "version: 1.1\nkind: component\nname: trainer\ninputs:\n- {name: lr, type: float}\n"
        "run: {kind: job, container: {command: [echo]}}\n",
        encoding="utf-8",
    )
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "version: 1.1\nkind: operation\nmatrix:\n  kind: grid\n  params:\n"
        "    lr: {kind: choice, value: [0.1, 0.2, 0.3]}\npathRef: job.yaml\n",
        encoding="utf-8",
    )

    code, output, _ = timed_check(grid)

    assert code == 0
    assert f"{grid}: valid (a grid sweep of 3 trials of job `trainer`)" in output
    assert check(grid) == []
