# Stored responses for the store tests: a three-response chain (q1/a1 ... q3/a3) whose messages
# carry their text as the whole content, that text read back, and what deleting from it does.
from __future__ import annotations

from typing import TypeVar

import pytest

from protocol.items import Item, Message
from protocol.response import Response
from rollout.store.memory import ChainBroken, Store, StoredResponse

S = TypeVar("S", bound=Store)


def msg(role: str, body: str) -> Message:
    return Message(id=f"msg_{role}_{body}", role=role, content=body)  # type: ignore[arg-type]


def record(rid: str, previous: str | None, question: str, answer: str) -> StoredResponse:
    """A stored response answering `question` with `answer`, chained to `previous`."""
    response = Response(id=rid, created_at=0, model="m", output=[msg("assistant", answer)])
    return StoredResponse(
        response=response, input_items=[msg("user", question)], previous_response_id=previous
    )


async def delete_the_middle(store: Store) -> None:
    """Every store alike, on `fill`'s chain: resp_2 is deleted once (a second delete finds
    nothing), is gone, and the chain through it breaks there."""
    assert await store.delete("resp_2") is True
    assert await store.delete("resp_2") is False
    assert await store.get("resp_2") is None
    with pytest.raises(ChainBroken) as info:
        await store.conversation("resp_3")
    assert info.value.args == ("resp_2",)


async def fill(store: S) -> S:
    """The chain resp_1 <- resp_2 <- resp_3, put into `store`."""
    await store.put(record("resp_1", None, "q1", "a1"))
    await store.put(record("resp_2", "resp_1", "q2", "a2"))
    await store.put(record("resp_3", "resp_2", "q3", "a3"))
    return store


def bodies(items: list[Item]) -> list[str]:
    return [i.content for i in items]  # type: ignore[union-attr]
