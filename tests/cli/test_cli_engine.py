# The shared-engine flags of `rollout serve` (`--engine`, `--kv-policy`, `--kv-ttl`) and `rollout
# engines`: what each flag builds, the combinations refused (exit 2, one line naming the flags),
# the help naming every profile and policy, and the listing printing every profile's figures.
from __future__ import annotations

import argparse
from typing import Any

import pytest

from rollout import cli
from rollout.cli import commands
from rollout.cli.parser import parser
from rollout.model.accel.profile import ENGINE_PROFILES
from rollout.model.accel.requests import DEFAULT_TTL_S, POLICIES, KvPolicy

ENGINE = "h100-llama3.1-8b"


def serve_args(*flags: str) -> argparse.Namespace:
    return parser().parse_args(["serve", *flags])


def setup_of(*flags: str) -> Any:
    """What `rollout serve FLAGS` builds (its store closed again), or its exit status."""
    setup = commands._setup(serve_args(*flags))
    if not isinstance(setup, int):
        setup.close()
    return setup


def test_without_engine_each_response_has_its_profile() -> None:
    assert setup_of("--profile", "1000tps").engine.accelerator is None


@pytest.mark.parametrize(
    ("flags", "policy"),
    [
        ((), KvPolicy("evict")),
        (("--kv-policy", "pin"), KvPolicy("pin")),
        (("--kv-policy", "ttl"), KvPolicy("ttl", DEFAULT_TTL_S)),
        (("--kv-policy", "ttl", "--kv-ttl", "0.5"), KvPolicy("ttl", 0.5)),
        (("--kv-policy", "offload"), KvPolicy("offload")),
    ],
)
def test_engine_and_policy(flags: tuple[str, ...], policy: KvPolicy) -> None:
    accelerator = setup_of("--engine", ENGINE, *flags).engine.accelerator
    assert accelerator is not None
    assert accelerator.profile is ENGINE_PROFILES[ENGINE]
    assert accelerator.policy == policy


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--engine", "a100"],
            "--engine: unknown engine profile 'a100' (known: h100-llama3.1-8b, "
            "4xh100-llama3.1-70b)",
        ),
        (["--kv-policy", "pin"], "--kv-policy needs --engine NAME"),
        (["--kv-ttl", "3"], "--kv-ttl needs --engine NAME --kv-policy ttl"),
        (["--engine", ENGINE, "--kv-ttl", "3"], "--kv-ttl needs --kv-policy ttl (not evict)"),
        (["--engine", ENGINE, "--kv-policy", "pin", "--kv-ttl", "3"], "(not pin)"),
        (["--engine", ENGINE, "--kv-policy", "ttl", "--kv-ttl", "0"], "must be positive"),
        (["--engine", ENGINE, "--upstream", "http://127.0.0.1:1/v1"], "sets its own pace"),
        (["--engine", ENGINE, "--profile", "65tps"], "drop --profile"),
        # (checked before the store: a memory store would be refused for --workers too)
        (["--engine", ENGINE, "--workers", "2"], "each worker would simulate its own"),
        (
            ["--engine", ENGINE, "--workers", "2", "--store", "redis://127.0.0.1:1/0"],
            "use --workers 1",
        ),
    ],
)
def test_combinations_refused(flags: list[str], message: str, capsys: Any) -> None:
    assert cli.main(["serve", "--port", "0", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rollout: ") and message in err
    assert err.count("\n") == 1  # one line, no traceback


def test_an_unknown_policy_is_refused_by_the_parser(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["serve", "--engine", ENGINE, "--kv-policy", "lru"])
    assert exit_.value.code == 2
    assert "invalid choice: 'lru'" in capsys.readouterr().err


def test_the_help_names_every_profile_and_policy() -> None:
    [sub] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    serve = sub.choices["serve"]
    helps = {a.dest: a.help or "" for a in serve._actions}
    for name in ENGINE_PROFILES:
        assert name in helps["engine"]
    assert "rollout engines" in helps["engine"] and "--workers" in helps["engine"]
    for policy in POLICIES:
        assert f"{policy} (" in helps["kv_policy"], policy
    assert "default: evict" in helps["kv_policy"]
    assert f"default: {DEFAULT_TTL_S:g} s" in helps["kv_ttl"]
    assert "engines" in sub.choices


def test_rollout_engines_lists_every_profile(capsys: Any) -> None:
    assert cli.main(["engines"]) == 0
    out = capsys.readouterr().out
    for profile in ENGINE_PROFILES.values():
        for line in profile.describe():
            assert f"{line}\n" in out
        assert f"  source: {profile.source}\n" in out
    assert out.endswith(
        f"kv policies (--kv-policy): evict, pin, ttl, offload; ttl's default {DEFAULT_TTL_S:g} s\n"
    )
