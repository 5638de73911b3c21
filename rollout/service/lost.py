# What happens to a live rollout whose worker died (rollout.service.cluster): it ends `failed`
# with `rollout_owner_lost`, once, by whichever worker finds out first (the one whose delete of
# its record succeeds); stored so when it was created with `store: true` (unless it reached its
# end first); and remembered for an hour, for its own API key, so later requests hear why.
from __future__ import annotations

import orjson

from protocol import codec
from protocol.errors import ProtocolError
from protocol.response import Response, ResponseError
from rollout.store.base import StoredResponse, items_of
from rollout.store.shared import Record, SharedStore

LOST_TTL_MS = 3600 * 1000  # how long "the owner was lost" is remembered for a rollout
ENDED = ("completed", "incomplete", "failed")


def owner_lost(response_id: str) -> ProtocolError:
    return ProtocolError(
        message=f"The worker that held response '{response_id}' stopped; the rollout cannot "
        "continue. It ended as failed (code 'rollout_owner_lost'), and is stored so if it was "
        "created with store: true.",
        type="server_error",
        code="rollout_owner_lost",
        param="response_id",
        status=500,
    )


async def end_lost(store: SharedStore, response_id: str, record: Record) -> None:
    """End the rollout of `record` (its live record) whose worker is gone."""
    if not await store.drop_live(response_id):
        return  # finished, or another worker got here first
    owner = record.get(b"owner", b"")
    await store.mark_lost(response_id, owner, LOST_TTL_MS)  # its key only
    if record.get(b"store") != b"1":
        return
    stored = await store.get(response_id)
    if stored is not None and stored.response.status in ENDED:
        return
    response = codec.structure(orjson.loads(record[b"response"]), Response)
    response.status = "failed"
    response.error = ResponseError(
        code="rollout_owner_lost", message=owner_lost(response_id).message
    )
    await store.put(
        StoredResponse(
            response=response,
            input_items=items_of(orjson.loads(record[b"input_items"])),
            previous_response_id=record.get(b"previous", b"").decode() or None,
            owner=owner.decode() or None,  # already its hash
            hashed=store.owner_hash,
        )
    )


__all__ = ["end_lost", "owner_lost"]
