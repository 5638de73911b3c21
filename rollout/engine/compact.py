# Two requests that do pre-inference work without sampling: counting a request's input tokens
# (`POST /v1/responses/input_tokens`, the real tokenizer over the real rendering), and compaction
# (`POST /v1/responses/compact`): the history's user messages stay, everything else becomes one
# `compaction` item whose sealed blob carries a summary at a fraction of the tokens it replaces.
# Sent back as input, the blob is restored into the context like a reasoning item's.
from __future__ import annotations

import time
from typing import Any

from protocol import codec
from protocol.events import Event
from protocol.items import Compaction, Item, Message
from protocol.request import CreateRequest
from protocol.response import Usage
from protocol.sealing import Sealed, seal
from rollout.conversation import tokens
from rollout.conversation.context import Context
from rollout.conversation.ids import new_id
from rollout.engine.engine import Engine

#: A compacted item keeps this share of its rendered text (at least MIN_KEPT characters).
KEPT_SHARE = 0.125
MIN_KEPT = 48


async def _drop(event: Event) -> None:
    del event


async def _context(engine: Engine, req: CreateRequest, owner: str | None) -> Context:
    prepared = await engine.prepare(req, engine.stats.new_work(), _drop, owner=owner)
    return prepared.rollout.ctx


async def count_input_tokens(engine: Engine, req: CreateRequest, owner: str | None) -> int:
    """The prompt tokens the request would have (history, instructions, tools and input)."""
    return (await _context(engine, req, owner)).token_count


def summarize(ctx: Context, items: list[Item]) -> str:
    """The first KEPT_SHARE of each item's rendering, in order: what compaction keeps."""
    kept = []
    for item in items:
        text = ctx._render(item)
        kept.append(text[: max(MIN_KEPT, int(len(text) * KEPT_SHARE))].rstrip())
    return "\n".join(kept)


async def compact(engine: Engine, req: CreateRequest, owner: str | None) -> dict[str, Any]:
    """The compacted window: every user message of the conversation, then one compaction item."""
    ctx = await _context(engine, req, owner)
    users = [i for i in ctx.items if isinstance(i, Message) and i.role == "user"]
    rest = [i for i in ctx.items if not (isinstance(i, Message) and i.role == "user")]
    summary = summarize(ctx, rest)
    n = tokens.count(summary)
    cid = new_id("cmp")
    blob = seal(Sealed(item_id=cid, tokens=n, text=summary), engine.secret)
    output: list[Item] = [*users, Compaction(id=cid, encrypted_content=blob)]
    return {
        "id": new_id("resp"),
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": [codec.to_json(i) for i in output],
        "usage": codec.to_json(Usage.of(ctx.token_count, 0, n)),
    }
