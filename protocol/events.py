# Every streaming event the server emits (spec §2.5, §1.3; append-protocol.md), one attrs class
# per event *shape*; the `type` field names the event and is checked against the shape's Literal.
# Over SSE an event is `event: <type>` + `data: <json>`; over WebSocket one JSON text frame.
from typing import Any, Literal, get_args

import attrs

from protocol.items import Annotation, ContentPart, Item, SummaryText
from protocol.response import Response, Usage

LifecycleType = Literal[
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.completed",
    "response.failed",
    "response.incomplete",
]
TERMINAL_TYPES = frozenset({"response.completed", "response.failed", "response.incomplete"})


@attrs.frozen(kw_only=True)
class ResponseEvent:
    """A lifecycle event (`response.created` ... `response.incomplete`): the whole Response as
    it stands at that point."""

    type: LifecycleType
    sequence_number: int
    response: Response


@attrs.frozen(kw_only=True)
class OutputItemEvent:
    type: Literal["response.output_item.added", "response.output_item.done"]
    sequence_number: int
    output_index: int
    item: Item


@attrs.frozen(kw_only=True)
class ContentPartEvent:
    type: Literal["response.content_part.added", "response.content_part.done"]
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    part: ContentPart


@attrs.frozen(kw_only=True)
class TextDeltaEvent:
    type: Literal["response.output_text.delta"] = "response.output_text.delta"
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: tuple[Any, ...] = ()


@attrs.frozen(kw_only=True)
class TextDoneEvent:
    type: Literal["response.output_text.done"] = "response.output_text.done"
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: tuple[Any, ...] = ()


@attrs.frozen(kw_only=True)
class AnnotationAddedEvent:
    type: Literal["response.output_text.annotation.added"] = "response.output_text.annotation.added"
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    annotation_index: int
    annotation: Annotation


@attrs.frozen(kw_only=True)
class RefusalDeltaEvent:
    type: Literal["response.refusal.delta"] = "response.refusal.delta"
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    delta: str


@attrs.frozen(kw_only=True)
class RefusalDoneEvent:
    type: Literal["response.refusal.done"] = "response.refusal.done"
    sequence_number: int
    item_id: str
    output_index: int
    content_index: int
    refusal: str


@attrs.frozen(kw_only=True)
class ReasoningSummaryPartEvent:
    type: Literal["response.reasoning_summary_part.added", "response.reasoning_summary_part.done"]
    sequence_number: int
    item_id: str
    output_index: int
    summary_index: int
    part: SummaryText


@attrs.frozen(kw_only=True)
class ReasoningSummaryDeltaEvent:
    type: Literal["response.reasoning_summary_text.delta"] = "response.reasoning_summary_text.delta"
    sequence_number: int
    item_id: str
    output_index: int
    summary_index: int
    delta: str


@attrs.frozen(kw_only=True)
class ReasoningSummaryDoneEvent:
    type: Literal["response.reasoning_summary_text.done"] = "response.reasoning_summary_text.done"
    sequence_number: int
    item_id: str
    output_index: int
    summary_index: int
    text: str


@attrs.frozen(kw_only=True)
class ArgumentsDeltaEvent:
    type: Literal["response.function_call_arguments.delta"] = (
        "response.function_call_arguments.delta"
    )
    sequence_number: int
    item_id: str
    output_index: int
    delta: str


@attrs.frozen(kw_only=True)
class ArgumentsDoneEvent:
    type: Literal["response.function_call_arguments.done"] = "response.function_call_arguments.done"
    sequence_number: int
    item_id: str
    output_index: int
    name: str
    arguments: str


# -- the client's tools other than functions (protocol.clientitems) --------------------------------


@attrs.frozen(kw_only=True)
class CustomInputDeltaEvent:
    type: Literal["response.custom_tool_call_input.delta"] = "response.custom_tool_call_input.delta"
    sequence_number: int
    item_id: str
    output_index: int
    delta: str


@attrs.frozen(kw_only=True)
class CustomInputDoneEvent:
    type: Literal["response.custom_tool_call_input.done"] = "response.custom_tool_call_input.done"
    sequence_number: int
    item_id: str
    output_index: int
    input: str


@attrs.frozen(kw_only=True)
class ShellCommandEvent:
    """`response.shell_call_command.added` and `.done` (the command so far: empty, then whole);
    the SDK's events carry no item id."""

    type: Literal["response.shell_call_command.added", "response.shell_call_command.done"]
    sequence_number: int
    output_index: int
    command_index: int
    command: str


@attrs.frozen(kw_only=True)
class ShellCommandDeltaEvent:
    type: Literal["response.shell_call_command.delta"] = "response.shell_call_command.delta"
    sequence_number: int
    output_index: int
    command_index: int
    delta: str


@attrs.frozen(kw_only=True)
class WebSearchCallEvent:
    type: Literal[
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
    ]
    sequence_number: int
    output_index: int
    item_id: str


# -- MCP, code interpreter, file search, image generation (issue 26) ----------------------------


@attrs.frozen(kw_only=True)
class HostedCallEvent:
    """A hosted call's progress (protocol.hosted.HOSTED_TOOLS rows other than web search)."""

    type: Literal[
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
        "response.image_generation_call.in_progress",
        "response.image_generation_call.generating",
        "response.image_generation_call.completed",
    ]
    sequence_number: int
    output_index: int
    item_id: str


@attrs.frozen(kw_only=True)
class HostedDeltaEvent:
    """A streamed piece of a hosted call's text: an MCP call's arguments, the code it runs."""

    type: Literal["response.mcp_call_arguments.delta", "response.code_interpreter_call_code.delta"]
    sequence_number: int
    output_index: int
    item_id: str
    delta: str


@attrs.frozen(kw_only=True)
class McpArgumentsDoneEvent:
    type: Literal["response.mcp_call_arguments.done"] = "response.mcp_call_arguments.done"
    sequence_number: int
    output_index: int
    item_id: str
    arguments: str


@attrs.frozen(kw_only=True)
class CodeDoneEvent:
    type: Literal["response.code_interpreter_call_code.done"] = (
        "response.code_interpreter_call_code.done"
    )
    sequence_number: int
    output_index: int
    item_id: str
    code: str


@attrs.frozen(kw_only=True)
class ErrorPayload:
    type: str
    code: str | None
    message: str
    param: str | None
    headers: dict[str, str] | None = None  # present only when the error stands for HTTP headers


@attrs.frozen(kw_only=True)
class ErrorEvent:
    """The `error` event, built once whatever the transport. Its wire form is the transport's
    framing (protocol.codec): over WebSocket the nested form of spec §1.3 (the SDK's
    ResponseWsError), over SSE the flat form of spec §2.5 (the SDK's ResponseErrorEvent:
    `code`, `message`, `param`, `sequence_number`)."""

    type: Literal["error"] = "error"
    error: ErrorPayload
    status: int | None = None
    sequence_number: int | None = None


@attrs.frozen(kw_only=True)
class PendingCall:
    call_id: str
    name: str
    item_id: str


@attrs.frozen(kw_only=True)
class PauseEvent:
    """`response.done` of the append shape: the rollout is suspended on client tool calls."""

    type: Literal["response.done"] = "response.done"
    sequence_number: int
    response_id: str
    pending_calls: tuple[PendingCall, ...]
    usage: Usage


# -- the real API's pause/resume events (pause-resume.md): inject and steer ---------------------


@attrs.frozen(kw_only=True)
class InjectError:
    code: str  # response_already_completed | response_not_found | invalid_input
    message: str


@attrs.frozen(kw_only=True)
class InjectCreatedEvent:
    """`response.inject.created`: every injected item was validated and committed."""

    type: Literal["response.inject.created"] = "response.inject.created"
    response_id: str
    sequence_number: int


@attrs.frozen(kw_only=True)
class InjectFailedEvent:
    """`response.inject.failed`: nothing was committed; `input` is returned as it was sent."""

    type: Literal["response.inject.failed"] = "response.inject.failed"
    response_id: str
    input: tuple[Any, ...]
    error: InjectError
    sequence_number: int


@attrs.frozen(kw_only=True)
class SteerRef:
    id: str
    previous_response_id: str


@attrs.frozen(kw_only=True)
class FailedSteer:
    input: Any  # as sent
    previous_response_id: str
    id: str | None = None  # absent when the submission failed before it got an id


@attrs.frozen(kw_only=True)
class SteerError:
    code: str  # a BetaResponseSteerErrorCode
    message: str
    type: Literal["invalid_request_error"] = "invalid_request_error"


@attrs.frozen(kw_only=True)
class RequiredInput:
    """A stub of a client tool output the response waits for (fill `output`, then create)."""

    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    name: str


@attrs.frozen(kw_only=True)
class SteerAcceptedEvent:
    type: Literal["response.steer.accepted"] = "response.steer.accepted"
    sequence_number: int
    steer: SteerRef


@attrs.frozen(kw_only=True)
class SteerPendingEvent:
    type: Literal["response.steer.pending"] = "response.steer.pending"
    reason: str  # waiting_for_required_input
    required_input: tuple[RequiredInput, ...]
    sequence_number: int
    steer: SteerRef


@attrs.frozen(kw_only=True)
class SteerFailedEvent:
    type: Literal["response.steer.failed"] = "response.steer.failed"
    error: SteerError
    sequence_number: int
    steer: FailedSteer


PauseResumeEvent = (
    InjectCreatedEvent
    | InjectFailedEvent
    | SteerAcceptedEvent
    | SteerPendingEvent
    | SteerFailedEvent
)

Event = (
    ResponseEvent
    | OutputItemEvent
    | ContentPartEvent
    | TextDeltaEvent
    | TextDoneEvent
    | AnnotationAddedEvent
    | RefusalDeltaEvent
    | RefusalDoneEvent
    | ReasoningSummaryPartEvent
    | ReasoningSummaryDeltaEvent
    | ReasoningSummaryDoneEvent
    | ArgumentsDeltaEvent
    | ArgumentsDoneEvent
    | CustomInputDeltaEvent
    | CustomInputDoneEvent
    | ShellCommandEvent
    | ShellCommandDeltaEvent
    | WebSearchCallEvent
    | HostedCallEvent
    | HostedDeltaEvent
    | McpArgumentsDoneEvent
    | CodeDoneEvent
    | ErrorEvent
    | PauseEvent
    | PauseResumeEvent
)

EVENT_CLASSES: tuple[type[Event], ...] = get_args(Event)


def _types_of(cls: type) -> tuple[str, ...]:
    return get_args(attrs.fields_dict(cls)["type"].type)


#: Every event `type` the server can emit, mapped to the class that carries it.
CLASS_BY_TYPE: dict[str, type[Event]] = {t: c for c in EVENT_CLASSES for t in _types_of(c)}
