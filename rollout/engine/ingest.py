# Pre-inference pieces that need no engine state (rollout.engine.engine does the rest of the
# work): a request's items joined to its context, off the event loop when what is left to count
# is large (all of it, or behind a real engine what the process's memo lacks), and the hidden
# reasoning of reasoning and compaction items, recovered from their sealed blobs or from what
# the engine remembers.
from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence

import trio

from protocol.clientitems import CLIENT_BY_CALL, CLIENT_BY_OUTPUT
from protocol.errors import ProtocolError
from protocol.items import (
    Compaction,
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    InputFile,
    Item,
    Message,
    Reasoning,
    text_of,
)
from protocol.sealing import unseal
from rollout.conversation.context import Context
from rollout.conversation.work import Work

#: Input whose text to count is at least this many characters is scanned and tokenized in a worker
#: thread, so one huge request never stalls the event loop for every other client.
OFF_LOOP_CHARS = 256 * 1024
_HIDDEN = (Reasoning, Compaction)  # the items that have hidden reasoning


def _chars(item: Item) -> int:
    if isinstance(item, Message):
        content = item.content
        if type(content) is str:
            return len(content) + 16
        return len(text_of(content)) + _file_chars(content) + 16
    if isinstance(item, FunctionCallOutput):
        return len(text_of(item.output)) + _file_chars(item.output) + 16
    if isinstance(item, FunctionCall):
        return len(item.arguments) + len(item.name) + 16
    if (tool := CLIENT_BY_CALL.get(type(item))) is not None:
        return len(tool.call_text(item)) + 16
    if (tool := CLIENT_BY_OUTPUT.get(type(item))) is not None:
        return len(tool.output_text(item)) + 16
    return 64


def _file_chars(content: str | tuple[ContentPart, ...]) -> int:
    """The inline data of a content's files (an inline PDF is read for its text and pages)."""
    if isinstance(content, str):
        return 0
    chars = 0
    for part in content:
        if type(part) is InputFile:
            chars += len(part.file_data or "")
    return chars


async def extend(ctx: Context, items: Sequence[Item], work: Work) -> None:
    """`ctx.extend(items)`, off the event loop when what it tokenizes is large: all of the
    items' text, or for a context that counts from the process's memo, the texts the memo
    lacks and the items' images and files (the context is not shared while a request prepares
    it)."""
    if ctx.memo:
        looked = ctx.look_up(items)
        keys = looked.keys
        chars = 0
        for i in looked.missing():
            key = keys[i]
            chars += _chars(items[i]) if key is None else len(key[1])
    else:
        looked, chars = None, sum(map(_chars, items))
    if chars < OFF_LOOP_CHARS:
        ctx.extend(items, work, looked=looked)
    else:
        await trio.to_thread.run_sync(functools.partial(ctx.extend, items, work, looked=looked))


def hidden_reasoning(
    items: Sequence[Item],
    secret: bytes,
    thoughts: dict[str, str],
    hidden: dict[str, str] | None = None,
) -> dict[str, str]:
    """The hidden reasoning of reasoning items (added to `hidden`): from their blobs, sealed
    with `secret`, else as remembered in `thoughts`."""
    out = dict(hidden or {})
    for item in items:
        if not isinstance(item, _HIDDEN) or item.id is None or item.id in out:
            continue
        if item.encrypted_content is not None:
            with contextlib.suppress(ProtocolError):
                out[item.id] = unseal(item.encrypted_content, secret, item.id).text
        elif item.id in thoughts:
            out[item.id] = thoughts[item.id]
    return out
