# The response store (rollout.store.memory) and chaining through it: `conversation()` walks the
# `previous_response_id` links and returns every input and output item oldest first; a deleted
# link breaks the chain (ChainBroken), which the engine reports as previous_response_not_found.
from typing import Any

import pytest

from protocol import codec
from protocol.errors import ProtocolError
from protocol.events import Event
from protocol.items import Item, Message
from protocol.response import Response
from rollout.engine.engine import Engine
from rollout.engine.executors import EndResponse
from rollout.engine.work import Work
from rollout.model.policy import ScriptedPolicy, text
from rollout.store.memory import ChainBroken, MemoryStore, StoredResponse


def msg(role: str, body: str) -> Message:
    return Message(id=f"msg_{role}_{body}", role=role, content=body)  # type: ignore[arg-type]


def record(rid: str, previous: str | None, question: str, answer: str) -> StoredResponse:
    response = Response(id=rid, created_at=0, model="m", output=[msg("assistant", answer)])
    return StoredResponse(
        response=response, input_items=[msg("user", question)], previous_response_id=previous
    )


async def chain_store() -> MemoryStore:
    store = MemoryStore()
    await store.put(record("resp_1", None, "q1", "a1"))
    await store.put(record("resp_2", "resp_1", "q2", "a2"))
    await store.put(record("resp_3", "resp_2", "q3", "a3"))
    return store


def bodies(items: list[Item]) -> list[str]:
    return [i.content for i in items]  # type: ignore[union-attr]


async def test_conversation_walks_the_chain_oldest_first() -> None:
    store = await chain_store()
    assert len(store) == 3
    assert bodies(await store.conversation("resp_3")) == ["q1", "a1", "q2", "a2", "q3", "a3"]
    assert bodies(await store.conversation("resp_2")) == ["q1", "a1", "q2", "a2"]
    assert bodies(await store.conversation("resp_1")) == ["q1", "a1"]


async def test_deleted_ancestor_breaks_the_chain() -> None:
    store = await chain_store()
    assert await store.delete("resp_2") is True
    assert await store.delete("resp_2") is False
    assert await store.get("resp_2") is None
    with pytest.raises(ChainBroken) as info:
        await store.conversation("resp_3")
    assert info.value.args == ("resp_2",)
    assert bodies(await store.conversation("resp_1")) == ["q1", "a1"]  # the rest is intact


async def test_missing_leaf_breaks_the_chain() -> None:
    with pytest.raises(ChainBroken):
        await MemoryStore().conversation("resp_nope")


# -- through the engine -------------------------------------------------------------------------


async def drive(engine: Engine, body: dict[str, Any]) -> Response:
    async def emit(event: Event) -> None:
        del event

    prepared = await engine.prepare(codec.decode_create(body), Work(), emit)
    await engine.run(prepared, EndResponse())
    return prepared.rollout.stream.response


async def test_engine_stores_and_chains() -> None:
    engine = Engine(policy=ScriptedPolicy([text("a1"), text("a2")]))
    first = await drive(engine, {"model": "m", "input": "q1"})
    second = await drive(engine, {"model": "m", "input": "q2", "previous_response_id": first.id})
    stored = await engine.store.get(second.id)
    assert stored is not None
    assert stored.previous_response_id == first.id
    assert stored.response.status == "completed"
    texts = [
        codec.to_json(i)["content"][0]["text"] for i in await engine.store.conversation(second.id)
    ]
    assert texts == ["q1", "a1", "q2", "a2"]


async def test_store_false_is_not_stored() -> None:
    engine = Engine(policy=ScriptedPolicy([text("a1")]))
    response = await drive(engine, {"model": "m", "input": "q1", "store": False})
    assert await engine.store.get(response.id) is None
    with pytest.raises(ProtocolError) as info:
        await drive(engine, {"model": "m", "input": "q2", "previous_response_id": response.id})
    assert info.value.code == "previous_response_not_found"


async def test_restore_of_a_missing_or_broken_chain_is_previous_response_not_found() -> None:
    engine = Engine(policy=ScriptedPolicy([text("a1"), text("a2"), text("a3")]))
    r1 = await drive(engine, {"model": "m", "input": "q1"})
    r2 = await drive(engine, {"model": "m", "input": "q2", "previous_response_id": r1.id})

    with pytest.raises(ProtocolError) as info:
        await drive(engine, {"model": "m", "input": "q", "previous_response_id": "resp_missing"})
    assert (info.value.code, info.value.param) == (
        "previous_response_not_found",
        "previous_response_id",
    )
    assert "resp_missing" in info.value.message

    await engine.store.delete(r1.id)  # an ancestor, not the id the request names
    with pytest.raises(ProtocolError) as info:
        await drive(engine, {"model": "m", "input": "q3", "previous_response_id": r2.id})
    assert info.value.code == "previous_response_not_found"
    assert info.value.status == 400
