# The items of the MCP tool and of the hosted code interpreter, file search and image generation,
# and the client-run computer tool's call and output: their wire shapes as immutable attrs
# classes (field names as the SDK's types/responses/ name them). Nested objects the server only
# passes through (a listed tool, a search result, a computer action) stay JSON objects. Nothing
# here imports the rest of protocol/; protocol.items joins these to its Item union and its
# hosted-tool table (HOSTED_TOOLS).
from typing import Any, Literal

import attrs

# -- MCP ----------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class McpListTools:
    """The tools an MCP server lists (`tools[]`: name, input_schema, description, annotations)."""

    type: Literal["mcp_list_tools"] = "mcp_list_tools"
    id: str
    server_label: str
    tools: tuple[dict[str, Any], ...] = ()
    error: str | None = None


@attrs.frozen(kw_only=True)
class McpCall:
    type: Literal["mcp_call"] = "mcp_call"
    id: str
    server_label: str
    name: str
    arguments: str
    approval_request_id: str | None = None
    error: Any = None  # {type: mcp_protocol_error | mcp_tool_execution_error | http_error, ...}
    output: str | None = None
    status: str | None = None


@attrs.frozen(kw_only=True)
class McpApprovalRequest:
    type: Literal["mcp_approval_request"] = "mcp_approval_request"
    id: str
    server_label: str
    name: str
    arguments: str


@attrs.frozen(kw_only=True)
class McpApprovalResponse:
    """The client's answer to an approval request (input only)."""

    type: Literal["mcp_approval_response"] = "mcp_approval_response"
    id: str | None = None
    approval_request_id: str
    approve: bool
    reason: str | None = None


# -- code interpreter, file search, image generation ---------------------------------------------


@attrs.frozen(kw_only=True)
class CodeInterpreterCall:
    type: Literal["code_interpreter_call"] = "code_interpreter_call"
    id: str
    status: str
    container_id: str = ""
    code: str | None = None
    outputs: tuple[dict[str, Any], ...] | None = None  # {type: logs, logs} | {type: image, url}


@attrs.frozen(kw_only=True)
class FileSearchCall:
    type: Literal["file_search_call"] = "file_search_call"
    id: str
    status: str
    queries: tuple[str, ...] = ()
    results: tuple[dict[str, Any], ...] | None = None  # {file_id, filename, score, text, ...}


@attrs.frozen(kw_only=True)
class ImageGenerationCall:
    type: Literal["image_generation_call"] = "image_generation_call"
    id: str
    status: str
    result: str | None = None  # the image, base64
    revised_prompt: str | None = None
    size: str | None = None
    quality: str | None = None
    output_format: str | None = None
    background: str | None = None


# -- computer use (client-run) -------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ComputerCall:
    type: Literal["computer_call"] = "computer_call"
    id: str | None = None
    call_id: str
    action: dict[str, Any] | None = None
    pending_safety_checks: tuple[dict[str, Any], ...] = ()
    status: str | None = None


@attrs.frozen(kw_only=True)
class ComputerCallOutput:
    type: Literal["computer_call_output"] = "computer_call_output"
    id: str | None = None
    call_id: str
    output: dict[str, Any]  # {type: computer_screenshot, image_url | file_id}
    acknowledged_safety_checks: tuple[dict[str, Any], ...] | None = None
    status: str | None = None
