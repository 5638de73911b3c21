# The Redis store (rollout.store.redis) against a real redis-server: the Store protocol as the
# memory store keeps it (chains oldest first, a deleted link breaks the chain, owners kept),
# the `redis://` spec, and the engine storing and chaining through it.
from __future__ import annotations

from typing import Any

import pytest

from protocol import codec
from protocol.errors import ProtocolError
from protocol.events import Event
from protocol.items import Item, Message
from protocol.response import Response
from rollout.conversation.work import Work
from rollout.engine.engine import Engine
from rollout.engine.executors import EndResponse
from rollout.model.policy import ScriptedPolicy, text
from rollout.store.base import StoreError
from rollout.store.memory import ChainBroken, StoredResponse
from rollout.store.redis import RedisStore, RedisUrl
from rollout.store.shared import DropLive, StoreUnavailable, WriteFailed
from rollout.store.sqlite import open_store
from support.stores import delete_the_middle


def msg(role: str, body: str) -> Message:
    return Message(id=f"msg_{role}_{body}", role=role, content=body)  # type: ignore[arg-type]


def record(rid: str, previous: str | None, q: str, a: str, owner: str | None = None) -> Any:
    response = Response(id=rid, created_at=0, model="m", output=[msg("assistant", a)])
    return StoredResponse(
        response=response, input_items=[msg("user", q)], previous_response_id=previous, owner=owner
    )


def bodies(items: list[Item]) -> list[str]:
    return [i.content for i in items]  # type: ignore[union-attr]


async def test_chains_deletes_and_owners(redis_url: str) -> None:
    store = RedisStore(redis_url)
    async with store.connect():
        await store.put(record("resp_1", None, "q1", "a1", owner="key-a"))
        await store.put(record("resp_2", "resp_1", "q2", "a2"))
        await store.put(record("resp_3", "resp_2", "q3", "a3"))
        assert await store.count() == 3
        assert bodies(await store.conversation("resp_3")) == ["q1", "a1", "q2", "a2", "q3", "a3"]
        got = await store.get("resp_1")
        assert got is not None and got.previous_response_id is None
        assert got.owned_by("key-a") and not got.owned_by("key-b") and not got.owned_by(None)
        raw = await store.client.hget(store.key("resp", "resp_1"), "owner")
        assert raw is not None and b"key-a" not in raw  # no API key is kept in Redis
        assert raw == store.owner_hash("key-a").encode()
        assert got.response.output == [msg("assistant", "a1")]
        two = await store.get("resp_2")
        assert two is not None and two.owned_by(None) and two.previous_response_id == "resp_1"
        await delete_the_middle(store)
        with pytest.raises(ChainBroken):
            await store.conversation("resp_nope")
        # A second put of an id replaces the whole record (no owner left over).
        await store.put(record("resp_1", None, "q1", "a1"))
        again = await store.get("resp_1")
        assert again is not None and again.owner is None
        await store.put(got)  # a record read back keeps its hash (it is not hashed twice)
        back = await store.get("resp_1")
        assert back is not None and back.owned_by("key-a")


async def test_two_clients_see_one_store(redis_url: str) -> None:
    """What one worker stores, another (its own client) reads and chains."""
    first, second = RedisStore(redis_url), RedisStore(redis_url)
    async with first.connect(), second.connect():
        assert first.owner_hash("k") == second.owner_hash("k")  # one secret per database
        await first.put(record("resp_a", None, "q1", "a1"))
        await second.put(record("resp_b", "resp_a", "q2", "a2"))
        assert bodies(await first.conversation("resp_b")) == ["q1", "a1", "q2", "a2"]


async def test_engine_stores_and_chains_through_redis(redis_url: str) -> None:
    store = RedisStore(redis_url)
    async with store.connect():
        engine = Engine(policy=ScriptedPolicy([text("a1"), text("a2")]), store=store)

        async def emit(event: Event) -> None:
            del event

        async def drive(body: dict[str, Any]) -> Response:
            prepared = await engine.prepare(codec.decode_create(body), Work(), emit)
            await engine.run(prepared, EndResponse())
            return prepared.rollout.stream.response

        one = await drive({"model": "m", "input": "hi"})
        two = await drive({"model": "m", "input": "more", "previous_response_id": one.id})
        items = await store.conversation(two.id)
        assert [type(i).__name__ for i in items] == ["Message"] * 4
        assert items[-1] == two.output[0]
        await store.delete(one.id)
        with pytest.raises(ProtocolError) as info:
            await drive({"model": "m", "input": "x", "previous_response_id": two.id})
        assert info.value.code == "previous_response_not_found"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("redis://h:1/2", RedisUrl("h", 1, 2)),
        ("redis://h", RedisUrl("h", 6379, 0)),
        ("redis://h:7/3?prefix=x:", RedisUrl("h", 7, 3, "x:")),
    ],
)
def test_url(spec: str, expected: RedisUrl) -> None:
    assert RedisUrl.parse(spec) == expected
    assert isinstance(open_store(spec), RedisStore)


@pytest.mark.parametrize("spec", ["redis://", "redis://h/db", "redis://h:x/0", "redis://h:1/-1"])
def test_bad_url_is_a_value_error(spec: str) -> None:
    with pytest.raises(ValueError):
        open_store(spec)


async def test_a_redis_that_went_away_is_a_503(redis_port: int) -> None:
    """Its own redis-server, stopped while the store is connected: each call, the cluster
    layer's too, is a 503 `store_unavailable` (StoreUnavailable, a StoreError) for the client,
    not a dropped connection nor coredis's exception; a batch of writes is WriteFailed."""
    import subprocess

    import trio

    from rollout.store.redis_binary import redis_server_binary
    from support.processes import free_port

    del redis_port  # only for the skip when redis-server is missing
    port = free_port()
    binary = redis_server_binary()
    assert binary is not None
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        store = RedisStore(f"redis://127.0.0.1:{port}/0")
        for _ in range(500):
            try:
                async with store.connect():
                    break
            except Exception:
                await trio.sleep(0.02)
        async with store.connect():
            await store.put(record("resp_1", None, "q", "a"))
            proc.terminate()
            proc.wait(timeout=10)
            calls = [
                store.get("resp_1"),
                store.delete("resp_1"),
                store.conversation("resp_1"),
                store.beat("w1", 1000),
                store.alive("w1"),
                store.publish("w1", b"m"),
                store.live("resp_1"),
                store.lost_owner("resp_1"),
                store.log_meta("resp_1"),
                store.read_log("resp_1", None, 10, 10),
                store.listen("w1", lambda data: None),
                anext(aiter(store.live_ids())),
            ]
            for call in calls:
                with pytest.raises(StoreUnavailable) as info:
                    await call
                assert isinstance(info.value, StoreError)
                assert info.value.status == 503 and info.value.code == "store_unavailable"
            with pytest.raises(WriteFailed):
                await store.write([DropLive("resp_1")])
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
