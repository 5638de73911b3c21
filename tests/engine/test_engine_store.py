# Chaining through the engine, on each response store (the store's own semantics are in
# tests/store): what is stored and how it chains, `store: false`, and a missing or broken chain
# (ChainBroken in the store) reported as previous_response_not_found.
from typing import Any

import pytest

from protocol import codec
from protocol.errors import ProtocolError
from protocol.response import Response
from rollout.engine.engine import Engine
from rollout.model.policy import ScriptedPolicy, text
from rollout.store.memory import Store
from support.drive import drive


async def respond(engine: Engine, body: dict[str, Any]) -> Response:
    return (await drive(engine, body)).response


async def test_engine_stores_and_chains(store: Store) -> None:
    engine = Engine(policy=ScriptedPolicy([text("a1"), text("a2")]), store=store)
    first = await respond(engine, {"model": "m", "input": "q1"})
    second = await respond(engine, {"model": "m", "input": "q2", "previous_response_id": first.id})
    stored = await engine.store.get(second.id)
    assert stored is not None
    assert stored.previous_response_id == first.id
    assert stored.response.status == "completed"
    texts = [
        codec.to_json(i)["content"][0]["text"] for i in await engine.store.conversation(second.id)
    ]
    assert texts == ["q1", "a1", "q2", "a2"]


async def test_store_false_is_not_stored(store: Store) -> None:
    engine = Engine(policy=ScriptedPolicy([text("a1")]), store=store)
    response = await respond(engine, {"model": "m", "input": "q1", "store": False})
    assert await engine.store.get(response.id) is None
    with pytest.raises(ProtocolError) as info:
        await respond(engine, {"model": "m", "input": "q2", "previous_response_id": response.id})
    assert info.value.code == "previous_response_not_found"


async def test_restore_of_a_missing_or_broken_chain_is_previous_response_not_found(
    store: Store,
) -> None:
    engine = Engine(policy=ScriptedPolicy([text("a1"), text("a2"), text("a3")]), store=store)
    r1 = await respond(engine, {"model": "m", "input": "q1"})
    r2 = await respond(engine, {"model": "m", "input": "q2", "previous_response_id": r1.id})

    with pytest.raises(ProtocolError) as info:
        await respond(engine, {"model": "m", "input": "q", "previous_response_id": "resp_missing"})
    assert (info.value.code, info.value.param) == (
        "previous_response_not_found",
        "previous_response_id",
    )
    assert "resp_missing" in info.value.message

    await engine.store.delete(r1.id)  # an ancestor, not the id the request names
    with pytest.raises(ProtocolError) as info:
        await respond(engine, {"model": "m", "input": "q3", "previous_response_id": r2.id})
    assert info.value.code == "previous_response_not_found"
    assert info.value.status == 400
