# How a reasoning model thinks in the simulation: whether a request's steps reason (the model's
# profile and `reasoning.effort`, or the model's default effort), how many tokens each step
# spends (profiles.REASONING_TOKENS), whether a summary is streamed (`reasoning.summary`) and
# whether the opaque blob is returned (`include: ["reasoning.encrypted_content"]`); and the
# deterministic hidden text and summary of one step. No timing here (the loop paces the tokens).
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from rollout.conversation.context import Context
from rollout.model.policy import sentence
from rollout.model.profiles import REASONING_TOKENS, ModelProfile

ENCRYPTED_CONTENT = "reasoning.encrypted_content"
SUMMARY_TOKENS = 24  # words in a streamed summary part


@attrs.frozen(kw_only=True)
class ReasoningPlan:
    effort: str
    tokens: int  # reasoning tokens per sampling step
    summary: bool  # stream a summary part (`reasoning.summary` set)
    encrypted: bool  # return `encrypted_content` on each reasoning item


def effective(profile: ModelProfile, reasoning: Mapping[str, Any] | None) -> dict[str, Any]:
    """`reasoning` as the Response reports it: a reasoning model's default effort filled in;
    for a model that does not reason, effort and summary are null (the request's are ignored)."""
    if not profile.reasoning:
        return {"effort": None, "summary": None}
    given = dict(reasoning or {})
    summary = given.get("summary", given.get("generate_summary"))
    effort = given.get("effort") or profile.default_effort
    return {"effort": effort, "summary": summary, **given} | {"effort": effort, "summary": summary}


def plan(
    profile: ModelProfile, reasoning: Mapping[str, Any] | None, include: Sequence[str] | None
) -> ReasoningPlan | None:
    """How each step of a request reasons, or None (no reasoning items at all)."""
    settings = effective(profile, reasoning)
    effort = settings["effort"]
    if effort is None or REASONING_TOKENS.get(effort, 0) == 0:
        return None
    return ReasoningPlan(
        effort=effort,
        tokens=REASONING_TOKENS[effort],
        summary=settings["summary"] is not None,
        encrypted=ENCRYPTED_CONTENT in (include or ()),
    )


def think(ctx: Context, tokens: int) -> tuple[str, str]:
    """The hidden reasoning (about `tokens` tokens) and its summary for the next step; the same
    conversation state gives the same thoughts in every protocol mode."""
    rng = random.Random(f"reasoning:{ctx.model_turns}:{ctx.response_steps}:{ctx.last_user_text}")
    hidden = sentence(rng, tokens)
    summary = "**Planning the next step**\n\n" + sentence(rng, SUMMARY_TOKENS)
    return hidden, summary


__all__ = ["ENCRYPTED_CONTENT", "ReasoningPlan", "effective", "plan", "think"]
