# Cross-field rules of a create request that the types alone cannot say (ranges, combinations,
# transport-specific fields). Pure functions raising ProtocolError with the offending `param`.
import re

from protocol.errors import clip, invalid, previous_response_not_found
from protocol.items import FunctionTool
from protocol.request import CreateRequest

STREAM_ID = re.compile(r"[A-Za-z0-9_.-]{1,256}")
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
INVALID_STREAM_ID = (
    "The 'stream_id' field must be a non-empty string with at most 256 characters and may only "
    "contain letters, numbers, underscores, hyphens, and periods."
)


def _range(value: float | None, low: float, high: float, param: str) -> None:
    if value is not None and not low <= value <= high:
        raise invalid(
            f"Invalid '{param}': {value} is out of range; it must be between {low} and {high}.",
            param=param,
            code="invalid_value",
        )


def check_stream_id(stream_id: str | None) -> None:
    if stream_id is not None and not STREAM_ID.fullmatch(stream_id):
        raise invalid(INVALID_STREAM_ID, param="stream_id", code="invalid_stream_id")


def validate_create(req: CreateRequest, *, websocket: bool) -> None:
    """Rules for both transports; `websocket` selects the WS-only fields' rules."""
    if req.background:
        raise invalid(
            "Background responses are not supported by this server; omit 'background'.",
            param="background",
            code="unsupported_parameter",
        )
    if req.previous_response_id == "":
        raise previous_response_not_found("")
    if req.conversation is not None:
        raise invalid(
            "Conversations are not supported by this server; use 'previous_response_id'.",
            param="conversation",
            code="unsupported_parameter",
        )
    if req.stream_id is not None and not websocket:
        raise invalid(
            "'stream_id' is only accepted over a WebSocket connection.",
            param="stream_id",
            code="unsupported_parameter",
        )
    if websocket:
        check_stream_id(req.stream_id)
    if req.generate is False and not websocket:
        raise invalid(
            "'generate: false' (warm-up) is only accepted over a WebSocket connection.",
            param="generate",
            code="unsupported_parameter",
        )
    if req.model == "":
        raise invalid("'model' must not be empty.", param="model", code="invalid_value")
    if req.generate is not False:
        if req.input is None:
            raise invalid(
                "Missing required parameter: 'input'.",
                param="input",
                code="missing_required_parameter",
            )
        if req.input in ("", ()):
            raise invalid("'input' must not be empty.", param="input", code="empty_input")
    _range(req.temperature, 0.0, 2.0, "temperature")
    _range(req.top_p, 0.0, 1.0, "top_p")
    _range(req.top_logprobs, 0, 20, "top_logprobs")
    if req.max_output_tokens is not None and req.max_output_tokens < 1:
        raise invalid(
            "'max_output_tokens' must be at least 1.",
            param="max_output_tokens",
            code="invalid_value",
        )
    if req.max_tool_calls is not None and req.max_tool_calls < 0:
        raise invalid(
            "'max_tool_calls' must not be negative.", param="max_tool_calls", code="invalid_value"
        )
    if req.metadata is not None:
        if len(req.metadata) > 16:
            raise invalid(
                "'metadata' has more than 16 keys.", param="metadata", code="invalid_value"
            )
        for key, value in req.metadata.items():
            if len(key) > 64 or len(value) > 512:
                raise invalid(
                    "'metadata' keys are at most 64 and values at most 512 characters.",
                    param=f"metadata.{clip(key)}",
                    code="invalid_value",
                )
    _check_tools(req)
    if req.shape == "append" and not websocket and not req.stream:
        raise invalid(
            "The append shape streams over HTTP: send 'stream: true'.",
            param="stream",
            code="invalid_value",
        )


def _check_tools(req: CreateRequest) -> None:
    names: set[str] = set()
    for i, tool in enumerate(req.tools):
        if not isinstance(tool, FunctionTool):
            continue
        if not TOOL_NAME.fullmatch(tool.name):
            raise invalid(
                f"Invalid 'tools[{i}].name': {clip(repr(tool.name))}. Expected a string of "
                "letters, digits, underscores and hyphens, at most 64 characters.",
                param=f"tools[{i}].name",
                code="invalid_value",
            )
        if tool.name in names:
            raise invalid(
                f"Duplicate tool name {clip(repr(tool.name))}.",
                param=f"tools[{i}].name",
                code="invalid_value",
            )
        names.add(tool.name)
        params = tool.parameters
        if params is not None and params.get("type", "object") != "object":
            raise invalid(
                "A function's 'parameters' must be a JSON Schema of type 'object'.",
                param=f"tools[{i}].parameters",
                code="invalid_value",
            )
    choice = req.tool_choice
    if isinstance(choice, str) and choice not in ("none", "auto", "required"):
        raise invalid(
            f"Invalid value: {clip(repr(choice))}. Supported values are: 'none', 'auto' and "
            "'required'.",
            param="tool_choice",
            code="invalid_value",
        )
    if isinstance(choice, dict) and not isinstance(choice.get("type"), str):
        raise invalid(
            "'tool_choice' must be a string or an object with a 'type'.",
            param="tool_choice.type",
            code="missing_required_parameter",
        )


__all__ = ["INVALID_STREAM_ID", "STREAM_ID", "check_stream_id", "validate_create"]
