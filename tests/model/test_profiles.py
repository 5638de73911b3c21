# Named profiles (rollout.model.profiles): the built-in cost and inference profiles, cost profiles
# read from a TOML file (named after the file), and the ProfileError for anything else: unknown
# names, unknown keys, negative or non-numeric values, unreadable files.
from pathlib import Path

import pytest

from rollout.model.profiles import (
    COST_PROFILES,
    INFERENCE_PROFILES,
    CostProfile,
    InferenceProfile,
    ProfileError,
    cost_profile,
    inference_profile,
)


def write(tmp_path: Path, text: str, name: str = "mine.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# -- cost profiles ------------------------------------------------------------------------------


def test_named_cost_profiles() -> None:
    service = cost_profile("service")
    assert service is COST_PROFILES["service"]
    assert service.name == "service"
    assert service.routing_s > 0 and service.billing_s > 0 and service.web_search_s > 0
    assert cost_profile("cpu-only") == CostProfile(name="cpu-only")


def test_safety_seconds() -> None:
    p = CostProfile(name="p", safety_base_s=0.004, safety_per_token_s=0.001)
    assert p.safety_seconds(0) == 0.0
    assert p.safety_seconds(10) == pytest.approx(0.014)


def test_cost_profile_from_toml(tmp_path: Path) -> None:
    spec = write(tmp_path, "routing_s = 0.02\nbilling_s = 1\nweb_search_s = 0.5\n", "slow.toml")
    p = cost_profile(spec)
    assert p == CostProfile(name="slow", routing_s=0.02, billing_s=1, web_search_s=0.5)
    assert p.safety_base_s == 0.0  # unset keys keep their defaults


def test_empty_toml_is_all_defaults(tmp_path: Path) -> None:
    assert cost_profile(write(tmp_path, "", "empty.toml")) == CostProfile(name="empty")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("routing_s = 0.01\nrouting_ms = 10\n", "unknown keys"),
        ("billing_s = -0.5\n", "non-negative"),
        ('billing_s = "fast"\n', "non-negative"),
        ("billing_s = [1]\n", "non-negative"),
        ("billing_s = \n", "cannot read"),
    ],
)
def test_bad_toml_is_refused(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(ProfileError, match=match):
        cost_profile(write(tmp_path, text))


def test_boolean_seconds_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ProfileError):
        cost_profile(write(tmp_path, "billing_s = true\n"))


def test_missing_toml_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="cannot read"):
        cost_profile(str(tmp_path / "absent.toml"))


def test_unknown_cost_profile_name_is_refused() -> None:
    with pytest.raises(ProfileError, match="unknown cost profile") as info:
        cost_profile("nope")
    assert "service" in str(info.value)  # the message lists the known ones


# -- inference profiles -------------------------------------------------------------------------


def test_named_inference_profiles() -> None:
    assert inference_profile("instant") == InferenceProfile(name="instant")
    p = inference_profile("65tps")
    assert p is INFERENCE_PROFILES["65tps"]
    assert p.decode_tps == 65
    assert p.decode_seconds(130) == pytest.approx(2.0)
    assert p.prefill_seconds(20_000) == pytest.approx(1.0)


def test_zero_rates_are_instant() -> None:
    p = InferenceProfile(name="i")
    assert p.decode_seconds(1000) == 0.0
    assert p.prefill_seconds(1000) == 0.0


def test_unknown_inference_profile_is_refused() -> None:
    with pytest.raises(ProfileError, match="unknown inference profile") as info:
        inference_profile("nope")
    assert "1000tps" in str(info.value)
