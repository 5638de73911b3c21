# How an item and a request's header become prompt tokens, as the real API counts them: each item
# is a message of the chat format (tokens.framed: its role, its text, 3 framing tokens), and its
# images and files cost what OpenAI's documentation says they cost for the model
# (rollout.conversation.media). `render` gives the same as text, for the safety scan. Nothing here
# keeps state: a Context (rollout.conversation.context) calls these once per item.
from __future__ import annotations

from array import array
from collections.abc import Sequence

import orjson

from protocol import codec
from protocol.agentitems import AgentMessage, MultiAgentCall, MultiAgentCallOutput, output_text
from protocol.clientitems import CLIENT_BY_CALL, CLIENT_BY_OUTPUT
from protocol.hosted import HOSTED_BY_ITEM
from protocol.items import (
    Compaction,
    ComputerCall,
    ComputerCallOutput,
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    InputFile,
    InputImage,
    InputText,
    Item,
    McpApprovalResponse,
    Message,
    OutputText,
    Reasoning,
    Tool,
    text_of,
)
from rollout.conversation import media
from rollout.conversation import tokens as tok

Body = tuple[InputImage | InputFile, ...]  # an item's content parts that are not text


def parts(item: Item, hidden: str = "") -> tuple[str, str, Body]:
    """What an item contributes to the prompt: its role (the chat format's header), its text
    and the content parts that carry images or files."""
    if isinstance(item, Message):
        return item.role, text_of(item.content), _media(item.content)
    if isinstance(item, FunctionCall):
        return f"assistant to={item.name}", item.arguments, ()
    if isinstance(item, FunctionCallOutput):
        # No ids in the prompt: they are random, and the prompt must be the same in every mode.
        return "tool", text_of(item.output), _media(item.output)
    if isinstance(item, ComputerCall):
        return "assistant to=computer", orjson.dumps(item.action).decode(), ()
    if isinstance(item, ComputerCallOutput):
        return "tool", "[screenshot]", ()
    if isinstance(item, McpApprovalResponse):
        verdict = "approved" if item.approve else f"denied {item.reason or ''}"
        return "user", f"mcp approval: {verdict}", ()
    hosted = HOSTED_BY_ITEM.get(type(item))
    if hosted is not None:
        return f"assistant to={hosted.name}", hosted.text(item), ()
    client = CLIENT_BY_CALL.get(type(item))
    if client is not None:  # the client's other tools (protocol.clientitems): as a function's
        return f"assistant to={client.name_of(item)}", client.call_text(item), ()
    client = CLIENT_BY_OUTPUT.get(type(item))
    if client is not None:
        return "tool", client.output_text(item), ()
    if isinstance(item, Reasoning):
        # The hidden reasoning (restored from encrypted_content, or kept from this server's own
        # step) is part of the prompt; a client's summary alone is all that is left otherwise.
        body = "\n".join([*(s.text for s in item.summary), *([hidden] if hidden else [])])
        return "reasoning", body, ()
    if isinstance(item, Compaction):
        # What the compacted history left (restored from its blob): a short summary of it.
        return "compaction", hidden, ()
    if isinstance(item, MultiAgentCall):
        return f"assistant to=multi_agent.{item.action}", item.arguments, ()
    if isinstance(item, MultiAgentCallOutput):
        return "tool", output_text(item), ()
    if isinstance(item, AgentMessage):
        return f"agent {item.author} to={item.recipient}", text_of(item.content), ()
    raise TypeError(f"cannot render {type(item).__name__}; resolve item references first")


_TEXT_PARTS = (InputText, OutputText)


def counted_as(item: Item, hidden: str = "") -> tuple[str, str] | None:
    """What an item's prompt tokens are made of, its role and its text (`parts` without the
    body), or None for an item that holds images or files: those are counted for a model. A
    message of one text part, the commonest item, is read at once."""
    if type(item) is Message:
        content = item.content
        if type(content) is str:
            return item.role, content
        if len(content) == 1 and type(content[0]) in _TEXT_PARTS:
            return item.role, content[0].text  # type: ignore[union-attr]
    role, text, body = parts(item, hidden)
    return None if body else (role, text)


def has_media(item: Item) -> bool:
    """Whether the item holds images or files (what `parts` gives as its body)."""
    if isinstance(item, Message):
        return bool(_media(item.content))
    return isinstance(item, FunctionCallOutput) and bool(_media(item.output))


def _media(content: str | tuple[ContentPart, ...]) -> Body:
    if isinstance(content, str):
        return ()
    return tuple(p for p in content if isinstance(p, InputImage | InputFile))


def render(item: Item, hidden: str = "") -> str:
    """The text an item contributes to the prompt, framed as the chat format frames it (what
    the safety scan reads; its tokens are `tokens_of`)."""
    role, text, _ = parts(item, hidden)
    return framed_text(role, text)


def framed_text(role: str, text: str) -> str:
    """A role's text as the chat format frames it (`render`'s text)."""
    return f"<|start|>{role}<|message|>{text}<|end|>"


def rendered(item: Item, model: str = "", hidden: str = "") -> tuple[str, array[int]]:
    """`render` and `tokens_of` of an item, from one look at its parts."""
    found = parts(item, hidden)
    return framed_text(found[0], found[1]), _tokens(found, model)


def tokens_of(item: Item, model: str = "", hidden: str = "") -> array[int]:
    """An item's prompt tokens: the chat format's framing (tokens.framed) around its text and
    the tokens its images and files cost for `model` (rollout.conversation.media)."""
    return _tokens(parts(item, hidden), model)


def _tokens(found: tuple[str, str, Body], model: str) -> array[int]:
    role, text, body = found
    if not body:
        return tok.framed(role, tok.encoded(text))
    tokens = array("I", tok.encoded(text))
    for part in body:
        tokens.extend(media_tokens(part, model))
    return tok.framed(role, tokens)


def media_tokens(part: InputImage | InputFile, model: str) -> array[int]:
    """What an image or a file costs: its tokens by the documented rule, its text as text."""
    if isinstance(part, InputImage):
        size = media.url_image_size(part.image_url)
        n = media.image_tokens(model, part.detail, size)
        return tok.media(n, part.image_url or part.file_id or "")
    content = media.file_content(part.file_data, part.filename)
    tokens = array("I", tok.encoded(content.text)) if content.text else array("I")
    n = media.file_tokens_of_pages(model, content.pages) + content.estimated
    tokens.extend(tok.media(n, part.file_data or part.file_id or part.file_url or ""))
    return tokens


def header_messages(instructions: str | None, tools: str) -> list[tuple[str, str]]:
    """The header's messages, each its role and its text: the instructions (a system message),
    then the tools as JSON text (`tools`; "" when there are none)."""
    out = []
    if instructions:
        out.append(("system", instructions))
    if tools:
        out.append(("tools", tools))
    return out


def tools_text(tools: Sequence[Tool]) -> str:
    """The tools as the header's tools message holds them ("" for none)."""
    return orjson.dumps(codec.tools_json(tools)).decode() if tools else ""


def render_header(instructions: str | None, tools: Sequence[Tool]) -> str:
    """The header's text (what the safety scan reads; its tokens are `header_tokens`)."""
    return "".join(framed_text(*m) for m in header_messages(instructions, tools_text(tools)))


def header_tokens(instructions: str | None, tools: Sequence[Tool]) -> array[int]:
    """The instructions (a system message) and the tools, framed as messages."""
    return messages_tokens(header_messages(instructions, tools_text(tools)))


def messages_tokens(messages: Sequence[tuple[str, str]]) -> array[int]:
    """The tokens of messages given as role and text, each framed."""
    out = array("I")
    for role, text in messages:
        out.extend(tok.framed(role, tok.encoded(text)))
    return out


__all__ = [
    "counted_as",
    "framed_text",
    "header_messages",
    "header_tokens",
    "media_tokens",
    "messages_tokens",
    "parts",
    "render",
    "render_header",
    "rendered",
    "tokens_of",
    "tools_text",
]
