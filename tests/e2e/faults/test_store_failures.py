# A store write that fails, whatever the store (here the memory store, made to fail), as the
# official SDK sees it: a JSON create is the store's 5xx (StoreError's 500 or 503, and Redis's
# 503 `store_unavailable`, its StoreUnavailable), a streamed one ends `response.failed` with
# that error; an unexpected exception is a 500 `server_error`; a turn that cannot join its
# conversation fails the response, which is then not retrievable. What was stored stays, and
# the server serves on. (A real failing disk under SQLite: test_disk_faults.py.)
from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import openai
import pytest
import trio

from protocol.errors import ProtocolError, overloaded
from protocol.items import Item
from rollout.engine.engine import Engine
from rollout.store.base import UNFINISHED, StoredResponse, store_failed
from rollout.store.memory import MemoryStore
from support.errors import assert_envelope
from support.servers import Serve


class FailingStore(MemoryStore):
    """A memory store whose writes of responses (`put`) or of conversation turns (`add_items`)
    raise `failure` while it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.failure: Exception | None = None
        self.turns: Exception | None = None

    async def put(self, record: StoredResponse) -> None:
        if self.failure is not None:
            raise self.failure
        await super().put(record)

    async def add_items(self, conv_id: str, items: Sequence[Item]) -> bool:
        if self.turns is not None:
            raise self.turns
        return await super().add_items(conv_id, items)


REDIS_DOWN = "The response store (Redis) is unavailable: ConnectionError. Retry shortly."
FAILURES = {
    "store_error": (store_failed("Test", "the disk is gone"), 500, "server_error"),
    "redis_unavailable": (overloaded(REDIS_DOWN, "store_unavailable"), 503, "store_unavailable"),
    "unexpected": (RuntimeError("boom"), 500, "server_error"),
}


def assert_store_error(exc: openai.APIStatusError, status: int, code: str) -> dict[str, Any]:
    assert exc.status_code == status and exc.code == code
    return assert_envelope(exc.response.json(), code=code, type_="server_error")


@pytest.mark.parametrize("name", FAILURES)
def test_a_failed_write_is_the_stores_error_on_each_transport(serve: Serve, name: str) -> None:
    failure, status, code = FAILURES[name]
    store = FailingStore()
    _, client = serve(Engine(store=store))
    kept = client.responses.create(model="m", input="hi", store=True)
    store.failure = failure

    with pytest.raises(openai.InternalServerError) as caught:
        client.responses.create(model="m", input="hi", store=True)
    error = assert_store_error(caught.value, status, code)
    if isinstance(failure, ProtocolError):
        assert error["message"] == failure.message
    else:  # (what it was is logged, not told)
        assert error["message"] == "The response store failed; the response was not stored."

    events = list(client.responses.create(model="m", input="hi", store=True, stream=True))
    assert [e.type for e in events][-2:] == ["error", "response.failed"]
    failed = events[-1].response
    assert failed.error is not None and failed.error.code == code
    assert failed.output  # (what was generated stays in the failed response)

    assert client.responses.create(model="m", input="hi", store=False).status == "completed"
    store.failure = None
    with pytest.raises(openai.NotFoundError):  # it was not stored
        client.responses.retrieve(failed.id)
    assert client.responses.retrieve(kept.id).status == "completed"
    assert client.responses.create(model="m", input="hi", store=True).status == "completed"


def test_a_turn_that_cannot_join_its_conversation_fails_the_response(serve: Serve) -> None:
    store = FailingStore()
    _, client = serve(Engine(store=store))
    conv = client.conversations.create(items=[{"role": "user", "content": "Hello."}])
    store.turns = store_failed("Test", "the disk is gone")
    events = list(client.responses.create(model="m", input="hi", conversation=conv.id, stream=True))
    assert [e.type for e in events][-2:] == ["error", "response.failed"]
    failed = events[-1].response
    with pytest.raises(openai.InternalServerError) as caught:
        client.responses.create(model="m", input="hi", conversation=conv.id)
    assert_store_error(caught.value, 500, "server_error")
    store.turns = None
    with pytest.raises(openai.NotFoundError):  # stored, then taken back out
        client.responses.retrieve(failed.id)
    items = client.conversations.items.list(conv.id)
    assert len(items.data) == 1  # neither turn joined it
    turn = client.responses.create(model="m", input="hi", conversation=conv.id)
    assert turn.status == "completed"
    assert len(client.conversations.items.list(conv.id).data) > 1


class HeldStore(FailingStore):
    """A FailingStore that holds the write of a response's end (a record not `in_progress`)
    until `release` is set: `holding` is set while it waits."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = threading.Event()
        self.release = threading.Event()

    async def put(self, record: StoredResponse) -> None:
        if record.response.status not in UNFINISHED:
            self.holding.set()
            while not self.release.is_set():
                await trio.sleep(0.005)
        await super().put(record)


def test_a_background_end_is_seen_once_it_is_stored(serve: Serve) -> None:
    """A poll while the end of a background response is being stored sees it `in_progress`:
    the store may fail it, and a status a client saw as the end never changes."""
    store = HeldStore()
    _, client = serve(Engine(store=store))
    running = client.responses.create(model="m", input="hi", background=True)
    assert store.holding.wait(30)
    assert client.responses.retrieve(running.id).status == "in_progress"
    store.failure = store_failed("Test", "the disk is gone")
    store.release.set()
    deadline = time.monotonic() + 30
    while (got := client.responses.retrieve(running.id)).status == "in_progress":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert got.status == "failed" and got.error is not None
    assert got.error.code == "server_error" and "the disk is gone" in got.error.message
