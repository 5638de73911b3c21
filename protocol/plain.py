# Plain messages, the commonest input item (`{"role": ..., "content": "text"}`), remembered by
# role and text: the message decoded from one, and the content it is stored with (one text part).
# A history resent whole brings the same messages each turn; both are immutable, so each turn
# shares them instead of building them again (an attrs object costs more than the lookup, whose
# hash of the text is kept with the kept string and serves the counting memo after it). A long
# text decoded anew has no hash yet, and hashing all of it (a resent history's every character,
# each turn) costs more than comparing it: it is found by its length and ends first, then
# compared whole. Bounded in entries and characters (all forgotten at once when full); lookups
# take no lock: a dict's get and set are atomic, and a race only makes an object twice. And
# `message`, a stored message built at half the constructor's cost (`stored`, a short-form one
# with its stored content).
from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any

from protocol.agentitems import AgentRef
from protocol.items import ContentPart, InputText, Message, OutputText

MAX_ENTRIES = 16_384
MAX_CHARS = 16 * 1024 * 1024
ENDS = 32  # characters of each end of a long text (over 2 * ENDS) its entry is found by
_LONG, _TAIL = 2 * ENDS, -ENDS

#: (role, text) -> [the decoded message, its stored content (made when first asked for)]
_kept: dict[tuple[str, str], list[object]] = {}
#: (role, length, first ENDS characters, last ENDS characters) -> a long text's entry in _kept
_ends: dict[tuple[str, int, str, str], list[object]] = {}
_chars = 0


def decoded(role: str, text: str) -> Message:
    """What the converter makes of `{"role": role, "content": text}` (`role` one of the
    roles, checked by the caller)."""
    size = len(text)
    if size > _LONG:
        entry = _ends.get((role, size, text[:ENDS], text[_TAIL:]))
        if entry is not None and entry[0].content == text:  # type: ignore[attr-defined]
            return entry[0]  # type: ignore[return-value]
    entry = _kept.get((role, text))
    if entry is None:
        entry = _keep(role, text)
    return entry[0]  # type: ignore[return-value]


def decoded_all(
    values: list[Any],
    roles: Container[object],
    other: Callable[[dict[str, Any]], Any] | None = None,
) -> tuple[Any, ...] | None:
    """`decoded` of each of `values` that is a plain message (`{"role": ..., "content":
    "..."}`, with or without `"type": "message"`; its role one of `roles`), in one loop; any
    other object is what `other` makes of it. None if any is something else (or `other` gives
    None)."""
    out: list[Any] = []
    add, kept, ends = out.append, _kept, _ends
    for value in values:
        if type(value) is not dict:
            return None
        role: Any = value.get("role")
        text: Any = value.get("content")
        if len(value) != 2:
            plain = len(value) == 3 and value.get("type") == "message"
        else:
            plain = "type" not in value
        if not plain or type(text) is not str or role not in roles:
            made = None if other is None else other(value)
            if made is None:
                return None
            add(made)
            continue
        size = len(text)
        if size > _LONG:  # (`decoded`, at once)
            entry = ends.get((role, size, text[:ENDS], text[_TAIL:]))
            if entry is not None and entry[0].content == text:  # type: ignore[attr-defined]
                add(entry[0])
                continue
        entry = kept.get((role, text))
        if entry is None:
            entry = _keep(role, text)
        add(entry[0])
    return tuple(out)


def stored_content(role: str, text: str) -> tuple[ContentPart, ...]:
    """The content a message of short-form `text` is stored with: one output text for the
    assistant's, one input text for any other role's."""
    entry = _kept.get((role, text))
    if entry is None:
        entry = _keep(role, text)
    content = entry[1]
    if content is None:
        part = OutputText(text=text) if role == "assistant" else InputText(text=text)
        content = entry[1] = (part,)
    return content  # type: ignore[return-value]


def _keep(role: str, text: str) -> list[object]:
    global _chars
    entry: list[object] = [Message(role=role, content=text), None]  # type: ignore[arg-type]
    if len(_kept) >= MAX_ENTRIES or _chars + len(text) > MAX_CHARS:
        _kept.clear()
        _ends.clear()
        _chars = 0
    if len(text) <= MAX_CHARS // 64:  # (one text never pushes out most of the others)
        _kept[(role, text)] = entry
        _chars += len(text)
        if len(text) > _LONG:  # (the newest of the texts of these ends)
            _ends[(role, len(text), text[:ENDS], text[_TAIL:])] = entry
    return entry


#: Message's fields, in order (a test holds them to attrs.fields), and each one's slot setter.
MESSAGE_FIELDS = ("type", "id", "role", "content", "status", "phase", "agent")
_new = object.__new__
_set_type, _set_id, _set_role, _set_content, _set_status, _set_phase, _set_agent = (
    Message.__dict__[name].__set__ for name in MESSAGE_FIELDS
)


def message(
    *,
    id: str | None,
    role: str,
    content: str | tuple[ContentPart, ...],
    status: str | None,
    phase: Any = None,
    agent: AgentRef | None = None,
) -> Message:
    """`Message(...)` as its constructor makes it (it has no validators or converters), its
    slots set directly: a frozen attrs class sets each through `object.__setattr__`, which
    made a stored message cost twice as much, once for every item of a resent history."""
    made: Message = _new(Message)
    _set_type(made, "message")
    _set_id(made, id)
    _set_role(made, role)
    _set_content(made, content)
    _set_status(made, status)
    _set_phase(made, phase)
    _set_agent(made, agent)
    return made


def stored(item: Message, id: str) -> Message:
    """`item`, a message of short-form content, as it is stored: given `id`, a status (its own
    or "completed") and its `stored_content`, built at once (`message` and `stored_content` in
    one call: a resent history's every message is one)."""
    role, text = item.role, item.content
    entry = _kept.get((role, text))  # type: ignore[arg-type]
    if entry is None:
        entry = _keep(role, text)  # type: ignore[arg-type]
    content = entry[1]
    if content is None:
        part = OutputText(text=text) if role == "assistant" else InputText(text=text)  # type: ignore[arg-type]
        content = entry[1] = (part,)
    made: Message = _new(Message)
    _set_type(made, "message")
    _set_id(made, id)
    _set_role(made, role)
    _set_content(made, content)
    _set_status(made, item.status or "completed")
    _set_phase(made, item.phase)
    _set_agent(made, item.agent)
    return made


def forget() -> None:
    """Forget every message kept (for tests)."""
    global _chars
    _kept.clear()
    _ends.clear()
    _chars = 0


__all__ = [
    "ENDS",
    "MAX_CHARS",
    "MAX_ENTRIES",
    "MESSAGE_FIELDS",
    "decoded",
    "decoded_all",
    "forget",
    "message",
    "stored",
    "stored_content",
]
