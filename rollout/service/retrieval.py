# A stored response found again by id, whatever made it: its state now (a background response
# running here: as it stands; otherwise its record), with the `include` of the retrieve applied;
# its events from any point (its event log, or, for a response that has none, the events
# rebuilt from its final state); and the HTTP cancel, which applies to background responses
# only (and to the append shape's live rollouts, which this server also lets HTTP cancel).
from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import attrs

from protocol import codec, errors
from protocol.formats import one_of
from protocol.items import Reasoning
from protocol.rebuild import replay
from protocol.response import Response, ResponseError
from protocol.sealing import Sealed, seal
from protocol.strictness import INCLUDABLE
from rollout.service.eventlog import EmitEncoded, Source
from rollout.service.service import Service
from rollout.store.base import STOPPED, UNFINISHED, StoredResponse, visible

ENCRYPTED = "reasoning.encrypted_content"


def check_include(values: Sequence[str]) -> tuple[str, ...]:
    """The `include` of a retrieve, checked as a create's is (protocol.strictness)."""
    for i, value in enumerate(values):
        one_of(value, INCLUDABLE, f"include[{i}]")
    return tuple(values)


async def record_of(service: Service, response_id: str, owner: str | None) -> StoredResponse | None:
    """The stored record `owner` may see; a background response left unfinished by a server
    that stopped is settled first (one process: it runs here or nowhere), and so is one that
    ended here when its store could not take its end (`failed`, with the store's error)."""
    record = visible(await service.engine.store.get(response_id), owner)
    if (
        record is not None
        and record.response.status in UNFINISHED
        and service.cluster is None  # (with many workers, the cluster's sweep settles it)
        and service.background.find(response_id, owner) is None
        and service.events.running(response_id, owner) is None
    ):
        unsettled = service.background.unsettled.get(response_id)
        if unsettled is not None:
            record.response = unsettled.response.snapshot()
        else:
            record.response.status = "failed"
            record.response.error = ResponseError(code="server_error", message=STOPPED)
        # (A store that cannot take it now: answered as settled all the same; the next read
        # settles it again. Its store logged why.)
        with contextlib.suppress(errors.ProtocolError):
            await service.engine.store.put(record)
            service.background.unsettled.pop(response_id, None)
    return record


async def current(
    service: Service, response_id: str, owner: str | None, include: Sequence[str] = ()
) -> Response:
    """The response as it stands now (404 when `owner` has none of that id)."""
    run = service.background.find(response_id, owner)
    if run is not None:
        response = run.seen()
    else:
        record = await record_of(service, response_id, owner)
        if record is None:
            raise errors.response_not_found(response_id)
        response = record.response
    return with_include(service, response, include)


def with_include(service: Service, response: Response, include: Sequence[str]) -> Response:
    """`response` with what `include` asks for: each reasoning item's `encrypted_content` (with
    it: sealed again from the hidden reasoning the server remembers, when the record holds
    none; without it: left out). The other values name what the record holds already."""
    wanted = ENCRYPTED in include
    if not any(isinstance(i, Reasoning) for i in response.output):
        return response
    out = response.snapshot()
    env = service.engine
    for n, item in enumerate(out.output):
        if not isinstance(item, Reasoning):
            continue
        blob = item.encrypted_content
        if wanted and blob is None and item.id is not None and item.id in env.thoughts:
            sealed = Sealed(item_id=item.id, tokens=0, text=env.thoughts[item.id])
            blob = seal(sealed, env.secret)
        out.output[n] = attrs.evolve(item, encrypted_content=blob if wanted else None)
    return out


async def source_of(service: Service, response_id: str, owner: str | None) -> Source:
    """Where the response's events are read from (404 when there is no such response): its
    log, to its end; or, for a response that has none, its stored final state."""
    record = await record_of(service, response_id, owner)
    source = await service.events.find(response_id, owner, record)
    if source is not None:
        return source
    if record is None:
        raise errors.response_not_found(response_id)
    return Rebuilt(record.response)


@attrs.frozen
class Rebuilt:
    """The events of a response without a log, rebuilt from its final state (protocol.rebuild:
    its output items whole, one delta a part)."""

    response: Response

    async def follow(self, after: int, emit: EmitEncoded) -> None:
        for event in replay(self.response):
            if event.sequence_number is not None and event.sequence_number > after:
                await emit(event.type.encode(), codec.encode_sse_event(event))


async def exists(service: Service, response_id: str, owner: str | None) -> bool:
    """Whether the response is before its end here (streaming) or stored."""
    if service.events.running(response_id, owner) is not None:
        return True
    return await record_of(service, response_id, owner) is not None


async def cancel(service: Service, response_id: str, owner: str | None) -> Any:
    """`POST /v1/responses/{id}/cancel`: stop a background response (here or on the worker
    that runs it; a live append rollout too) and return it as it ended; an ended background
    response is returned as it is (cancelling twice is idempotent). Any other response: 400;
    none of that id: 404."""
    final = await service.cancel_anywhere(response_id, owner)
    if final is not None:
        return final
    record = await record_of(service, response_id, owner)
    if record is not None and record.response.background:
        return record.response
    if record is None and not await exists(service, response_id, owner):
        raise errors.response_not_found(response_id)
    raise errors.invalid(
        "Only responses created with background=true can be cancelled.",
        param="response_id",
        code="invalid_value",
    )


__all__ = [
    "Rebuilt",
    "cancel",
    "check_include",
    "current",
    "source_of",
    "with_include",
]
