"""docs/experiments.md's tables are generated from the runs in docs/results/ (by
docs/gen_experiments.py): a hand-edited table, a run changed under its table, or a quick run
that is not what `rollout compare` runs by default fails here."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import orjson
import pytest

from support.generators import generator as load_generator

ROOT = Path(__file__).resolve().parents[3]
GENERATOR = ROOT / "docs" / "gen_experiments.py"
DOC = ROOT / "docs" / "experiments.md"


def generator() -> ModuleType:
    return load_generator("gen_experiments")


def test_the_page_is_what_its_runs_say() -> None:
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr


#: The tables the page may hold outside the generated blocks: they describe, they measure
#: nothing.
DESCRIPTIVE = (
    "| mode | transport | how a turn continues | server state between turns |",
    "| workload | source (as quoted) | turns | tool output tokens per call | reasoning tokens "
    "per step | visible output per step |",
)


def test_every_table_of_figures_is_generated() -> None:
    lines = generator().BLOCK.sub("", DOC.read_text()).splitlines()
    heads = [a for a, b in itertools.pairwise(lines) if b.startswith(("| ---", "|---"))]
    assert heads and all(h in DESCRIPTIVE for h in heads), heads


def test_a_hand_edited_table_is_made_anew() -> None:
    gen = generator()
    text = DOC.read_text()
    edited = text.replace("| ws-append |", "| ws-append | 1 |", 1)
    assert edited != text
    assert gen.render(edited) == text


def test_a_quick_run_that_is_not_the_default_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gen = generator()
    shutil.copytree(ROOT / "docs" / "results" / "quick", tmp_path / "quick")
    monkeypatch.setattr(gen, "RESULTS", tmp_path)
    assert gen.quick_problems() == []
    path = tmp_path / "quick" / "results.json"
    data = orjson.loads(path.read_bytes())
    data["cost_profile"]["name"] = "cpu-only"
    data["repeats"] = 1
    path.write_bytes(orjson.dumps(data))
    problems = gen.quick_problems()
    assert any("costs 'cpu-only'" in p for p in problems)
    assert any("1 repeats" in p for p in problems)
