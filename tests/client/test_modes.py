"""The table of modes: the public names read off it (a new mode is one more row), and an unknown
mode refused by name."""

from __future__ import annotations

import pytest

import rollout
from rollout.client import MODES, ONE_RESPONSE, SCENARIOS, mode_named, run_agent
from rollout.client.modes import TABLE


def test_the_public_names_are_read_off_the_table() -> None:
    names = [m.name for m in TABLE]
    assert len(set(names)) == len(names)
    assert [n for n in names if n in MODES] == list(MODES)  # in the table's order
    assert set(MODES).isdisjoint(SCENARIOS) and set(MODES + SCENARIOS) == set(names)
    assert MODES[:7] == (
        "http-full",
        "http-chain",
        "ws-full",
        "ws-chain",
        "ws-append",
        "http-append",
        "ws-inject",
    )
    assert SCENARIOS[:1] == ("ws-steer",)
    assert isinstance(ONE_RESPONSE, frozenset)
    assert {m.name for m in TABLE if m.shape in ("append", "inject")} == ONE_RESPONSE
    assert {"ws-append", "http-append", "ws-inject"} <= ONE_RESPONSE
    assert rollout.MODES == MODES and rollout.SCENARIOS == SCENARIOS


def test_a_mode_is_found_by_name() -> None:
    steer = mode_named("ws-steer")
    assert (steer.transport, steer.shape) == ("ws", "chain")
    assert steer.steer and steer.scenario
    assert mode_named("http-chain").store and not mode_named("ws-chain").store
    assert mode_named("ws-inject").at_call and mode_named("ws-inject").one_response


async def test_an_unknown_mode_is_refused_before_connecting() -> None:
    with pytest.raises(ValueError, match=r"unknown mode 'ws-nope'; choose from http-full, "):
        await run_agent("ws-nope", "http://127.0.0.1:9/v1", {"model": "m"}, {})
