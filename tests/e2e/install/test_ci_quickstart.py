# What CI runs as the README's first Quickstart command (`.ci/run --print-quickstart`, the
# extraction .ci/run uses) is the first ```sh block under "## Quickstart", as written: here
# against the README (read independently) and against READMEs made to trip it up.
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CI = ROOT / ".ci" / "run"


def printed(checkout: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(checkout / ".ci" / "run"), "--print-quickstart"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_ci_runs_the_readmes_first_quickstart_block() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"^```sh\n(.*?)^```$", section, re.S | re.M)
    assert match, "README.md has no sh block under ## Quickstart"
    done = printed(ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == match.group(1)


def checkout_with(tmp_path: Path, readme: str) -> Path:
    """A directory with .ci/run and this README."""
    (tmp_path / ".ci").mkdir()
    shutil.copy2(CI, tmp_path / ".ci" / "run")
    (tmp_path / "README.md").write_text(readme)
    return tmp_path


@pytest.mark.parametrize(
    ("readme", "command"),
    [
        (
            "## Quickstart\n\n```sh\npip install '.[plot]' && rollout compare\n```\n",
            "pip install '.[plot]' && rollout compare\n",
        ),
        # The first sh block of the section: not one before it, nor a python block; a "## "
        # line inside the block is part of it.
        (
            "# t\n\n```sh\nbefore\n```\n\n## Quickstart\n\n```python\nprint(1)\n```\n\n"
            "```sh\none\n## two\n```\n\n```sh\nsecond\n```\n",
            "one\n## two\n",
        ),
    ],
    ids=["as-written", "first-sh-block-of-the-section"],
)
def test_the_extraction(tmp_path: Path, readme: str, command: str) -> None:
    done = printed(checkout_with(tmp_path, readme))
    assert done.returncode == 0, done.stderr
    assert done.stdout == command


@pytest.mark.parametrize(
    "readme",
    [
        "## Quickstart\n\nno block\n\n## Next\n\n```sh\nnot this\n```\n",
        "## Quickstarts\n\n```sh\nnot this\n```\n",
        "## Quickstart\n\n```sh\nunterminated\n",
    ],
    ids=["none-in-the-section", "another-heading", "unterminated"],
)
def test_no_block_is_a_failure(tmp_path: Path, readme: str) -> None:
    assert printed(checkout_with(tmp_path, readme)).returncode != 0
