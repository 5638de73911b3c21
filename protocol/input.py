# Pure rules for a create request's input: short forms expanded into stored items, tool outputs
# and item references checked against the conversation they continue, references resolved, and
# the Response a request starts. Sans-IO: the caller passes the id factory, the clock reading and
# what the conversation already holds (open calls, known item ids).
from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence, Set
from typing import Any

import attrs

from protocol import errors
from protocol.agentitems import AGENT_ITEMS, AGENT_PREFIX
from protocol.clientitems import (
    CLIENT_BY_CALL,
    CLIENT_BY_OUTPUT,
    CLIENT_CALLS,
    CLIENT_OUTPUTS,
    ApplyPatchCallOutput,
    CustomToolCall,
    CustomToolCallOutput,
)
from protocol.errors import clip
from protocol.items import (
    CALL_ITEMS,
    OUTPUT_ITEMS,
    Compaction,
    ComputerCall,
    ComputerCallOutput,
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    InputText,
    Item,
    ItemReference,
    McpApprovalResponse,
    Message,
    Reasoning,
    answered_call,
    text_of,
)
from protocol.plain import message, stored, stored_content
from protocol.request import CreateRequest
from protocol.response import Response
from protocol.sealing import unseal

NewId = Callable[[str], str]  # prefix -> a fresh id ("msg" -> "msg_...")
_CLIENT_ITEMS = (*CLIENT_CALLS, *CLIENT_OUTPUTS)
_ANSWERS = (*OUTPUT_ITEMS, ComputerCallOutput)


def instructions_text(instructions: str | Sequence[Item] | None) -> str | None:
    if instructions is None or isinstance(instructions, str):
        return instructions
    return "\n".join(text_of(i.content) for i in instructions if isinstance(i, Message))


def normalize_input(value: str | Sequence[Item] | None, new_id: NewId) -> list[Item]:
    """Input as stored items: short forms expanded, every item given an id."""
    if value is None:
        return []
    if isinstance(value, str):  # the short form: one user message, built as stored
        text: tuple[ContentPart, ...] = (InputText(text=value),)
        return [Message(role="user", content=text, id=new_id("msg"), status="completed")]
    out: list[Item] = []
    add = out.append
    for item in value:
        if type(item) is Message:
            content = item.content
            if type(content) is str:  # (`stored_message`, at once for the commonest item)
                add(stored(item, item.id or new_id("msg")))
            else:
                add(stored_message(item, new_id))
        elif isinstance(item, FunctionCallOutput | FunctionCall):
            if not (item.id and item.status):  # (else stored as it is)
                prefix = "fco" if isinstance(item, FunctionCallOutput) else "fc"
                item = attrs.evolve(
                    item, id=item.id or new_id(prefix), status=item.status or "completed"
                )
            add(item)
        else:
            add(_other_item(item, new_id))
    return out


def stored_message(item: Message, new_id: NewId) -> Message:
    """A message as it is stored: with an id and a status, and its short-form content made a
    text part (an output text for the assistant's), built at once (the commonest item: the
    general `attrs.evolve` costs several times more); one that has them all is kept."""
    content = item.content
    if type(content) is str:
        content = stored_content(item.role, content)
    elif item.id and item.status:
        return item
    return message(
        id=item.id or new_id("msg"),
        role=item.role,
        content=content,
        status=item.status or "completed",
        phase=item.phase,
        agent=item.agent,
    )


def _other_item(item: Item, new_id: NewId) -> Item:
    """An item other than a function's call or output as stored, given an id (and a status,
    where it has one)."""
    if isinstance(item, ComputerCall | ComputerCallOutput | McpApprovalResponse):
        if item.id is None:
            prefix = "mcpa" if isinstance(item, McpApprovalResponse) else "cu"
            item = attrs.evolve(item, id=new_id(prefix))
    elif isinstance(item, _CLIENT_ITEMS):
        item = _client_item(item, new_id)
    elif isinstance(item, Reasoning) and item.id is None:
        item = attrs.evolve(item, id=new_id("rs"))
    elif isinstance(item, Compaction) and item.id is None:
        item = attrs.evolve(item, id=new_id("cmp"))
    elif isinstance(item, AGENT_ITEMS) and item.id is None:
        item = attrs.evolve(item, id=new_id(AGENT_PREFIX[type(item)]))
    return item


def _client_item(item: Any, new_id: NewId) -> Item:
    """A call or output of a client tool other than a function, stored with an id and status."""
    tool = CLIENT_BY_CALL.get(type(item)) or CLIENT_BY_OUTPUT[type(item)]
    prefix = tool.call_prefix if type(item) is tool.call else tool.output_prefix
    changes: dict[str, Any] = {"id": item.id or new_id(prefix)}
    if not isinstance(item, CustomToolCall | CustomToolCallOutput | ApplyPatchCallOutput):
        changes["status"] = item.status or "completed"
    out: Item = attrs.evolve(item, **changes)
    return out


def _noun(item: Item) -> str:
    """How the refusal of an output names the kind of call it answers."""
    tool = CLIENT_BY_OUTPUT.get(type(item))
    return "function call" if tool is None else tool.noun


def check_input(
    items: Sequence[Item],
    open_calls: Set[str],
    known_ids: Container[str],
    async_calls: Set[str] = frozenset(),
) -> None:
    """Each tool output answers an open call (once); each reference resolves; no synchronous
    call is left unanswered (an async call's output may come in any later request).
    `open_calls`, `known_ids` and `async_calls` (the open calls of async tools) describe the
    conversation being continued.

    Pure: raises before anything is touched, so a bad request leaves cached state intact.
    """
    calls: set[str] = set()
    answered: set[str] = set()
    ids: set[str] | None = None  # the ids of the items before a reference (made at the first)
    optional = set(async_calls)
    for i, item in enumerate(items):
        if type(item) is Message:  # (the commonest item: neither a call, an output nor a reference)
            if ids is not None and item.id is not None:
                ids.add(item.id)
            continue
        if isinstance(item, CALL_ITEMS):
            calls.add(item.call_id)
            if getattr(item, "async_", None):
                optional.add(item.call_id)
        elif isinstance(item, ComputerCall):
            calls.add(item.call_id)
        elif isinstance(item, _ANSWERS):
            call_id = item.call_id if isinstance(item, ComputerCallOutput) else answered_call(item)
            known = call_id in calls or call_id in open_calls
            if call_id in answered or not known:
                raise errors.invalid(
                    f"No tool call found for {_noun(item)} output with call_id {clip(call_id)}.",
                    param=f"input[{i}].call_id",
                    code="invalid_value",
                )
            calls.discard(call_id)
            answered.add(call_id)
        elif isinstance(item, ItemReference):
            if ids is None:
                ids = {
                    seen.id
                    for seen in items[:i]
                    if not isinstance(seen, ItemReference) and seen.id is not None
                }
            if item.id not in ids and item.id not in known_ids:
                raise errors.invalid(
                    f"Item with id '{clip(item.id)}' not found.",
                    param=f"input[{i}].id",
                    code="invalid_value",
                )
        if ids is not None and not isinstance(item, ItemReference) and item.id is not None:
            ids.add(item.id)
    unanswered = (set(open_calls) | calls) - answered - optional
    if unanswered:
        raise errors.invalid(
            f"No tool output found for function call {clip(min(unanswered))}.",
            param="input",
            code="invalid_value",
        )


def restore_reasoning(
    given: str | Sequence[Item] | None,
    items: Sequence[Item],
    key: bytes,
    known_ids: Container[str],
    store: bool,
) -> dict[str, str]:
    """The hidden reasoning of the input's reasoning items (item id -> text), unsealed from their
    `encrypted_content`. `given` is the input as sent, `items` the same normalized.

    A tampered or foreign blob is `invalid_encrypted_content`; an item without a blob must be
    one the conversation holds, unless the request is stored (the real API's rule: items of a
    `store: false` response can only come back through their encrypted content)."""
    out: dict[str, str] = {}
    if given is None or isinstance(given, str):
        return out
    for i, (sent, item) in enumerate(zip(given, items, strict=True)):
        if type(item) is Message:
            continue
        if isinstance(item, Compaction) and item.id is not None:
            out[item.id] = unseal(item.encrypted_content, key, item.id).text
            continue
        if not isinstance(item, Reasoning) or item.id is None:
            continue
        if item.encrypted_content is not None:
            out[item.id] = unseal(item.encrypted_content, key, item.id).text
        elif isinstance(sent, Reasoning) and sent.id is not None:
            if sent.id not in known_ids and not store:
                raise errors.invalid(
                    f"Item with id '{sent.id}' not found. Items are not persisted when `store` "
                    "is set to false. Try again with `store` set to true, or remove this item "
                    "from your input.",
                    param=f"input[{i}]",
                )
    return out


def resolve_references(
    items: Sequence[Item], lookup: Callable[[ItemReference], Item | None]
) -> list[Item]:
    """Item references replaced by the items they name (in this input first, then `lookup`)."""
    if not [item for item in items if isinstance(item, ItemReference)]:
        return list(items)
    local = {i.id: i for i in items if not isinstance(i, ItemReference) and i.id is not None}
    out: list[Item] = []
    for item in items:
        if isinstance(item, ItemReference):
            found = local.get(item.id) or lookup(item)
            if found is not None:
                out.append(found)
        else:
            out.append(item)
    return out


def response_text(text: Mapping[str, Any] | None) -> dict[str, Any]:
    """`text` as a Response reports it: the format (default `text`) and verbosity (`medium`)."""
    out: dict[str, Any] = {"format": {"type": "text"}, "verbosity": "medium", **(text or {})}
    if out.get("format") is None:
        out["format"] = {"type": "text"}
    return out


#: The request's settings a Response echoes as they were sent (new_response fills in the rest:
#: the defaults of what was left out, and the fields named differently).
ECHOED = (
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "model",
    "previous_response_id",
    "store",
    "tool_choice",
    "tools",
    "user",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
)


def new_response(
    req: CreateRequest,
    response_id: str,
    created_at: int,
    reasoning: Mapping[str, Any] | None = None,
) -> Response:
    """The in-progress Response a request starts: the request's settings, or their defaults.
    `reasoning` is the effective setting (the model's default effort filled in), when known.

    A copy of a blank response with the request's settings set on it: cheaper than the
    constructor's keyword arguments when the caches are cold (as at each create of an agent's
    turns); every field holding a dict is set anew here, none is shared with the blank."""
    effective = dict(reasoning or req.reasoning or {})
    effective.setdefault("effort", None)
    effective.setdefault("summary", None)
    response = _BLANK.snapshot()
    response.id = response_id
    response.created_at = created_at
    for name in ECHOED:
        setattr(response, name, getattr(req, name))
    response.parallel_tool_calls = req.parallel
    response.background = bool(req.background)
    response.reasoning = effective
    if req.service_tier not in (None, "auto"):
        response.service_tier = req.service_tier
    if req.temperature is not None:
        response.temperature = req.temperature
    response.presence_penalty = req.presence_penalty or 0.0
    response.frequency_penalty = req.frequency_penalty or 0.0
    response.text = response_text(req.text)
    response.top_logprobs = req.top_logprobs or 0
    if req.top_p is not None:
        response.top_p = req.top_p
    response.truncation = req.truncation or "disabled"
    response.metadata = req.metadata or {}
    return response


_BLANK = Response(id="", created_at=0, model="")  # the defaults; never sent, never changed


__all__ = [
    "check_input",
    "instructions_text",
    "new_response",
    "normalize_input",
    "resolve_references",
    "response_text",
    "restore_reasoning",
]
