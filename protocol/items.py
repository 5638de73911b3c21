# Input and output items, content parts, annotations and tool definitions: the wire shape of
# everything that goes into a conversation, as immutable attrs classes.
# Each class's fields are its JSON keys; the codec (protocol.codec) turns them into JSON and back.
# Nothing here validates meaning across items (that is protocol.validate). The tools the server
# runs itself are one table, protocol.hosted.HOSTED_TOOLS.
from typing import Any, Literal

import attrs

from protocol.agentitems import AgentItem, AgentRef
from protocol.clientitems import (
    CLIENT_BY_CALL,
    CLIENT_CALLS,
    CLIENT_OUTPUTS,
    ClientCallItem,
    ClientOutputItem,
    output_call_id,
)

# The content parts live in protocol.parts; they are re-exported here, with the items they fill.
from protocol.parts import (  # noqa: F401
    Annotation,
    ContainerFileCitation,
    ContentPart,
    FileCitation,
    FilePath,
    InputFile,
    InputImage,
    InputText,
    OutputText,
    Refusal,
    UrlCitation,
)
from protocol.toolitems import (
    CodeInterpreterCall,
    ComputerCall,
    ComputerCallOutput,
    FileSearchCall,
    ImageGenerationCall,
    McpApprovalRequest,
    McpApprovalResponse,
    McpCall,
    McpListTools,
)

# -- items --------------------------------------------------------------------------------------

Role = Literal["user", "assistant", "system", "developer"]


@attrs.frozen(kw_only=True)
class Message:
    """A message; `content` is a plain string (short form) or a list of parts."""

    type: Literal["message"] = "message"
    id: str | None = None
    role: Role
    content: str | tuple[ContentPart, ...]
    status: str | None = None
    phase: Literal["commentary", "final_answer"] | None = None  # assistant only; omitted if None
    agent: AgentRef | None = None  # the agent that made it (a multi-agent response)


@attrs.frozen(kw_only=True)
class FunctionCall:
    type: Literal["function_call"] = "function_call"
    id: str | None = None
    call_id: str
    name: str
    arguments: str
    status: str | None = None
    async_: bool | None = None  # `async` on the wire: a call of an async tool (no wait)
    agent: AgentRef | None = None  # the agent that made it (a multi-agent response)


@attrs.frozen(kw_only=True)
class FunctionCallOutput:
    type: Literal["function_call_output"] = "function_call_output"
    id: str | None = None
    call_id: str
    output: str | tuple[ContentPart, ...]
    status: str | None = None


@attrs.frozen(kw_only=True)
class UrlSource:
    type: Literal["url"] = "url"
    url: str


@attrs.frozen(kw_only=True)
class SearchAction:
    type: Literal["search"] = "search"
    query: str
    sources: tuple[UrlSource, ...] | None = None


@attrs.frozen(kw_only=True)
class OpenPageAction:
    type: Literal["open_page"] = "open_page"
    url: str | None = None


@attrs.frozen(kw_only=True)
class FindInPageAction:
    type: Literal["find_in_page"] = "find_in_page"
    url: str
    pattern: str


WebSearchAction = SearchAction | OpenPageAction | FindInPageAction


@attrs.frozen(kw_only=True)
class WebSearchCall:
    type: Literal["web_search_call"] = "web_search_call"
    id: str
    status: str
    action: WebSearchAction | None = None
    agent: AgentRef | None = None


@attrs.frozen(kw_only=True)
class SummaryText:
    type: Literal["summary_text"] = "summary_text"
    text: str


@attrs.frozen(kw_only=True)
class ReasoningText:
    type: Literal["reasoning_text"] = "reasoning_text"
    text: str


@attrs.frozen(kw_only=True)
class Reasoning:
    type: Literal["reasoning"] = "reasoning"
    id: str | None = None
    summary: tuple[SummaryText, ...] = ()
    encrypted_content: str | None = None  # omitted when None (as the real API sends it)
    content: tuple[ReasoningText, ...] | None = None  # omitted when None
    status: str | None = None  # omitted when None
    agent: AgentRef | None = None  # the agent that made it (a multi-agent response)


@attrs.frozen(kw_only=True)
class Compaction:
    """What `POST /v1/responses/compact` leaves of a conversation's history: an opaque blob that,
    sent back as input, stands for the compacted items at a fraction of their tokens."""

    type: Literal["compaction"] = "compaction"
    id: str | None = None
    encrypted_content: str
    created_by: str | None = None


@attrs.frozen(kw_only=True)
class ItemReference:
    type: Literal["item_reference"] = "item_reference"
    id: str


#: The output items of the hosted tools (HOSTED_TOOLS).
HostedItem = (
    WebSearchCall
    # -- MCP, code interpreter, file search, image generation (protocol.toolitems) --
    | McpListTools
    | McpCall
    | McpApprovalRequest
    | CodeInterpreterCall
    | FileSearchCall
    | ImageGenerationCall
    | ComputerCall  # (a client-run tool: the client answers it, as it does a function call)
)

Item = (
    Message
    | FunctionCall
    | FunctionCallOutput
    | ClientCallItem  # the client's other tools (protocol.toolitems)
    | ClientOutputItem
    | HostedItem
    | Reasoning
    | Compaction
    | ItemReference
    # -- the client's side of MCP approval and computer use (protocol.toolitems) --
    | McpApprovalResponse
    | ComputerCallOutput
    # -- a multi-agent response's own items (protocol.agentitems) --
    | AgentItem
)

#: The calls the client answers (functions and the other client tools, protocol.toolitems), and
#: the outputs that answer them.
CallItem = FunctionCall | ClientCallItem
OutputItem = FunctionCallOutput | ClientOutputItem
CALL_ITEMS: tuple[type[CallItem], ...] = (FunctionCall, *CLIENT_CALLS)
OUTPUT_ITEMS: tuple[type[OutputItem], ...] = (FunctionCallOutput, *CLIENT_OUTPUTS)


def call_name(item: Any) -> str:
    """The tool a call item (of CALL_ITEMS) names: a function's or custom tool's name, or the
    type of a built-in client tool (`shell`, `local_shell`, `apply_patch`)."""
    if isinstance(item, FunctionCall):
        return item.name
    return CLIENT_BY_CALL[type(item)].name_of(item)


def answered_call(item: Any) -> str:
    """The call_id an output item (of OUTPUT_ITEMS) answers."""
    if isinstance(item, FunctionCallOutput):
        return item.call_id
    return output_call_id(item)


#: What a live (append-shape) rollout pauses on: the calls above, and the two hosted items the
#: client answers (a computer call; an MCP approval request, answered by its `id`); and the items
#: that answer them. A chain-shape response ends on any of them.
PausingItem = CallItem | ComputerCall | McpApprovalRequest
AnswerItem = OutputItem | ComputerCallOutput | McpApprovalResponse
PAUSING_ITEMS: tuple[type[PausingItem], ...] = (*CALL_ITEMS, ComputerCall, McpApprovalRequest)
ANSWER_ITEMS: tuple[type[AnswerItem], ...] = (
    *OUTPUT_ITEMS,
    ComputerCallOutput,
    McpApprovalResponse,
)


def pending_id(item: PausingItem) -> str:
    """The id an answer names a pausing item by: its call_id (an approval request's `id`)."""
    return item.id if isinstance(item, McpApprovalRequest) else item.call_id


def pending_name(item: PausingItem) -> str:
    """The tool a pausing item calls: call_name's, `computer`, or the MCP tool asked about."""
    if isinstance(item, McpApprovalRequest):
        return item.name
    if isinstance(item, ComputerCall):
        return "computer"
    return call_name(item)


def answered_id(item: AnswerItem) -> str:
    """The pending_id an answer (of ANSWER_ITEMS) names."""
    if isinstance(item, McpApprovalResponse):
        return item.approval_request_id
    if isinstance(item, ComputerCallOutput):
        return item.call_id
    return answered_call(item)


def answered_field(item: AnswerItem) -> str:
    """The key an answer names its call by (`call_id`; `approval_request_id`)."""
    return "approval_request_id" if isinstance(item, McpApprovalResponse) else "call_id"


# -- tools --------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class FunctionTool:
    type: Literal["function"] = "function"
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None
    async_: bool | None = None  # `async` on the wire: the model does not wait for its output


WEB_SEARCH_TOOL_TYPES = frozenset({"web_search", "web_search_2025_08_26", "web_search_preview"})


@attrs.frozen(kw_only=True)
class OtherTool:
    """A tool type other than a function (web search, namespace, custom, ...).

    It is accepted, echoed back as given in `Response.tools`, and otherwise only the hosted tools
    (HOSTED_TOOLS: web search) are acted on.
    """

    type: str
    raw: dict[str, Any] = attrs.field(factory=dict, eq=False)

    @property
    def is_web_search(self) -> bool:
        return self.type in WEB_SEARCH_TOOL_TYPES


Tool = FunctionTool | OtherTool


_TEXT_PARTS = (InputText, OutputText)


def text_of(content: str | tuple[ContentPart, ...]) -> str:
    """The plain text of a message or tool output body, for tokenizing and scanning."""
    if isinstance(content, str):
        return content
    if len(content) == 1 and type(content[0]) in _TEXT_PARTS:  # the commonest body: one text
        return content[0].text  # type: ignore[union-attr]
    parts: list[str] = []
    for part in content:
        if isinstance(part, InputText | OutputText):
            parts.append(part.text)
        elif isinstance(part, Refusal):
            parts.append(part.refusal)
    return "\n".join(parts)
