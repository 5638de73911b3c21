# Hypothesis strategies for every wire type of `protocol`: content parts, items, tools, the create
# request, the Response, usage and every event class. Values stay JSON-safe (finite floats,
# 53-bit integers, lists and dicts only) so that a codec round trip can be compared with `==`.
# Used by the codec and stream tests (tests/protocol).
import string
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from protocol import agentitems as ai
from protocol import clientitems as ti
from protocol import events as ev
from protocol import items as it
from protocol.request import ContextManagement, CreateRequest, StreamOptions
from protocol.response import (
    IncompleteDetails,
    InputTokensDetails,
    OutputTokensDetails,
    Response,
    ResponseError,
    Usage,
)

#: Shared settings: modest example counts so the suite runs in seconds.
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: For tests parametrized over many classes: fewer examples each.
SMALL = settings(SETTINGS, max_examples=25)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


def builds_into(
    table: dict[type, st.SearchStrategy[Any]],
) -> Callable[..., st.SearchStrategy[Any]]:
    """`st.builds` that also files the strategy in `table` under the class it builds (the tests
    of coverage check that every class of a union has one)."""

    def build(cls: type, **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        table[cls] = strategy = st.builds(cls, **fields)
        return strategy

    return build


# -- scalars and free JSON ----------------------------------------------------------------------

ids = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=12)
texts = st.text(max_size=16)
counts = st.integers(min_value=0, max_value=2**31)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)

json_scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(2**53), max_value=2**53) | finite_floats
) | texts
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
json_objects = st.dictionaries(texts, json_values, max_size=3)
string_maps = st.dictionaries(texts, texts, max_size=3)

# -- content parts ------------------------------------------------------------------------------

#: One strategy per ContentPart class.
CONTENT_PART_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {}
builds_part = builds_into(CONTENT_PART_STRATEGIES)

url_citations = st.builds(
    it.UrlCitation, url=texts, title=texts, start_index=counts, end_index=counts
)
input_texts = builds_part(it.InputText, text=texts)
input_images = builds_part(
    it.InputImage,
    image_url=optional(texts),
    file_id=optional(ids),
    detail=st.sampled_from(["auto", "low", "high"]),
)
input_files = builds_part(
    it.InputFile,
    file_id=optional(ids),
    file_data=optional(texts),
    file_url=optional(texts),
    filename=optional(texts),
)
output_texts = builds_part(
    it.OutputText,
    text=texts,
    annotations=st.lists(url_citations, max_size=2).map(tuple),
    logprobs=st.lists(json_values, max_size=2).map(tuple),
)
refusals = builds_part(it.Refusal, refusal=texts)

content_parts = st.one_of(*CONTENT_PART_STRATEGIES.values())
content = texts | st.lists(content_parts, max_size=3).map(tuple)

# -- items --------------------------------------------------------------------------------------

#: One strategy per Item class, and per WebSearchAction class.
ITEM_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {}
ACTION_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {}
builds_item = builds_into(ITEM_STRATEGIES)
builds_action = builds_into(ACTION_STRATEGIES)

roles = st.sampled_from(["user", "assistant", "system", "developer"])
statuses = optional(st.sampled_from(["in_progress", "completed", "incomplete"]))

agent_refs = optional(st.builds(ai.AgentRef, agent_name=ids))  # (a multi-agent response's)
messages = builds_item(
    it.Message, id=optional(ids), role=roles, content=content, status=statuses, agent=agent_refs
)
call_fields = {"id": optional(ids), "call_id": ids, "status": statuses}  # calls and outputs
function_calls = builds_item(
    it.FunctionCall, name=ids, arguments=texts, agent=agent_refs, **call_fields
)
function_call_outputs = builds_item(it.FunctionCallOutput, output=content, **call_fields)
search_actions = builds_action(
    it.SearchAction,
    query=texts,
    sources=optional(st.lists(st.builds(it.UrlSource, url=texts), max_size=3).map(tuple)),
)
open_page_actions = builds_action(it.OpenPageAction, url=optional(texts))
find_in_page_actions = builds_action(it.FindInPageAction, url=texts, pattern=texts)
web_search_actions = st.one_of(*ACTION_STRATEGIES.values())
web_search_calls = builds_item(
    it.WebSearchCall,
    id=ids,
    status=st.sampled_from(["in_progress", "searching", "completed", "failed"]),
    action=optional(web_search_actions),
    agent=agent_refs,
)
# -- MCP, code interpreter, file search, image generation, computer (protocol.toolitems) --
json_object_tuples = st.lists(json_objects, max_size=2).map(tuple)
mcp_list_tools = builds_item(
    it.McpListTools, id=ids, server_label=ids, tools=json_object_tuples, error=optional(texts)
)
mcp_calls = builds_item(
    it.McpCall,
    id=ids,
    server_label=ids,
    name=ids,
    arguments=texts,
    approval_request_id=optional(ids),
    error=optional(json_objects),
    output=optional(texts),
    status=statuses,
)
mcp_approval_requests = builds_item(
    it.McpApprovalRequest, id=ids, server_label=ids, name=ids, arguments=texts
)
mcp_approval_responses = builds_item(
    it.McpApprovalResponse,
    id=optional(ids),
    approval_request_id=ids,
    approve=st.booleans(),
    reason=optional(texts),
)
code_interpreter_calls = builds_item(
    it.CodeInterpreterCall,
    id=ids,
    status=st.sampled_from(["in_progress", "interpreting", "completed"]),
    container_id=ids,
    code=optional(texts),
    outputs=optional(json_object_tuples),
)
file_search_calls = builds_item(
    it.FileSearchCall,
    id=ids,
    status=st.sampled_from(["in_progress", "searching", "completed"]),
    queries=st.lists(texts, max_size=2).map(tuple),
    results=optional(json_object_tuples),
)
image_generation_calls = builds_item(
    it.ImageGenerationCall,
    id=ids,
    status=st.sampled_from(["in_progress", "generating", "completed"]),
    result=optional(texts),
    revised_prompt=optional(texts),
    size=optional(texts),
    quality=optional(texts),
    output_format=optional(texts),
    background=optional(texts),
)
computer_calls = builds_item(
    it.ComputerCall,
    id=optional(ids),
    call_id=ids,
    action=optional(json_objects),
    pending_safety_checks=json_object_tuples,
    status=statuses,
)
computer_call_outputs = builds_item(
    it.ComputerCallOutput,
    id=optional(ids),
    call_id=ids,
    output=json_objects,
    acknowledged_safety_checks=optional(json_object_tuples),
    status=statuses,
)
reasonings = builds_item(
    it.Reasoning,
    id=optional(ids),
    summary=st.lists(st.builds(it.SummaryText, text=texts), max_size=2).map(tuple),
    encrypted_content=optional(texts),
    content=optional(st.lists(st.builds(it.ReasoningText, text=texts), max_size=2).map(tuple)),
    agent=agent_refs,
)
compactions = builds_item(
    it.Compaction, id=optional(ids), encrypted_content=texts, created_by=optional(texts)
)
item_references = builds_item(it.ItemReference, id=ids)

# -- the client's tools other than functions (protocol.clientitems) --
custom_tool_calls = builds_item(
    ti.CustomToolCall, name=ids, input=texts, **{**call_fields, "status": optional(texts)}
)
custom_tool_call_outputs = builds_item(
    ti.CustomToolCallOutput, output=content, **{**call_fields, "status": optional(texts)}
)
_string_tuples = st.lists(texts, max_size=3).map(tuple)
_maybe_count = optional(counts)
shell_calls = builds_item(
    ti.ShellCall,
    action=st.builds(
        ti.ShellAction,
        commands=_string_tuples,
        max_output_length=_maybe_count,
        timeout_ms=_maybe_count,
    ),
    environment=optional(st.just({"type": "local"})),
    **call_fields,
)
_outcomes = st.builds(ti.ExitOutcome, exit_code=counts) | st.builds(ti.TimeoutOutcome)
shell_call_outputs = builds_item(
    ti.ShellCallOutput,
    output=st.lists(
        st.builds(ti.ShellOutput, stdout=texts, stderr=texts, outcome=_outcomes), max_size=2
    ).map(tuple),
    max_output_length=_maybe_count,
    **call_fields,
)
local_shell_calls = builds_item(
    ti.LocalShellCall,
    action=st.builds(
        ti.LocalShellAction,
        command=_string_tuples,
        env=string_maps,
        timeout_ms=_maybe_count,
        user=optional(texts),
        working_directory=optional(texts),
    ),
    **call_fields,
)
local_shell_call_outputs = builds_item(
    ti.LocalShellCallOutput, id=optional(ids), call_id=optional(ids), output=texts, status=statuses
)
_operations = (
    st.builds(ti.CreateFile, path=texts, diff=texts)
    | st.builds(ti.UpdateFile, path=texts, diff=texts)
    | st.builds(ti.DeleteFile, path=texts)
)
apply_patch_calls = builds_item(
    ti.ApplyPatchCall,
    id=optional(ids),
    call_id=ids,
    operation=_operations,
    status=optional(st.sampled_from(["in_progress", "completed"])),
)
apply_patch_call_outputs = builds_item(
    ti.ApplyPatchCallOutput,
    id=optional(ids),
    call_id=ids,
    status=st.sampled_from(["completed", "failed"]),
    output=optional(texts),
)

# -- a multi-agent response's items (protocol.agentitems) --
agent_actions = st.sampled_from(ai.AGENT_ACTIONS)
multi_agent_calls = builds_item(
    ai.MultiAgentCall,
    id=optional(ids),
    action=agent_actions,
    arguments=texts,
    call_id=ids,
    agent=agent_refs,
)
multi_agent_call_outputs = builds_item(
    ai.MultiAgentCallOutput,
    id=optional(ids),
    action=agent_actions,
    call_id=ids,
    output=st.lists(st.builds(it.OutputText, text=texts), max_size=2).map(tuple),
    agent=agent_refs,
)
agent_messages = builds_item(
    ai.AgentMessage,
    id=optional(ids),
    author=ids,
    recipient=ids,
    content=st.lists(content_parts, max_size=2).map(tuple),
    agent=agent_refs,
)

items = st.one_of(*ITEM_STRATEGIES.values())
item_tuples = st.lists(items, max_size=4).map(tuple)

# -- tools --------------------------------------------------------------------------------------

function_tools = st.builds(
    it.FunctionTool,
    name=ids,
    description=optional(texts),
    parameters=optional(json_objects),
    strict=optional(st.booleans()),
)
other_tool_types = st.sampled_from(
    ["web_search", "web_search_2025_08_26", "web_search_preview", "namespace", "custom"]
) | ids.filter(lambda t: t != "function")


@st.composite
def other_tools(draw: st.DrawFn) -> it.OtherTool:
    """An unknown tool: its raw dict always carries its own `type`."""
    type_ = draw(other_tool_types)
    raw = {**draw(json_objects), "type": type_}
    return it.OtherTool(type=type_, raw=raw)


tools = function_tools | other_tools()
tool_choices = st.sampled_from(["none", "auto", "required"]) | st.fixed_dictionaries(
    {"type": st.just("function"), "name": ids}
)

# -- usage and the response ---------------------------------------------------------------------

usages = st.builds(
    Usage,
    input_tokens=counts,
    input_tokens_details=st.builds(
        InputTokensDetails, cached_tokens=counts, cache_write_tokens=counts
    ),
    output_tokens=counts,
    output_tokens_details=st.builds(OutputTokensDetails, reasoning_tokens=counts),
    total_tokens=counts,
)

responses = st.builds(
    Response,
    id=ids,
    created_at=counts,
    status=st.sampled_from(["queued", "in_progress", "completed", "failed", "incomplete"]),
    completed_at=optional(counts),
    error=optional(st.builds(ResponseError, code=ids, message=texts)),
    incomplete_details=optional(st.builds(IncompleteDetails, reason=ids)),
    instructions=optional(texts | item_tuples),
    max_output_tokens=optional(counts),
    max_tool_calls=optional(counts),
    model=ids,
    output=st.lists(items, max_size=4),
    parallel_tool_calls=st.booleans(),
    previous_response_id=optional(ids),
    reasoning=json_objects,
    service_tier=ids,
    store=st.booleans(),
    temperature=finite_floats,
    text=json_objects,
    tool_choice=tool_choices,
    tools=st.lists(tools, max_size=3).map(tuple),
    top_logprobs=counts,
    top_p=finite_floats,
    truncation=st.sampled_from(["auto", "disabled"]),
    usage=optional(usages),
    user=optional(texts),
    metadata=string_maps,
    background=st.booleans(),
    prompt_cache_key=optional(texts),
    safety_identifier=optional(texts),
)

# -- the create request -------------------------------------------------------------------------

#: Every optional CreateRequest field but `type` (see test_codec: a `type` does not decode).
context_entries = st.builds(
    ContextManagement, type=st.just("compaction"), compact_threshold=optional(counts)
)
CREATE_OPTIONAL_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "instructions": optional(texts | item_tuples),
    "previous_response_id": optional(ids),
    "conversation": optional(ids | st.fixed_dictionaries({"id": ids})),
    "store": st.booleans(),
    "stream": optional(st.booleans()),
    "stream_options": optional(
        st.builds(StreamOptions, include_obfuscation=optional(st.booleans()))
    ),
    "background": optional(st.booleans()),
    "tools": st.lists(tools, max_size=3).map(tuple),
    "tool_choice": tool_choices,
    "parallel_tool_calls": st.booleans(),
    "max_output_tokens": optional(counts),
    "max_tool_calls": optional(counts),
    "temperature": optional(finite_floats),
    "top_p": optional(finite_floats),
    "top_logprobs": optional(counts),
    "truncation": optional(st.sampled_from(["auto", "disabled"])),
    "reasoning": optional(json_objects),
    "text": optional(json_objects),
    "include": optional(st.lists(texts, max_size=3).map(tuple)),
    "metadata": optional(string_maps),
    "prompt": optional(json_objects),
    "prompt_cache_key": optional(texts),
    "prompt_cache_retention": optional(st.sampled_from(["in_memory", "24h"])),
    "safety_identifier": optional(texts),
    "user": optional(texts),
    "service_tier": optional(st.sampled_from(["auto", "default", "flex"])),
    "context_management": optional(st.lists(context_entries, max_size=2).map(tuple)),
    "moderation": json_values,
    "stream_id": optional(ids),
    "generate": optional(st.booleans()),
    "client_metadata": optional(string_maps),
    "shape": st.sampled_from(["chain", "append"]),
}

create_requests = st.fixed_dictionaries(
    {"model": ids, "input": texts | item_tuples}, optional=CREATE_OPTIONAL_FIELDS
).map(lambda kw: CreateRequest(**kw))

# -- events -------------------------------------------------------------------------------------


def event_types(cls: type) -> list[str]:
    """The `type` values `cls` carries, from the events module's own table."""
    return sorted(t for t, c in ev.CLASS_BY_TYPE.items() if c is cls)


seqs = counts
_text_location = {"item_id": ids, "output_index": counts, "content_index": counts}
_logprobs = st.lists(json_values, max_size=2).map(tuple)

#: Field strategies of every event class, `type` excluded (it is drawn from CLASS_BY_TYPE).
EVENT_FIELDS: dict[type, dict[str, st.SearchStrategy[Any]]] = {
    ev.ResponseEvent: {"sequence_number": seqs, "response": responses},
    ev.OutputItemEvent: {"sequence_number": seqs, "output_index": counts, "item": items},
    ev.ContentPartEvent: {"sequence_number": seqs, **_text_location, "part": content_parts},
    ev.TextDeltaEvent: {
        "sequence_number": seqs,
        **_text_location,
        "delta": texts,
        "logprobs": _logprobs,
    },
    ev.TextDoneEvent: {
        "sequence_number": seqs,
        **_text_location,
        "text": texts,
        "logprobs": _logprobs,
    },
    ev.AnnotationAddedEvent: {
        "sequence_number": seqs,
        **_text_location,
        "annotation_index": counts,
        "annotation": url_citations,
    },
    ev.RefusalDeltaEvent: {"sequence_number": seqs, **_text_location, "delta": texts},
    ev.RefusalDoneEvent: {"sequence_number": seqs, **_text_location, "refusal": texts},
    ev.ReasoningSummaryPartEvent: {
        "sequence_number": seqs,
        "item_id": ids,
        "output_index": counts,
        "summary_index": counts,
        "part": st.builds(it.SummaryText, text=texts),
    },
    ev.ReasoningSummaryDeltaEvent: {
        "sequence_number": seqs,
        "item_id": ids,
        "output_index": counts,
        "summary_index": counts,
        "delta": texts,
    },
    ev.ReasoningSummaryDoneEvent: {
        "sequence_number": seqs,
        "item_id": ids,
        "output_index": counts,
        "summary_index": counts,
        "text": texts,
    },
    ev.ArgumentsDeltaEvent: {
        "sequence_number": seqs,
        "item_id": ids,
        "output_index": counts,
        "delta": texts,
    },
    ev.ArgumentsDoneEvent: {
        "sequence_number": seqs,
        "item_id": ids,
        "output_index": counts,
        "name": ids,
        "arguments": texts,
    },
    ev.CustomInputDeltaEvent: {
        "sequence_number": seqs,
        "item_id": ids,
        "output_index": counts,
        "delta": texts,
    },
    ev.CustomInputDoneEvent: {
        "sequence_number": seqs,
        "item_id": ids,
        "output_index": counts,
        "input": texts,
    },
    ev.ShellCommandEvent: {
        "sequence_number": seqs,
        "output_index": counts,
        "command_index": counts,
        "command": texts,
    },
    ev.ShellCommandDeltaEvent: {
        "sequence_number": seqs,
        "output_index": counts,
        "command_index": counts,
        "delta": texts,
    },
    ev.WebSearchCallEvent: {"sequence_number": seqs, "output_index": counts, "item_id": ids},
    ev.HostedCallEvent: {"sequence_number": seqs, "output_index": counts, "item_id": ids},
    ev.HostedDeltaEvent: {
        "sequence_number": seqs,
        "output_index": counts,
        "item_id": ids,
        "delta": texts,
    },
    ev.McpArgumentsDoneEvent: {
        "sequence_number": seqs,
        "output_index": counts,
        "item_id": ids,
        "arguments": texts,
    },
    ev.CodeDoneEvent: {
        "sequence_number": seqs,
        "output_index": counts,
        "item_id": ids,
        "code": texts,
    },
    ev.ErrorEvent: {
        "error": st.builds(
            ev.ErrorPayload,
            type=ids,
            code=optional(ids),
            message=texts,
            param=optional(texts),
            headers=optional(st.dictionaries(ids, texts, max_size=2)),
        ),
        "status": optional(st.integers(min_value=400, max_value=599)),
        "sequence_number": optional(seqs),
    },
    ev.PauseEvent: {
        "sequence_number": seqs,
        "response_id": ids,
        "pending_calls": st.lists(
            st.builds(ev.PendingCall, call_id=ids, name=ids, item_id=ids), max_size=3
        ).map(tuple),
        "usage": usages,
    },
    # -- inject and steer (pause-resume.md) --
    ev.InjectCreatedEvent: {"sequence_number": seqs, "response_id": ids},
    ev.InjectFailedEvent: {
        "sequence_number": seqs,
        "response_id": ids,
        "input": st.lists(json_values, max_size=2).map(tuple),
        "error": st.builds(ev.InjectError, code=ids, message=texts),
    },
    ev.SteerAcceptedEvent: {
        "sequence_number": seqs,
        "steer": st.builds(ev.SteerRef, id=ids, previous_response_id=ids),
    },
    ev.SteerPendingEvent: {
        "sequence_number": seqs,
        "reason": ids,
        "required_input": st.lists(
            st.builds(ev.RequiredInput, call_id=ids, name=ids), max_size=2
        ).map(tuple),
        "steer": st.builds(ev.SteerRef, id=ids, previous_response_id=ids),
    },
    ev.SteerFailedEvent: {
        "sequence_number": seqs,
        "error": st.builds(ev.SteerError, code=ids, message=texts),
        "steer": st.builds(
            ev.FailedSteer, input=json_values, previous_response_id=ids, id=optional(ids)
        ),
    },
}


def events_of(cls: type) -> st.SearchStrategy[Any]:
    """Events of one class, with any of the `type` values it carries."""
    return st.builds(cls, type=st.sampled_from(event_types(cls)), **EVENT_FIELDS[cls])


# A KeyError here means a new event class has no strategy yet: add it to EVENT_FIELDS.
events = st.one_of(*(events_of(cls) for cls in ev.EVENT_CLASSES))
