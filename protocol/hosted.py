# The tools the server runs itself, as one table (HOSTED_TOOLS): each one's tool types, its
# `tool_choice` types, its item and events, and the text it contributes to the prompt. What
# validation, tool choice, the codec, the event builders and the context know of a hosted tool,
# they read here.
from collections.abc import Callable
from typing import Any

import attrs

from protocol.items import WEB_SEARCH_TOOL_TYPES, HostedItem, SearchAction, WebSearchCall
from protocol.toolitems import (
    CodeInterpreterCall,
    ComputerCall,
    FileSearchCall,
    ImageGenerationCall,
    McpApprovalRequest,
    McpCall,
    McpListTools,
)

# -- hosted tools -------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class HostedTool:
    """A tool the server runs itself, as the wire shows it (a row of HOSTED_TOOLS).

    Its call is an output item of its own: made `in_progress` (by its call's spec; from `id`
    and `status` alone unless the spec says more), its `output_item.added` followed by the
    `opening` events, then, for a tool that streams a text of its call (`streamed`: an MCP
    call's arguments, the interpreter's code), one `delta` event and its `done` event (the text
    under `done_key`), then the `working` events; when the call completes, the item is replaced
    whole, and the `completed` event (`failed`, for an item whose status is `failed`) precedes
    its `output_item.done`. Each of those events carries `output_index` and `item_id`
    (protocol.events.WebSearchCallEvent's shape)."""

    name: str  # the tool, in the engine's tables and in the prompt
    types: frozenset[str]  # the `tools[].type` values that offer it
    choices: frozenset[str]  # the `tool_choice` types that force it (in `allowed_tools`: allow)
    item: type[HostedItem]
    prefix: str  # of its items' ids
    opening: tuple[str, ...]
    completed: str
    text: Callable[[Any], str]  # what the prompt shows of its item
    omit_none: tuple[str, ...] = ()  # keys of its item left off the wire when None
    failed: str | None = None  # the event of a failed call, when it has one
    streamed: Callable[[Any], str] | None = None  # the text its `delta`/`done` events carry
    delta: str = ""
    done: str = ""
    done_key: str = ""
    working: tuple[str, ...] = ()  # events after the streamed text (`interpreting`)
    offer: str = ""  # the tool whose offer this item belongs to (an MCP approval request: mcp)
    model: bool = True  # the model's own item (False: the server's, e.g. a tool listing)
    #: The in-progress item a completed one opened as (an event log rebuilt from a response).
    reopen: Callable[[Any], Any] | None = None

    @property
    def item_type(self) -> str:
        return str(attrs.fields_dict(self.item)["type"].default)

    @property
    def offered_as(self) -> str:
        """The name the request offers it by (in ToolChoice and the context's `hosted`)."""
        return self.offer or self.name

    def opened(self, done: Any) -> Any:
        """The in-progress item `done` opened as."""
        if self.reopen is not None:
            return self.reopen(done)
        return self.item(id=done.id, status="in_progress")  # type: ignore[call-arg]


def _search_text(item: WebSearchCall) -> str:
    action = item.action
    if not isinstance(action, SearchAction):
        return ""
    urls = "\n".join(s.url for s in action.sources or ())
    return f"{action.query}\n{urls}"


WEB_SEARCH_TOOL = HostedTool(
    name="web_search",
    types=WEB_SEARCH_TOOL_TYPES,
    choices=WEB_SEARCH_TOOL_TYPES | {"web_search_preview_2025_03_11"},
    item=WebSearchCall,
    prefix="ws",
    opening=("response.web_search_call.in_progress", "response.web_search_call.searching"),
    completed="response.web_search_call.completed",
    text=_search_text,
    omit_none=("action", "agent"),  # in_progress: no action yet (as recorded)
)

# -- MCP, code interpreter, file search, image generation (issue 26) ---------------------------


def _mcp_list_text(item: McpListTools) -> str:
    names = ", ".join(str(t.get("name", "")) for t in item.tools)
    return f"{item.server_label}: {names}" + (f"\n{item.error}" if item.error else "")


def _mcp_call_text(item: McpCall) -> str:
    result = item.output if item.error is None else f"error: {item.error}"
    return f"{item.server_label}.{item.name} {item.arguments}\n{result or ''}"


def _approval_text(item: McpApprovalRequest) -> str:
    return f"approval requested: {item.server_label}.{item.name} {item.arguments}"


def _code_text(item: CodeInterpreterCall) -> str:
    logs = "\n".join(str(o.get("logs", o.get("url", ""))) for o in item.outputs or ())
    return f"{item.code or ''}\n{logs}"


def _file_search_text(item: FileSearchCall) -> str:
    found = "\n".join(f"{r.get('filename', '')}: {r.get('text', '')}" for r in item.results or ())
    return "\n".join([*item.queries, found])


def _computer_text(item: ComputerCall) -> str:
    action = item.action or {}
    return " ".join(f"{k}={v}" for k, v in action.items())


def _image_text(item: ImageGenerationCall) -> str:
    return f"image: {item.revised_prompt or ''}"  # the image itself is not text


MCP_LIST_TOOL = HostedTool(
    name="mcp_list_tools",
    types=frozenset(),
    choices=frozenset(),
    item=McpListTools,
    prefix="mcpl",
    opening=("response.mcp_list_tools.in_progress",),
    completed="response.mcp_list_tools.completed",
    failed="response.mcp_list_tools.failed",
    text=_mcp_list_text,
    offer="mcp",
    model=False,  # the server's listing, before the model samples
    reopen=lambda done: attrs.evolve(done, tools=(), error=None),
)
MCP_CALL_TOOL = HostedTool(
    name="mcp",
    types=frozenset({"mcp"}),
    choices=frozenset({"mcp"}),
    item=McpCall,
    prefix="mcp",
    opening=("response.mcp_call.in_progress",),
    completed="response.mcp_call.completed",
    failed="response.mcp_call.failed",
    text=_mcp_call_text,
    streamed=lambda item: item.arguments,
    delta="response.mcp_call_arguments.delta",
    done="response.mcp_call_arguments.done",
    done_key="arguments",
    reopen=lambda done: attrs.evolve(done, status="in_progress", output=None, error=None),
)
MCP_APPROVAL_TOOL = HostedTool(
    name="mcp_approval_request",
    types=frozenset(),
    choices=frozenset(),
    item=McpApprovalRequest,
    prefix="mcpr",
    opening=(),
    completed="",  # no events of its own: output_item.added and .done
    text=_approval_text,
    offer="mcp",
    reopen=lambda done: done,
)
CODE_INTERPRETER_TOOL = HostedTool(
    name="code_interpreter",
    types=frozenset({"code_interpreter"}),
    choices=frozenset({"code_interpreter"}),
    item=CodeInterpreterCall,
    prefix="ci",
    opening=("response.code_interpreter_call.in_progress",),
    completed="response.code_interpreter_call.completed",
    text=_code_text,
    streamed=lambda item: item.code or "",
    delta="response.code_interpreter_call_code.delta",
    done="response.code_interpreter_call_code.done",
    done_key="code",
    working=("response.code_interpreter_call.interpreting",),
    reopen=lambda done: attrs.evolve(done, status="in_progress", outputs=None),
)
FILE_SEARCH_TOOL = HostedTool(
    name="file_search",
    types=frozenset({"file_search"}),
    choices=frozenset({"file_search"}),
    item=FileSearchCall,
    prefix="fs",
    opening=("response.file_search_call.in_progress", "response.file_search_call.searching"),
    completed="response.file_search_call.completed",
    text=_file_search_text,
    reopen=lambda done: attrs.evolve(done, status="in_progress", results=None),
)
IMAGE_GENERATION_TOOL = HostedTool(
    name="image_generation",
    types=frozenset({"image_generation"}),
    choices=frozenset({"image_generation"}),
    item=ImageGenerationCall,
    prefix="ig",
    opening=(
        "response.image_generation_call.in_progress",
        "response.image_generation_call.generating",
    ),
    completed="response.image_generation_call.completed",
    text=_image_text,
    omit_none=("revised_prompt", "size", "quality", "output_format", "background"),
)

COMPUTER_TOOL = HostedTool(
    name="computer",
    types=frozenset({"computer", "computer_use_preview"}),
    choices=frozenset({"computer", "computer_use_preview", "computer_use"}),
    item=ComputerCall,
    prefix="cu",
    opening=(),
    completed="",  # no events of its own: output_item.added and .done
    text=_computer_text,
    reopen=lambda done: attrs.evolve(done, status="in_progress"),
)

HOSTED_TOOLS: tuple[HostedTool, ...] = (
    WEB_SEARCH_TOOL,
    # -- issue 26 --
    MCP_LIST_TOOL,
    MCP_CALL_TOOL,
    MCP_APPROVAL_TOOL,
    CODE_INTERPRETER_TOOL,
    FILE_SEARCH_TOOL,
    IMAGE_GENERATION_TOOL,
    COMPUTER_TOOL,
)
HOSTED_BY_TYPE: dict[str, HostedTool] = {t: tool for tool in HOSTED_TOOLS for t in tool.types}
HOSTED_BY_CHOICE: dict[str, HostedTool] = {c: tool for tool in HOSTED_TOOLS for c in tool.choices}
HOSTED_BY_ITEM: dict[type, HostedTool] = {tool.item: tool for tool in HOSTED_TOOLS}
HOSTED_ITEMS: tuple[type[HostedItem], ...] = tuple(HOSTED_BY_ITEM)
