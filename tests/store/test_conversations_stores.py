# The ConversationStore protocol (rollout.store.conversations) on every store: memory, SQLite
# and a real redis-server. A conversation's items in order, metadata replaced, items removed;
# racing appends to one conversation all land, each whole; the item index written when a
# response or a conversation item is stored and dropped with it; owners kept as the store keeps
# them (keyed hashes in the durable stores).
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from protocol.items import Item, Message
from protocol.response import Response
from rollout.store.base import Store, StoredResponse
from rollout.store.conversations import StoredConversation
from rollout.store.memory import MemoryStore
from rollout.store.sqlite import SqliteStore


def msg(item_id: str, body: str = "x", role: str = "user") -> Message:
    return Message(id=item_id, role=role, content=body)  # type: ignore[arg-type]


def ids(items: list[Item]) -> list[str | None]:
    return [getattr(i, "id", None) for i in items]


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "sqlite":
        sqlite = SqliteStore(tmp_path / "store.sqlite")
        try:
            yield sqlite
        finally:
            await sqlite.aclose()
        return
    from rollout.store.redis import RedisStore  # (only with the redis extra)

    redis = RedisStore(request.getfixturevalue("redis_url"))
    async with redis.connect():
        yield redis


async def test_a_conversation_and_its_items(any_store: Store) -> None:
    conv = StoredConversation(id="conv_1", created_at=5, metadata={"a": "b"}, owner="sk-a")
    await any_store.create_conversation(conv, [msg("msg_1"), msg("msg_2")])
    got = await any_store.get_conversation("conv_1")
    assert got is not None and (got.id, got.created_at, got.metadata) == ("conv_1", 5, {"a": "b"})
    assert got.owned_by("sk-a") and not got.owned_by("sk-b") and not got.owned_by(None)
    assert await any_store.add_items("conv_1", [msg("msg_3")])
    assert ids(await any_store.conversation_items("conv_1")) == ["msg_1", "msg_2", "msg_3"]
    assert await any_store.set_metadata("conv_1", {"c": "d"})
    got = await any_store.get_conversation("conv_1")
    assert got is not None and got.metadata == {"c": "d"}
    assert await any_store.delete_item("conv_1", "msg_2")
    assert not await any_store.delete_item("conv_1", "msg_2")
    assert ids(await any_store.conversation_items("conv_1")) == ["msg_1", "msg_3"]
    assert await any_store.delete_conversation("conv_1")
    assert await any_store.get_conversation("conv_1") is None
    assert await any_store.conversation_items("conv_1") == []
    assert not await any_store.delete_conversation("conv_1")
    # Nothing to change in a conversation that is not there.
    assert not await any_store.add_items("conv_1", [msg("msg_4")])
    assert not await any_store.set_metadata("conv_1", {})
    assert await any_store.find_items(["msg_1", "msg_3", "msg_4"]) == {}


async def test_racing_appends_all_land_each_whole(any_store: Store) -> None:
    await any_store.create_conversation(StoredConversation(id="conv_r", created_at=0), [])

    async def turns(name: str) -> None:
        for k in range(15):
            await any_store.add_items("conv_r", [msg(f"msg_{name}{k}a"), msg(f"msg_{name}{k}b")])

    async with trio.open_nursery() as nursery:
        for name in "xyz":
            nursery.start_soon(turns, name)
    got = ids(await any_store.conversation_items("conv_r"))
    assert len(got) == 90 and len(set(got)) == 90
    for first, second in zip(got[::2], got[1::2], strict=True):  # each turn's pair adjacent
        assert first is not None and second == first[:-1] + "b"
    for name in "xyz":  # and each worker's turns in its order
        mine = [i for i in got if i is not None and i.startswith(f"msg_{name}")]
        assert mine == [f"msg_{name}{k}{s}" for k in range(15) for s in "ab"]


async def test_the_item_index(any_store: Store) -> None:
    response = Response(
        id="resp_1", created_at=0, model="m", output=[msg("msg_out", role="assistant")]
    )
    record = StoredResponse(response=response, input_items=[msg("msg_in")], owner="sk-a")
    await any_store.put(record)
    conv = StoredConversation(id="conv_i", created_at=0, owner="sk-b")
    await any_store.create_conversation(conv, [msg("msg_c1")])
    await any_store.add_items("conv_i", [msg("msg_c2")])
    found = await any_store.find_items(["msg_in", "msg_out", "msg_c1", "msg_c2", "msg_no"])
    assert sorted(found) == ["msg_c1", "msg_c2", "msg_in", "msg_out"]
    assert found["msg_in"].source == "resp_1" and found["msg_c2"].source == "conv_i"
    assert found["msg_out"].owned_by("sk-a") and not found["msg_out"].owned_by("sk-b")
    assert found["msg_c1"].owned_by("sk-b") and not found["msg_c1"].owned_by(None)
    assert ids([found["msg_out"].item]) == ["msg_out"]
    # Deleting drops what it held from the index, and nothing else.
    assert await any_store.delete("resp_1")
    assert await any_store.delete_item("conv_i", "msg_c1")
    assert sorted(await any_store.find_items(["msg_in", "msg_out", "msg_c1", "msg_c2"])) == [
        "msg_c2"
    ]
    assert await any_store.delete_conversation("conv_i")
    assert await any_store.find_items(["msg_c2"]) == {}


async def test_sqlite_keeps_conversations_across_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    async with contextlib.aclosing(SqliteStore(path)) as first:
        conv = StoredConversation(id="conv_d", created_at=1, owner="sk-a")
        await first.create_conversation(conv, [msg("msg_1")])
        await first.add_items("conv_d", [msg("msg_2")])
    async with contextlib.aclosing(SqliteStore(path)) as second:
        got = await second.get_conversation("conv_d")
        assert got is not None and got.owned_by("sk-a") and got.owner != "sk-a"  # (a hash)
        assert ids(await second.conversation_items("conv_d")) == ["msg_1", "msg_2"]
        assert (await second.find_items(["msg_2"]))["msg_2"].owned_by("sk-a")
