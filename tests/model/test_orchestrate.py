"""The default model as the root of a multi-agent response (rollout.model.orchestrate): the
parallel parts it finds in a prompt, one subagent each."""

from __future__ import annotations

import pytest

from rollout.model.orchestrate import MAX_PARTS, parts


@pytest.mark.parametrize(
    ("prompt", "names"),
    [
        ("Read src/a.py and src/b.py and tell me what they do.", ["reader_1", "reader_2"]),
        ("Run tests/test_x.py and tests/test_y.py, then report.", ["tester_1", "tester_2"]),
        ("Read README.md", []),  # one part: no parallel work
        ("What is the weather in Paris?", []),
        ("Compare a.py with a.py", []),  # the same file twice is one part
    ],
)
def test_parts_of_a_prompt(prompt: str, names: list[str]) -> None:
    assert [name for name, _ in parts(prompt)] == names


def test_tasks_name_their_part_and_are_capped() -> None:
    found = parts(" ".join(f"f{i}.py" for i in range(10)))
    assert len(found) == MAX_PARTS
    assert found[0] == ("reader_1", "Read f0.py and say what it does.")
