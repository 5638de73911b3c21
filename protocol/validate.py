# Cross-field rules of a create request that the types alone cannot say (ranges, combinations,
# transport-specific fields, `tool_choice` against `tools`, `text.format`, reasoning and caching
# options). Pure functions raising ProtocolError with the offending `param`.
import re
from collections.abc import Mapping
from typing import Any

from protocol.conversations import (
    METADATA_KEY_CHARS,
    METADATA_KEYS,
    METADATA_VALUE_CHARS,
    check_not_chained,
    conversation_id_of,
)
from protocol.errors import ProtocolError, clip, invalid, previous_response_not_found
from protocol.formats import (
    above_max,
    below_min,
    check_reasoning,
    check_text,
    missing,
    one_of,
    required_string,
)
from protocol.hosted import HOSTED_BY_CHOICE
from protocol.itemrules import check_items
from protocol.items import FunctionTool, OtherTool
from protocol.request import CreateRequest
from protocol.strictness import STRICT_AT_LEAST, check_strict

STREAM_ID = re.compile(r"[A-Za-z0-9_.-]{1,256}")
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
HOSTED_CHOICES = frozenset(
    {
        *HOSTED_BY_CHOICE,
        "file_search",
        "computer",
        "computer_use",
        "computer_use_preview",
        "image_generation",
        "code_interpreter",
        "apply_patch",
        "shell",
    }
)
INVALID_STREAM_ID = (
    "The 'stream_id' field must be a non-empty string with at most 256 characters and may only "
    "contain letters, numbers, underscores, hyphens, and periods."
)


#: Tool types that take `async: true` (the model does not wait for their output).
ASYNC_TYPES = frozenset({"function", "custom"})

#: Sampling numbers held to a closed range: (field, lowest, highest), checked in this order.
RANGES: tuple[tuple[str, float, float], ...] = (
    ("temperature", 0.0, 2.0),
    ("presence_penalty", -2.0, 2.0),
    ("frequency_penalty", -2.0, 2.0),
    ("top_p", 0.0, 1.0),
    ("top_logprobs", 0, 20),
)
#: Counts held to a least value: (field, least), checked after RANGES.
AT_LEAST: tuple[tuple[str, int], ...] = (
    ("max_output_tokens", 1),
    ("max_tool_calls", 0),
)


def _range(value: float | None, low: float, high: float, param: str) -> None:
    if value is not None and value < low:
        raise below_min(param, value, low)
    if value is not None and value > high:
        raise above_max(param, value, high)


def _at_least(value: int | None, low: int, param: str) -> None:
    if value is not None and value < low:
        raise below_min(param, value, low)


def check_stream_id(stream_id: str | None) -> None:
    if stream_id is not None and not STREAM_ID.fullmatch(stream_id):
        raise invalid(INVALID_STREAM_ID, param="stream_id", code="invalid_stream_id")


def validate_create(req: CreateRequest, *, websocket: bool, strict: bool = True) -> None:
    """Rules for both transports; `websocket` selects the WS-only fields' rules, `strict` adds
    the real API's stricter rules (protocol.strictness; off for a lenient server). The first
    rule broken, in this order, is the error."""
    _check_refused_fields(req, websocket=websocket)
    _check_model_and_input(req)
    for where, items in (("input", req.input), ("instructions", req.instructions)):
        if isinstance(items, tuple):
            check_items(items, where)
    for field, low, high in RANGES:
        _range(getattr(req, field), low, high, field)
    for field, least in AT_LEAST:
        least = STRICT_AT_LEAST.get(field, least) if strict else least
        _at_least(getattr(req, field), least, field)
    _check_metadata(req.metadata)
    _check_tools(req)
    _check_multi_agent(req)
    if req.shape == "append" and not websocket and not req.stream:
        raise invalid(
            "The append shape streams over HTTP: send 'stream: true'.",
            param="stream",
            code="invalid_value",
        )
    _check_tool_choice(req)
    check_text(req.text)
    check_reasoning(req.reasoning)
    _check_caching(req)
    one_of(req.truncation, ("auto", "disabled"), "truncation")
    if strict:
        check_strict(req)


def _check_refused_fields(req: CreateRequest, *, websocket: bool) -> None:
    """Fields this server does not support, and those only a WebSocket connection accepts."""
    if req.background:
        _check_background(req, websocket=websocket)
    if req.previous_response_id == "":
        raise previous_response_not_found("")
    conversation_id_of(req.conversation)  # a string or {"id": ...}
    check_not_chained(req.conversation, req.previous_response_id)
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


def _check_background(req: CreateRequest, *, websocket: bool) -> None:
    """Background mode: over HTTP only (the SDK's WebSocket docs), stored, in the chain shape."""
    if websocket:
        raise invalid(
            "'background' is not supported over WebSocket; create background responses over HTTP.",
            param="background",
            code="unsupported_parameter",
        )
    if req.store is False:
        raise invalid(
            "Background mode requires 'store' to be true: a background response is kept so "
            "that it can be polled, streamed again and cancelled.",
            param="store",
            code="invalid_value",
        )
    if req.shape == "append":
        raise invalid(
            "'background' cannot be combined with 'shape: append': an append rollout pauses "
            "for its client, which a background response does not have.",
            param="background",
            code="unsupported_parameter",
        )


def _check_model_and_input(req: CreateRequest) -> None:
    """A model name, and an input unless the request only warms up (`generate: false`)."""
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


def _check_metadata(metadata: Mapping[str, str] | None) -> None:
    if metadata is None:
        return
    if len(metadata) > METADATA_KEYS:
        raise invalid(
            f"'metadata' has more than {METADATA_KEYS} keys.",
            param="metadata",
            code="invalid_value",
        )
    for key, value in metadata.items():
        if len(key) > METADATA_KEY_CHARS or len(value) > METADATA_VALUE_CHARS:
            raise invalid(
                f"'metadata' keys are at most {METADATA_KEY_CHARS} and values at most "
                f"{METADATA_VALUE_CHARS} characters.",
                param=f"metadata.{clip(key)}",
                code="invalid_value",
            )


def _check_tools(req: CreateRequest) -> None:
    names: set[str] = set()
    for i, tool in enumerate(req.tools):
        if isinstance(tool, OtherTool) and "async" in tool.raw and tool.type not in ASYNC_TYPES:
            raise invalid(
                f"Unknown parameter: 'tools[{i}].async'.",
                param=f"tools[{i}].async",
                code="unknown_parameter",
            )
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


def _not_in_tools(name: str, param: str = "tool_choice") -> ProtocolError:
    return invalid(f"Tool choice '{clip(name)}' not found in 'tools' parameter.", param=param)


def _check_tool_choice(req: CreateRequest) -> None:
    """`tool_choice` names only tools the request offers (the real API's messages)."""
    choice = req.tool_choice
    if isinstance(choice, str):
        one_of(choice, ("none", "auto", "required"), "tool_choice")
        if choice == "required" and not req.tools:
            raise invalid(
                "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
                "are specified.",
                param="tool_choice",
            )
        return
    kind = required_string(choice, "type", "tool_choice.type")
    if kind == "allowed_tools":
        one_of(choice.get("mode"), ("auto", "required"), "tool_choice.mode")
        if choice.get("mode") is None:
            raise missing("tool_choice.mode")
        entries = choice.get("tools")
        if not isinstance(entries, list) or not entries:
            raise missing("tool_choice.tools")
        for i, entry in enumerate(entries):
            where = f"tool_choice.tools[{i}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
                raise missing(f"{where}.type")
            _check_chosen(req, entry, where)
        return
    if kind not in ("function", "custom", "mcp", *HOSTED_CHOICES, "programmatic_tool_calling"):
        kinds = ("function", "allowed_tools", "custom", "mcp", *sorted(HOSTED_CHOICES))
        one_of(kind, kinds, "tool_choice.type")
    _check_chosen(req, choice, "tool_choice")


def _check_chosen(req: CreateRequest, choice: Mapping[str, Any], param: str) -> None:
    """One chosen tool (`tool_choice`, or an `allowed_tools` entry) is among `tools`."""
    kind = choice["type"]
    if kind in ("function", "custom"):
        name = required_string(choice, "name", f"{param}.name")
        if kind == "function":
            found = any(isinstance(t, FunctionTool) and t.name == name for t in req.tools)
        else:
            found = any(
                isinstance(t, OtherTool) and t.type == kind and t.raw.get("name") == name
                for t in req.tools
            )
        if not found:
            raise _not_in_tools(name, param)
        return
    if kind == "mcp":
        label = choice.get("server_label")
        found = any(
            isinstance(t, OtherTool) and t.type == "mcp" and t.raw.get("server_label") == label
            for t in req.tools
        )
        if not found:
            raise _not_in_tools(str(label), param)
        return
    if kind == "programmatic_tool_calling":
        return
    types = {t.type for t in req.tools if isinstance(t, OtherTool)}
    if kind in HOSTED_BY_CHOICE:
        found = bool(types & HOSTED_BY_CHOICE[kind].choices)
    else:
        found = kind in types or (
            kind.startswith("computer") and any("computer" in t for t in types)
        )
    if not found:
        raise _not_in_tools(kind, param)


def _check_caching(req: CreateRequest) -> None:
    one_of(req.prompt_cache_retention, ("in_memory", "24h"), "prompt_cache_retention")
    options = req.prompt_cache_options
    if options is not None:
        one_of(options.get("mode"), ("implicit", "explicit"), "prompt_cache_options.mode")
        one_of(options.get("ttl"), ("30m", "12h"), "prompt_cache_options.ttl")


def _check_multi_agent(req: CreateRequest) -> None:
    config = req.multi_agent
    if config is None or not config.enabled:
        return
    if req.parallel_tool_calls:
        raise invalid(
            "Multi-agent responses do not support 'parallel_tool_calls: true'; omit it or send "
            "false.",
            param="multi_agent",
            code="unsupported_value",
        )
    if req.shape == "append":
        raise invalid(
            "A multi-agent response cannot use the append shape; send one or the other.",
            param="shape",
            code="unsupported_value",
        )
    _at_least(config.max_concurrent_subagents, 1, "multi_agent.max_concurrent_subagents")


MULTI_AGENT_BETA = "responses_multi_agent=v1"


def betas_of(header: str) -> frozenset[str]:
    """The features an `OpenAI-Beta` header opts into (comma-separated)."""
    return frozenset(b.strip() for b in header.split(",") if b.strip())


def check_betas(req: CreateRequest, betas: frozenset[str]) -> None:
    """A multi-agent create needs the request (HTTP) or the connection (WebSocket handshake) to
    send `OpenAI-Beta: responses_multi_agent=v1`."""
    if req.waits_for_inject and MULTI_AGENT_BETA not in betas:
        raise invalid(
            f"'multi_agent' is a beta feature: send the header 'OpenAI-Beta: {MULTI_AGENT_BETA}'.",
            param="multi_agent",
            code="beta_required",
        )


__all__ = [
    "INVALID_STREAM_ID",
    "MULTI_AGENT_BETA",
    "STREAM_ID",
    "betas_of",
    "check_betas",
    "check_stream_id",
    "validate_create",
]
