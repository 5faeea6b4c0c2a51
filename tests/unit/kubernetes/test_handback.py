"""The pod's handback block: the sh wrapper really run here, its log parsed in any chunks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.kubernetes import LIMIT_BYTES, HandbackParser
from polyaxon_prefect.kubernetes._handback import marker, wrap_command

WRITE = (
    "import json, os, sys\n"
    "d = sys.argv[1]\n"
    "out = json.dumps({'loss': 0.25, 'note': 'a\\nb'})\n"
    "open(os.path.join(d, 'outputs.json'), 'w').write(out)\n"
    "open(os.path.join(d, 'metrics.jsonl'), 'w').write('{\"loss\": 0.5}\\n{\"loss\": 0.25}\\n')\n"
    "print('training', flush=True)\n"
    "print('::polyaxon-prefect:fake:: begin x', flush=True)\n"
    "sys.exit(int(sys.argv[2]))\n"
)


def _run(tmp_path: Path, code: int, nonce: str = "n0nce") -> subprocess.CompletedProcess[str]:
    argv = wrap_command(
        [sys.executable, "-c", WRITE], [str(tmp_path), str(code)], str(tmp_path), "u1", nonce
    )
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("code", [0, 3])
def test_the_wrapper_hands_back_outputs_and_keeps_the_exit_code(tmp_path: Path, code: int) -> None:
    done = _run(tmp_path, code)
    assert done.returncode == code
    parser = HandbackParser("n0nce")
    shown = parser.feed(done.stdout) + parser.close()
    assert shown == ["training", "::polyaxon-prefect:fake:: begin x"], "user lines only"
    block = parser.result()
    assert block is not None and block.exit_code == code
    assert json.loads(block.outputs_text or "") == {"loss": 0.25, "note": "a\nb"}
    assert [json.loads(line) for line in block.metrics_lines] == [{"loss": 0.5}, {"loss": 0.25}]


def test_a_block_split_across_chunks_is_read_whole(tmp_path: Path) -> None:
    text = _run(tmp_path, 0).stdout
    for size in (1, 7, 64):
        parser = HandbackParser("n0nce")
        shown: list[str] = []
        for i in range(0, len(text), size):
            shown += parser.feed(text[i : i + size])
        shown += parser.close()
        assert shown == ["training", "::polyaxon-prefect:fake:: begin x"]
        assert parser.result() is not None and parser.result().exit_code == 0  # type: ignore[union-attr]


def test_user_output_imitating_the_marker_does_not_stand_for_the_block() -> None:
    """A program that prints a whole block with the real marker (it cannot know the nonce,
    but even so): the wrapper's block comes last and wins."""
    m = marker("n0nce")
    log = (
        f'{m} begin u1\n{m} outputs {{"loss": 99}}\n{m} end 0\n'
        f'{m} begin u1\n{m} outputs {{"loss": 1}}\n'  # a half block: ignored
        f'real line\n{m} begin u1\n{m} outputs {{"loss": 0.1}}\n{m} end 0\n'
    )
    parser = HandbackParser("n0nce")
    assert parser.feed(log) == ["real line"]
    assert json.loads(parser.result().outputs_text or "") == {"loss": 0.1}  # type: ignore[union-attr]


def test_no_block_when_the_wrapper_never_finished() -> None:
    parser = HandbackParser("n0nce")
    parser.feed(f"{marker('n0nce')} begin u1\n{marker('n0nce')} outputs {{}}\n")
    assert parser.result() is None


def test_outputs_over_the_limit_are_reported_not_sent(tmp_path: Path) -> None:
    (tmp_path / "outputs.json").write_text(json.dumps({"blob": "x" * (LIMIT_BYTES + 10)}))
    argv = wrap_command(["true"], None, str(tmp_path), "u1", "big")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and len(done.stdout) < 1000
    parser = HandbackParser("big")
    parser.feed(done.stdout)
    block = parser.result()
    assert block is not None and block.outputs_text is None
    assert block.too_big == LIMIT_BYTES + 22
