# An engine's model table: a name resolves to its exact entry or its longest prefix entry, the
# same with the lookups remembered as without; the table is read only, a new table replaces the
# remembered lookups, and what is remembered is bounded (in names and in their length).
from __future__ import annotations

import pytest

from rollout.engine.engine import Engine
from rollout.model import profiles
from rollout.model.profiles import DEFAULT_MODEL, ModelProfile

NAMES = ["gpt-5", "gpt-5-chat-latest", "gpt-5.1-codex", "o3-mini", "m", "gpt-4o", "gpt-4.1-nano"]


def test_names_resolve_as_the_table_says_whether_remembered_or_not() -> None:
    engine = Engine()
    for _ in range(2):  # the second round comes from the memo
        for name in NAMES:
            assert engine.profile(name) == profiles.model_profile(name)
    assert engine.profile("gpt-5-chat-latest").name == "gpt-5-chat*"  # the longest prefix
    assert engine.profile("m") is DEFAULT_MODEL


def test_the_table_is_read_only_and_a_new_one_replaces_what_was_remembered() -> None:
    engine = Engine(models={"tiny*": ModelProfile(name="tiny*", context_window=300)})
    assert engine.profile("tiny-1").context_window == 300
    with pytest.raises(TypeError):
        engine.models["tiny-1"] = DEFAULT_MODEL  # type: ignore[index]
    engine.models = {"tiny*": ModelProfile(name="tiny*", context_window=600)}
    assert engine.profile("tiny-1").context_window == 600


def test_what_is_remembered_is_bounded() -> None:
    engine = Engine()
    for i in range(profiles.LOOKUPS_KEPT + 10):
        assert engine.profile(f"model-{i}") is DEFAULT_MODEL
    long_name = "gpt-5" + "x" * profiles.LOOKUP_NAME_CHARS
    assert engine.profile(long_name).name == "gpt-5*"
    assert engine._lookups is not None
    remembered = engine._lookups.known
    assert len(remembered) == profiles.LOOKUPS_KEPT and long_name not in remembered
