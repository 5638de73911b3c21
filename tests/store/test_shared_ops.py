# The SharedStore operations (rollout.store.shared) that Cluster.deliver runs on, on RedisStore
# against a real redis-server: `publish` to a worker's inbox (how many listeners got it), `live`
# records, and `lost_owner` (what `mark_lost` remembered, for how long); and deliver's answers
# over them when no other worker can take a request: the local miss, the lost owner, the
# finished response, and an owner whose inbox nobody listens on.
from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from protocol.errors import ProtocolError
from protocol.response import Response
from rollout.engine.loop import Sink
from rollout.service.cluster import Cluster
from rollout.service.live import Hold, response_not_found
from rollout.store.base import StoredResponse
from rollout.store.redis import RedisStore


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[RedisStore]:
    redis = RedisStore(redis_url)
    async with redis.connect():
        yield redis


async def test_publish_says_how_many_listened(store: RedisStore) -> None:
    assert await store.publish("w-none", b"hello") == 0
    got: list[bytes] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(store.listen, "w-one", got.append)
        assert await store.publish("w-one", b"hello") == 1
        assert await store.publish("w-none", b"other") == 0
        with trio.fail_after(5):
            while not got:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert got == [b"hello"]


async def test_live_records(store: RedisStore) -> None:
    assert await store.live("resp_x") == {}
    await store.set_live("resp_x", {"worker": b"w1", "lane": b""})
    await store.set_live("resp_x", {"lane": b"l1"})
    assert await store.live("resp_x") == {b"worker": b"w1", b"lane": b"l1"}
    assert await store.drop_live("resp_x")
    assert not await store.drop_live("resp_x")
    assert await store.live("resp_x") == {}


async def test_lost_owner_is_remembered_for_its_ttl(store: RedisStore) -> None:
    assert await store.lost_owner("resp_a") is None
    owner = store.owner_field("key-a")
    await store.mark_lost("resp_a", owner, 60_000)
    assert await store.lost_owner("resp_a") == owner
    await store.mark_lost("resp_b", b"", 60_000)  # no authentication: empty, not None
    assert await store.lost_owner("resp_b") == b""
    await store.mark_lost("resp_c", owner, 50)
    with trio.fail_after(5):
        while await store.lost_owner("resp_c") is not None:
            await trio.sleep(0.02)


def _no_sink(lane: str | None) -> Sink:
    raise AssertionError(f"no sink is asked for (lane {lane!r})")


async def deliver(cluster: Cluster, rid: str, owner: str | None = None) -> None:
    await cluster.deliver(
        "append", rid, [], _no_sink, owner=owner, holder=object(), hold=Hold.UNTIL_PAUSE,
        local=response_not_found(rid),
    )  # fmt: skip


async def code_of(cluster: Cluster, rid: str, owner: str | None = None) -> str | None:
    with pytest.raises(ProtocolError) as caught:
        await deliver(cluster, rid, owner)
    return caught.value.code


async def test_deliver_without_another_owner(store: RedisStore) -> None:
    cluster = Cluster(store, "w-me")
    assert await code_of(cluster, "resp_none") == "response_not_found"
    await store.mark_lost("resp_lost", store.owner_field("key-a"), 60_000)
    assert await code_of(cluster, "resp_lost", "key-a") == "rollout_owner_lost"
    assert await code_of(cluster, "resp_lost", "key-b") == "response_not_found"
    response = Response(id="resp_done", created_at=0, model="m", status="completed")
    await store.put(StoredResponse(response=response, input_items=[], owner="key-a"))
    assert await code_of(cluster, "resp_done", "key-a") == "response_not_suspended"
    assert await code_of(cluster, "resp_done", "key-b") == "response_not_found"
    await store.set_live("resp_mine", {"worker": b"w-me", "owner": b""})
    assert await code_of(cluster, "resp_mine") == "response_not_found"  # this worker's: local
    await store.set_live("resp_theirs", {"worker": b"w-other", "owner": b""})
    assert await code_of(cluster, "resp_theirs", "key-a") == "response_not_found"


async def test_deliver_to_an_owner_nobody_listens_for(store: RedisStore) -> None:
    cluster = Cluster(store, "w-me")
    owner = store.owner_field("key-a")
    await store.set_live("resp_gone", {"worker": b"w-gone", "owner": owner, "store": b""})
    assert await code_of(cluster, "resp_gone", "key-a") == "rollout_owner_lost"
    assert await store.live("resp_gone") == {}  # ended, once
    assert await store.lost_owner("resp_gone") == owner
    assert await code_of(cluster, "resp_gone", "key-a") == "rollout_owner_lost"  # and after
