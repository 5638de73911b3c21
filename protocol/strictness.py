# The real API's stricter side, as tables: the create parameters it knows, the keys of the nested
# objects it checks, the tool types it accepts, the values of its enumerated fields and its
# bounds. A server started lenient (`--lenient`, ServerConfig.lenient) skips every rule here;
# the rules both modes keep are protocol.validate's. Pure functions raising ProtocolError with
# the real API's message, code and `param`; no I/O.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protocol.errors import ProtocolError, clip, invalid
from protocol.formats import check_strict_schema, one_of
from protocol.itemrules import IMAGE_DETAILS
from protocol.items import FunctionTool, OtherTool
from protocol.request import CreateRequest

#: The create parameters of the real API: the fields of the SDK's `ResponseCreateParams`
#: (types/responses/response_create_params.py) with `stream`, and the multi-agent beta's
#: `multi_agent` (types/beta/response_create_params.py).
API_PARAMS = frozenset(
    {
        "access_programs",
        "background",
        "background_options",
        "context_management",
        "conversation",
        "image",
        "include",
        "input",
        "instructions",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "model",
        "moderation",
        "multi_agent",
        "parallel_tool_calls",
        "previous_response_id",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning",
        "safety_identifier",
        "service_tier",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "truncation",
        "user",
    }
)
#: Parameters beyond the SDK's that strict mode still accepts, with why (docs/protocol-choices.md).
EXTENSIONS: dict[str, str] = {
    "generate": "WebSocket warm-up (`generate: false`), sent by Codex; over HTTP it gets its own "
    "`unsupported_parameter`",
    "stream_id": "WebSocket lanes; over HTTP it gets its own `unsupported_parameter`",
    "client_metadata": "sent by Codex on every create, accepted by the real API",
    "shape": "rollout's append shape (`shape: append`), sent by rollout's own agent runner",
    "presence_penalty": "in the OpenResponses schema (its compliance suite), not in the SDK",
    "frequency_penalty": "in the OpenResponses schema (its compliance suite), not in the SDK",
}
#: The WebSocket `response.create` frame's own key (not a parameter).
FRAME_KEYS = frozenset({"type"})
CREATE_PARAMS = API_PARAMS | frozenset(EXTENSIONS)

#: The keys of the nested objects whose unknown keys are refused (`reasoning.foo`), from the
#: SDK's types (shared_params/reasoning.py, response_text_config_param.py, ...).
NESTED_KEYS: dict[str, frozenset[str]] = {
    "reasoning": frozenset({"context", "effort", "generate_summary", "mode", "summary"}),
    "text": frozenset({"format", "verbosity"}),
    "stream_options": frozenset({"include_obfuscation"}),
    "prompt_cache_options": frozenset({"comparison_response_id", "mode", "prewarm", "ttl"}),
    "multi_agent": frozenset({"enabled", "max_concurrent_subagents"}),
}
#: The keys of `text.format`, by its `type`.
FORMAT_KEYS: dict[str, frozenset[str]] = {
    "text": frozenset({"type"}),
    "json_object": frozenset({"type"}),
    "json_schema": frozenset({"type", "name", "schema", "strict", "description"}),
}

#: The tool types the real API accepts: the `type` of each member of the SDK's `ToolParam`
#: union (types/responses/tool_param.py). Which of them the server runs is another table
#: (protocol.hosted.HOSTED_TOOLS); the others are accepted and echoed.
TOOL_TYPES = frozenset(
    {
        "apply_patch",
        "code_interpreter",
        "computer",
        "computer_use_preview",
        "custom",
        "file_search",
        "function",
        "image_generation",
        "local_shell",
        "mcp",
        "namespace",
        "programmatic_tool_calling",
        "shell",
        "tool_search",
        "web_search",
        "web_search_2025_08_26",
        "web_search_preview",
        "web_search_preview_2025_03_11",
    }
)

#: Enumerated fields: the SDK's Literal values (types/responses/service_tier.py,
#: response_includable.py); those of input items are protocol.itemrules's.
SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority", "fast", "ultrafast")
INCLUDABLE = (
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
)
#: Least values that only strict mode holds counts to (lenient: protocol.validate.AT_LEAST).
STRICT_AT_LEAST: dict[str, int] = {"max_output_tokens": 16}


def unknown(param: str) -> ProtocolError:
    return invalid(f"Unknown parameter: '{clip(param)}'.", param=param, code="unknown_parameter")


def check_params(body: Mapping[str, Any], *, websocket: bool) -> None:
    """Refuse a create body's (or `response.create` frame's) unknown keys: at the top level,
    in the objects of NESTED_KEYS and in `text.format`. Run on the JSON before it is decoded
    (the decoder drops unknown keys)."""
    for key in body:
        if key not in CREATE_PARAMS and not (websocket and key in FRAME_KEYS):
            raise unknown(str(key))
    for name, keys in NESTED_KEYS.items():
        value = body.get(name)
        if isinstance(value, Mapping):
            for key in value:
                if key not in keys:
                    raise unknown(f"{name}.{key}")
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, Mapping) else None
    if isinstance(fmt, Mapping) and fmt.get("type") in FORMAT_KEYS:
        for key in fmt:
            if key not in FORMAT_KEYS[fmt["type"]]:
                raise unknown(f"text.format.{key}")


def check_strict(req: CreateRequest) -> None:
    """A decoded create's rules that only strict mode enforces: tool types, strict function
    schemas and enumerated parameters (STRICT_AT_LEAST is applied by protocol.validate; the
    rules of input items, protocol.itemrules, hold in both modes)."""
    for i, tool in enumerate(req.tools):
        if isinstance(tool, OtherTool):
            one_of(tool.type, tuple(sorted(TOOL_TYPES)), f"tools[{i}].type")
        elif tool.strict is True and tool.parameters is not None:
            _check_function_schema(tool, i)
    one_of(req.service_tier, SERVICE_TIERS, "service_tier")
    for i, value in enumerate(req.include or ()):
        one_of(value, INCLUDABLE, f"include[{i}]")


def _check_function_schema(tool: FunctionTool, i: int) -> None:
    """A `strict: true` function's parameters follow the structured-outputs rules."""
    assert tool.parameters is not None

    def fail(where: tuple[str, ...], rule: str) -> ProtocolError:
        return invalid(
            f"Invalid schema for function '{clip(tool.name)}': In context={where!r}, {rule}",
            param=f"tools[{i}].parameters",
            code="invalid_function_parameters",
        )

    check_strict_schema(tool.parameters, fail)


__all__ = [
    "API_PARAMS",
    "CREATE_PARAMS",
    "EXTENSIONS",
    "FORMAT_KEYS",
    "IMAGE_DETAILS",
    "INCLUDABLE",
    "NESTED_KEYS",
    "SERVICE_TIERS",
    "STRICT_AT_LEAST",
    "TOOL_TYPES",
    "check_params",
    "check_strict",
    "unknown",
]
