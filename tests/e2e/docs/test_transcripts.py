"""The transcripts in docs/test-rigs.md ("The default model") are real conversations with the
default model (docs/gen_transcripts.py) and must match what it says now: a change to the model's
words fails here until the block is regenerated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.generators import generator

ROOT = Path(__file__).resolve().parents[3]
GENERATOR = ROOT / "docs" / "gen_transcripts.py"
DOC = ROOT / "docs" / "test-rigs.md"


def test_the_block_is_between_its_markers_once() -> None:
    gen = generator("gen_transcripts")
    text = DOC.read_text()
    assert text.count(gen.BEGIN) == 1 and text.count(gen.END) == 1
    assert text.index(gen.BEGIN) < text.index(gen.END)
    section = text.split("## The default model", 1)[1].split("\n## ", 1)[0]
    assert gen.BEGIN in section, "the transcripts belong to the section on the default model"


def test_every_case_is_in_the_block() -> None:
    gen = generator("gen_transcripts")
    text = DOC.read_text()
    block = text[text.index(gen.BEGIN) : text.index(gen.END)]
    for case in [*gen.BEST, *gen.LIMITS]:
        for prompt in case.turns:
            assert f"> {prompt}" in block, prompt
    for case in gen.LIMITS:
        assert f"# {case.label}" in block, case.label


def test_the_transcripts_are_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
