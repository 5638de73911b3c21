"""The Python blocks of the guides run and pass. Each block that defines tests runs under
pytest (with the `rollout_server` fixture, as a user's test file would); every other block
runs as a program (in this process), its `rollout serve` URL (http://127.0.0.1:8000/v1)
pointed at a live server. A TOML block that names an example file must match that file."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollout.testing.thread import ServerThread
from support.processes import project_env

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "docs" / "quickstart.md", ROOT / "docs" / "test-rigs.md"]
SERVE_URL = "http://127.0.0.1:8000/v1"
TIMEOUT = 120


def blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", page.read_text(), re.S | re.M)


TEST_BLOCKS = [(p, b) for p in PAGES for b in blocks(p, "python") if "def test_" in b]
SCRIPT_BLOCKS = [(p, b) for p in PAGES for b in blocks(p, "python") if "def test_" not in b]


def block_id(value: object) -> str:
    if isinstance(value, Path):
        return value.name
    return str(value).strip().splitlines()[0][:40] if isinstance(value, str) else str(value)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread() as s:  # the default model, as `rollout serve` runs it
        yield s


def test_the_guides_have_blocks_to_run() -> None:
    assert len(TEST_BLOCKS) >= 4 and SCRIPT_BLOCKS


def test_test_blocks_pass_under_pytest(tmp_path: Path) -> None:
    for i, (page, block) in enumerate(TEST_BLOCKS):
        name = f"test_{page.stem.replace('-', '_')}_{i}.py"
        (tmp_path / name).write_text(block)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=project_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    tests = sum(
        block.count("\ndef test_") + block.count("\nasync def test_") for _, block in TEST_BLOCKS
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{tests} passed" in result.stdout, result.stdout


@pytest.mark.parametrize(("page", "block"), SCRIPT_BLOCKS, ids=block_id)
def test_script_blocks_run(page: Path, block: str, server: ServerThread) -> None:
    code = block.replace(SERVE_URL, server.http_base_url)
    exec(compile(code, str(page), "exec"), {"__name__": "__main__"})


def meaningful(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_toml_blocks_match_the_files_they_name(page: Path) -> None:
    for block in blocks(page, "toml"):
        first = block.splitlines()[0]
        if first.startswith("# examples/"):
            file = ROOT / first[2:].strip()
            assert meaningful(block) == meaningful(file.read_text()), f"{page.name}: {file}"
