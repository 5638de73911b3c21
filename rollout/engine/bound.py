# The engine's side of stored state: the items of a previous_response_id chain, a create bound to a
# conversation (its items are the context before the input; after the response its input and
# output are appended to it) and item references to any stored item of the request's API key
# (the store's item index), and the keeping of an ended response (`keep`: stored, its turn
# appended; a failure is returned, not raised). Pre- and post-inference pieces that
# rollout.engine.engine calls; they read and write the store only, never the loop.
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Container, Sequence

from protocol import errors
from protocol.conversations import conversation_not_found
from protocol.items import Item, ItemReference
from rollout.conversation.context import Context
from rollout.conversation.work import Work
from rollout.engine.ingest import extend, hidden_reasoning
from rollout.engine.plan import Prepared
from rollout.store.base import ChainBroken, Store, StoredResponse, StoreError, visible

log = logging.getLogger("rollout")


async def context_of(
    items: Sequence[Item],
    work: Work,
    secret: bytes,
    thoughts: dict[str, str],
    model: str = "",
    *,
    memo: bool = False,
) -> Context:
    """A context rebuilt from stored items: re-scanned and re-rendered (its images and files
    counted for `model`, the one that continues it; `memo`: Context.memo)."""
    ctx = Context(model=model, memo=memo)
    ctx.hidden.update(hidden_reasoning(items, secret, thoughts))
    await extend(ctx, items, work)
    return ctx


async def chain_items(
    store: Store, previous_response_id: str, work: Work, owner: str | None
) -> list[Item]:
    """Every item of the stored chain ending at `previous_response_id` (a response stored
    under another API key, or a chain with a response deleted, is not found)."""
    with work.stage("store", items=1):
        if visible(await store.get(previous_response_id), owner) is None:
            raise errors.previous_response_not_found(previous_response_id)
        try:
            return await store.conversation(previous_response_id)
        except ChainBroken:
            raise errors.previous_response_not_found(previous_response_id) from None


async def conversation_items(
    store: Store, conv_id: str, work: Work, owner: str | None
) -> list[Item]:
    """The items of a conversation the request's key may see (404 for any other)."""
    with work.stage("store", items=1):
        conv = await store.get_conversation(conv_id)
        if conv is None or not conv.owned_by(owner):
            raise conversation_not_found(conv_id, param="conversation")
        return await store.conversation_items(conv_id)


async def append_turn(store: Store, conv_id: str, items: Sequence[Item], work: Work) -> None:
    """A finished response's input and output, appended to its conversation (atomically: a
    response racing on the same conversation appends its own turn whole). A conversation
    deleted meanwhile takes nothing."""
    with work.stage("store", items=1):
        await store.add_items(conv_id, items)


async def keep(store: Store, prepared: Prepared, joins: bool) -> errors.ProtocolError | None:
    """Store the ended response (`store: true`) and, if it `joins` its conversation (it did
    not fail), append its turn; None, or why that failed: the store's ProtocolError (a
    StoreError was logged by its store: one line a failure), or a server_error for anything
    else (logged with its traceback). A turn that cannot join its conversation takes the stored
    response back out (best effort)."""
    r = prepared.rollout
    rid = r.stream.response.id
    stored = False
    try:
        if prepared.request.store:
            with r.work.stage("store", items=1):
                await store.put(
                    StoredResponse(
                        response=r.stream.response.snapshot(),
                        input_items=prepared.input_items,
                        previous_response_id=prepared.request.previous_response_id,
                        owner=prepared.owner,
                    )
                )
            stored = True
        conv_id = r.stream.response.conversation
        if conv_id is not None and joins:
            await append_turn(
                store, conv_id["id"], [*prepared.input_items, *r.stream.response.output], r.work
            )
        return None
    except errors.ProtocolError as exc:
        failure = exc
        if not isinstance(exc, StoreError):
            log.warning("response %s not stored: %s", rid, exc.message)
    except Exception:
        log.exception("response %s not stored", rid)
        failure = errors.server_error("The response store failed; the response was not stored.")
    if stored:
        with contextlib.suppress(Exception):
            await store.delete(rid)
    return failure


Lookup = Callable[[ItemReference], Item | None]


async def references(
    store: Store, raw: Sequence[Item], base: Context, owner: str | None
) -> tuple[Container[str], Lookup]:
    """The item ids the input may reference and how to resolve them: the context's own, and
    any stored item of the request's key (the store's item index) that the input references
    and the context does not hold. The index is asked only when there is such a reference."""
    wanted = [i.id for i in raw if isinstance(i, ItemReference) and i.id not in base.by_id]
    if wanted:
        local = {i.id for i in raw if not isinstance(i, ItemReference) and i.id is not None}
        wanted = [item_id for item_id in wanted if item_id not in local]
    if not wanted:
        return base.by_id, base.resolve
    found = {
        item_id: entry.item
        for item_id, entry in (await store.find_items(wanted)).items()
        if entry.owned_by(owner)
    }
    if not found:
        return base.by_id, base.resolve

    def lookup(ref: ItemReference) -> Item | None:
        return base.resolve(ref) or found.get(ref.id)

    return {*base.by_id, *found}, lookup


__all__ = [
    "append_turn",
    "chain_items",
    "context_of",
    "conversation_items",
    "keep",
    "references",
]
