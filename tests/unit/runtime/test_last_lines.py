"""A failure message's last lines: a traceback whole, never starting at ``^^^^`` markers."""

from __future__ import annotations

from polyaxon_prefect.runtime._outcome import last_lines

TRACEBACK = [
    "some earlier output",
    "Traceback (most recent call last):",
    '  File "train.py", line 3, in <module>',
    "    dist.init_process_group('nccl')",
    "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    '  File ".../distributed_c10d.py", line 2125, in _new_process_group_helper',
    "    backend_class = ProcessGroupNCCL(",
    "                    ^^^^^^^^^^^^^^^^^",
    "ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
]


def test_a_traceback_is_kept_whole_from_its_first_line_without_caret_markers():
    lines = last_lines(TRACEBACK, 5)
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1].startswith("ValueError: ProcessGroupNCCL")
    assert not any(line.strip().startswith("^") for line in lines)


def test_a_long_tail_starts_at_a_frame_not_inside_one():
    lines = [f"  File 'f{n}.py', line {n}, in g\n" for n in range(30)]
    noisy = [x for n in lines for x in (n.rstrip(), "    call()", "    ^^^^^^")]
    tail = last_lines([*noisy, "KeyError: 'x'"], 4)
    assert tail[0].startswith("  File") and tail[-1] == "KeyError: 'x'"


def test_plain_output_is_its_last_lines():
    assert last_lines(["a", "", "b", "c"], 2) == ["b", "c"]
