# The Response object and usage (spec §2.3, §3). Every key the SDK's Response and the
# OpenResponses ResponseResource require is a field here, so every snapshot the server sends
# (JSON, SSE, WebSocket) carries it, with the request's value or the documented default.
from typing import Any

import attrs

from protocol.items import Item, Tool


@attrs.frozen(kw_only=True)
class InputTokensDetails:
    cached_tokens: int = 0
    cache_write_tokens: int = 0


@attrs.frozen(kw_only=True)
class OutputTokensDetails:
    reasoning_tokens: int = 0


@attrs.frozen(kw_only=True)
class Usage:
    input_tokens: int = 0
    input_tokens_details: InputTokensDetails = InputTokensDetails()
    output_tokens: int = 0
    output_tokens_details: OutputTokensDetails = OutputTokensDetails()
    total_tokens: int = 0

    @classmethod
    def of(
        cls, input_tokens: int, cached_tokens: int, output_tokens: int, reasoning_tokens: int = 0
    ) -> "Usage":
        """Usage from counts; `reasoning_tokens` are part of `output_tokens`."""
        return cls(
            input_tokens=input_tokens,
            input_tokens_details=InputTokensDetails(cached_tokens=cached_tokens),
            output_tokens=output_tokens,
            output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning_tokens),
            total_tokens=input_tokens + output_tokens,
        )

    def __add__(self, other: "Usage") -> "Usage":
        return Usage.of(
            self.input_tokens + other.input_tokens,
            self.input_tokens_details.cached_tokens + other.input_tokens_details.cached_tokens,
            self.output_tokens + other.output_tokens,
            self.output_tokens_details.reasoning_tokens
            + other.output_tokens_details.reasoning_tokens,
        )


@attrs.frozen(kw_only=True)
class ResponseError:
    code: str
    message: str


@attrs.frozen(kw_only=True)
class IncompleteDetails:
    reason: str


@attrs.define(kw_only=True)
class Response:
    """A response snapshot. Mutable while its loop runs; events carry shallow copies."""

    id: str
    object: str = "response"
    created_at: int
    status: str = "in_progress"
    completed_at: int | None = None
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | tuple[Item, ...] | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    model: str
    output: list[Item] = attrs.field(factory=list)
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    reasoning: dict[str, Any] = attrs.field(factory=lambda: {"effort": None, "summary": None})
    service_tier: str = "default"
    store: bool = True
    temperature: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    text: dict[str, Any] = attrs.field(
        factory=lambda: {"format": {"type": "text"}, "verbosity": "medium"}
    )
    tool_choice: str | dict[str, Any] = "auto"
    tools: tuple[Tool, ...] = ()
    top_logprobs: int = 0
    top_p: float = 1.0
    truncation: str = "disabled"
    usage: Usage | None = None
    user: str | None = None
    metadata: dict[str, str] = attrs.field(factory=dict)
    background: bool = False
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    safety_identifier: str | None = None
    # The conversation it belongs to (`{"id": "conv_..."}`), off the wire when it has none.
    conversation: dict[str, str] | None = None

    def snapshot(self) -> "Response":
        """A copy that later changes to this response do not reach (output is copied)."""
        return _copy_response(self)


def _copier(cls: type, fields: tuple[str, ...], copied: str) -> Any:
    """A function copying an instance of slotted `cls` field by field, with a new list for
    `copied`: generated, as attrs generates __init__, because attrs.evolve (which looks the
    fields up and calls __init__) costs ten times as much, and every lifecycle event of a
    response takes a snapshot."""
    lines = [f"    new.{name} = old.{name}" for name in fields if name != copied]
    lines.append(f"    new.{copied} = list(old.{copied})")
    source = "\n".join(["def copy(old):", "    new = new_object(cls)", *lines, "    return new"])
    namespace: dict[str, Any] = {"new_object": object.__new__, "cls": cls}
    exec(source, namespace)  # the source is built from the class's own field names
    return namespace["copy"]


_copy_response = _copier(Response, tuple(a.name for a in attrs.fields(Response)), "output")
