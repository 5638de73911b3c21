# What a policy returns for one sampling step: a message (or a refusal), a batch of calls
# (tool calls, hosted calls, multi-agent actions) after optional commentary, or a failure.
# Values only; rollout.model.policy makes them, rollout.engine.simulated streams them.
from __future__ import annotations

import attrs

from rollout.conversation.calls import CallSpec, Citation


@attrs.frozen(kw_only=True)
class TextStep:
    text: str
    citations: tuple[Citation, ...] = ()
    delay_s: float = 0.0  # waited before the step is sampled (scripts for test rigs)
    refusal: bool = False  # the message is a `refusal` content part
    reasoning_tokens: int | None = None  # a reasoning model's tokens for this step (None: plan)


@attrs.frozen(kw_only=True)
class CallStep:
    """Tool calls, optionally preceded by a message (commentary) in the same step."""

    calls: tuple[CallSpec, ...]
    text: str = ""
    delay_s: float = 0.0
    reasoning_tokens: int | None = None  # a reasoning model's tokens for this step (None: plan)


@attrs.frozen(kw_only=True)
class ErrorStep:
    code: str = "server_error"
    message: str = "The model failed to generate a response."
    delay_s: float = 0.0


Step = TextStep | CallStep | ErrorStep
