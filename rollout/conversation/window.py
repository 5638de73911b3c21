# A context fitted to the model's window: kept when its prompt fits, else (`truncation: auto`)
# rebuilt from a suffix of its items, else `context_length_exceeded`.
from __future__ import annotations

import attrs

from protocol import errors
from protocol.items import OUTPUT_ITEMS
from rollout.conversation.context import Context
from rollout.conversation.work import Work


def fit(ctx: Context, window: int | None, truncation: str, work: Work) -> Context:
    """`ctx` if its prompt fits the model's window; else, with `truncation: auto`, a truncated
    copy; else (`disabled`, or nothing left to drop) `context_length_exceeded`."""
    if window is None or ctx.token_count <= window:
        return ctx
    if truncation == "auto":
        cut = truncated(ctx, window, work)
        if cut.token_count <= window:
            return cut
    raise errors.context_length_exceeded(ctx.token_count, window)


def truncated(ctx: Context, window: int, work: Work) -> Context:
    """A new context without the oldest items of `ctx`, so the prompt fits `window` tokens
    (`truncation: auto`): whole items go, and a tool output never outlives its call."""
    total = ctx.token_count
    drop = 0
    while drop < len(ctx.items) and total > window:
        total -= ctx.item_tokens[drop]
        drop += 1
    while drop < len(ctx.items) and isinstance(ctx.items[drop], OUTPUT_ITEMS):
        drop += 1
    cut = Context(
        hidden=dict(ctx.hidden),
        route=ctx.route,
        model=ctx.model,
        memo=ctx.memo,
        scan=attrs.evolve(ctx.scan),
    )
    cut.choice, cut.format = ctx.choice, ctx.format
    cut.set_header(ctx.instructions, ctx.tools, work, scan=False)
    cut.extend(ctx.items[drop:], work, scan=False)
    # The conversation is as far along as before: only its prompt lost items (a script's
    # position and the default model's plan do not start over).
    cut.model_turns, cut.last_user_text = ctx.model_turns, ctx.last_user_text
    cut.calls_since_user, cut.hosted_since_user = ctx.calls_since_user, ctx.hosted_since_user
    cut.response_steps, cut.response_calls = ctx.response_steps, ctx.response_calls
    return cut
