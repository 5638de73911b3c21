# The create request (`POST /v1/responses` body, WebSocket `response.create`) and the append
# shape's client events. Every standard CreateResponse field is declared; the codec ignores
# unknown fields (a strict server refuses them before decoding: protocol.strictness). Cross-field
# rules live in protocol.validate.
from typing import Any, Literal

import attrs

from protocol.items import Item, Tool

Shape = Literal["chain", "append"]


@attrs.frozen(kw_only=True)
class StreamOptions:
    include_obfuscation: bool | None = None


@attrs.frozen(kw_only=True)
class ContextManagement:
    """An entry of `context_management` (accepted; the server does not compact)."""

    type: str  # "Currently only 'compaction' is supported" (the SDK's docstring)
    compact_threshold: int | None = None


@attrs.frozen(kw_only=True)
class MultiAgent:
    """`multi_agent` of a create (the real API's multi-agent beta)."""

    enabled: bool
    max_concurrent_subagents: int | None = None


# A dict class (not slotted): a frozen slotted class sets each of its 39 fields through
# object.__setattr__, which was most of decoding a small create; the codec's direct path fills
# the instance's dict in two updates.
@attrs.frozen(kw_only=True, slots=False)
class CreateRequest:
    # Standard fields (spec §2.2).
    model: str
    input: str | tuple[Item, ...] | None = None  # required, except for a warm-up
    instructions: str | tuple[Item, ...] | None = None
    previous_response_id: str | None = None
    conversation: str | dict[str, Any] | None = None
    store: bool = True
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    background: bool | None = None
    tools: tuple[Tool, ...] = ()
    tool_choice: str | dict[str, Any] = "auto"
    parallel_tool_calls: bool | None = None  # unset: true, or false for a multi-agent response
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    top_logprobs: int | None = None
    truncation: str | None = None
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    include: tuple[str, ...] | None = None
    metadata: dict[str, str] | None = None
    prompt: dict[str, Any] | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    prompt_cache_options: dict[str, Any] | None = None
    safety_identifier: str | None = None
    user: str | None = None
    service_tier: str | None = None
    context_management: tuple[ContextManagement, ...] | None = None
    moderation: Any = None
    # WebSocket `response.create` only (spec §1.2).
    type: Literal["response.create"] | None = None
    stream_id: str | None = None
    generate: bool | None = None
    client_metadata: dict[str, str] | None = None
    # The append shape (append-protocol.md).
    shape: Shape = "chain"
    # The multi-agent beta (pause-resume.md): client calls wait inside the response.
    multi_agent: MultiAgent | None = None

    @property
    def parallel(self) -> bool:
        """`parallel_tool_calls` in effect: as sent, else true (false for multi-agent)."""
        if self.parallel_tool_calls is None:
            return not self.waits_for_inject
        return self.parallel_tool_calls

    @property
    def waits_for_inject(self) -> bool:
        """A multi-agent response: its client calls wait for `response.inject` (WebSocket)."""
        return self.multi_agent is not None and self.multi_agent.enabled


@attrs.frozen(kw_only=True)
class AppendRequest:
    """`response.append` (WebSocket) or the body of `POST /v1/responses/{id}/append`."""

    input: tuple[Item, ...]
    response_id: str | None = None
    type: Literal["response.append"] | None = None


@attrs.frozen(kw_only=True)
class CancelRequest:
    response_id: str
    type: Literal["response.cancel"] = "response.cancel"


# -- the real API's pause/resume events (pause-resume.md) ----------------------------------------


@attrs.frozen(kw_only=True)
class InjectRequest:
    """`response.inject`: client-owned tool outputs for an active response."""

    type: Literal["response.inject"] = "response.inject"
    response_id: str
    input: tuple[Item, ...]


@attrs.frozen(kw_only=True)
class SteerRequest:
    """`response.steer`, as sent: `input` stays raw JSON (a failure returns it unchanged)."""

    type: Literal["response.steer"] = "response.steer"
    previous_response_id: str
    input: Any
