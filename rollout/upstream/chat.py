# The chat-completions dialect of an upstream engine. `request` renders a rollout's context as
# one streamed `POST /chat/completions` (instructions, messages, function tools, tool calls and
# tool outputs; the request's tool choice, output format, sampling knobs and what is left of its
# output budget; usage asked for in the stream); `ChatStream` turns the streamed chunks into
# the loop's pieces (reasoning, text, refusals, tool-call deltas, usage, the finish reason; a
# stream that ends without one was cut short, and fails); `as_chunk` reads a whole completion.
# Pure: no I/O. Calls are streamed one after another, as OpenAI, vLLM, llama.cpp and Ollama do.
from __future__ import annotations

import weakref
from collections.abc import Collection, Mapping
from typing import Any

import attrs

from protocol.agentitems import AGENT_ITEMS
from protocol.items import (
    FunctionCall,
    FunctionCallOutput,
    InputImage,
    InputText,
    Item,
    Message,
    OutputText,
    text_of,
)
from rollout.conversation.context import Context
from rollout.engine.loop import Rollout
from rollout.model import pieces as p
from rollout.upstream import hosted
from rollout.upstream.hosted import Maker
from rollout.upstream.target import UpstreamConfig


def undeclared_call(name: str) -> str:
    return f"The upstream engine called {name!r}, a tool the request did not declare."


CUT_SHORT = "The upstream engine's stream ended without a finish reason: its answer was cut short."
#: Chat finish reasons, as the loop's.
FINISH = {"stop": "stop", "tool_calls": "stop", "function_call": "stop", "length": "length"}


def messages(ctx: Context) -> list[dict[str, Any]]:
    """The conversation as chat messages: hosted calls as their function's call and output
    (rollout.upstream.hosted); reasoning is the server's own item, with no place here. A
    context's messages are remembered (its items only grow), so a turn renders its new items
    only."""
    items = ctx.items
    instructions = hosted.instructions(ctx)
    seen = _rendered.get(ctx)
    if seen is not None and seen[0] == instructions and 0 < seen[1] <= len(items):
        if items[seen[1] - 1] is seen[2]:
            out = list(seen[3])
            _render(out, ctx, seen[1])
            _rendered[ctx] = (instructions, len(items), items[-1], out)
            return list(out)
    out = [{"role": "system", "content": instructions}] if instructions else []
    _render(out, ctx, 0)
    if items:
        _rendered[ctx] = (instructions, len(items), items[-1], out)
    return list(out)


#: Each context's messages as last rendered: its instructions, how many of its items, the last
#: of them, the messages (never changed in place: a call joining an assistant message replaces
#: the message).
_rendered: weakref.WeakKeyDictionary[Context, tuple[str | None, int, Item, list[Any]]] = (
    weakref.WeakKeyDictionary()
)


def _render(out: list[dict[str, Any]], ctx: Context, start: int) -> None:
    items = ctx.items
    add = out.append
    for item in items[start:] if start else items:
        if type(item) is Message:  # (the commonest item, its commonest content: at once)
            content = item.content
            if type(content) is not str:
                if len(content) == 1 and type(content[0]) in _TEXT:
                    content = content[0].text  # type: ignore[union-attr]
                else:
                    content = _content(item)  # type: ignore[assignment]
            add({"role": "system" if item.role == "developer" else item.role, "content": content})
            continue
        if type(item) in AGENT_ITEMS:  # a multi-agent action's call or output, a message
            item = hosted.as_plain(item)
        if isinstance(item, Message):
            role = "system" if item.role == "developer" else item.role
            out.append({"role": role, "content": _content(item)})
        elif isinstance(item, FunctionCall):
            call = {
                "id": item.call_id,
                "type": "function",
                "function": {"name": item.name, "arguments": item.arguments},
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":
                out[-1] = {**last, "tool_calls": [*last.get("tool_calls", ()), call]}
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif isinstance(item, FunctionCallOutput):
            out.append(
                {"role": "tool", "tool_call_id": item.call_id, "content": text_of(item.output)}
            )
        elif (shown := hosted.as_call(item, ctx)) is not None:  # a hosted call, as its function's
            call_id, name, arguments, output = shown
            call = {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
            out.append({"role": "tool", "tool_call_id": call_id, "content": output})


_TEXT = (InputText, OutputText)


def _content(item: Message) -> str | list[dict[str, Any]]:
    content = item.content
    if isinstance(content, str):
        return content
    if len(content) == 1 and type(content[0]) in _TEXT:  # (the commonest content)
        return content[0].text  # type: ignore[union-attr]
    for c in content:
        if type(c) is InputImage:
            break
    else:
        return text_of(content)
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, InputImage) and part.image_url:
            image = {"url": part.image_url, "detail": part.detail}
            parts.append({"type": "image_url", "image_url": image})
        elif isinstance(part, InputText | OutputText):
            parts.append({"type": "text", "text": part.text})
    return parts


def tools(ctx: Context) -> list[dict[str, Any]]:
    """The function tools the request allows now, as chat tools, and its hosted tools as
    functions (rollout.upstream.hosted)."""
    out = []
    for tool in ctx.function_tools.values():
        if ctx.choice.functions is not None and tool.name not in ctx.choice.functions:
            continue
        function: dict[str, Any] = {
            "name": tool.name,
            "parameters": tool.parameters or {"type": "object", "properties": {}},
        }
        if tool.description:
            function["description"] = tool.description
        if tool.strict is not None:
            function["strict"] = tool.strict
        out.append({"type": "function", "function": function})
    return [*out, *hosted.offered(ctx)]


def tool_choice(ctx: Context) -> str | dict[str, Any]:
    """What the step may call: what the request forces binds its first step only (the
    simulated model's rule too), and a response that made `max_tool_calls` calls calls none."""
    choice = ctx.choice
    if choice.mode == "none":
        return "none"
    if choice.max_calls is not None and ctx.response_calls >= choice.max_calls:
        return "none"
    if ctx.response_steps == 0:
        forced = choice.forced or hosted.forced(ctx)
        if forced is not None:
            return {"type": "function", "function": {"name": forced}}
        if choice.mode == "required":
            return "required"
    return "auto"


def request(r: Rollout, config: UpstreamConfig) -> dict[str, Any]:
    """The streamed chat-completions request for the rollout's next step."""
    ctx = r.ctx
    body: dict[str, Any] = {
        "model": config.model_for(r.stream.response.model),
        "messages": messages(ctx),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    offered = tools(ctx)
    if offered:
        body["tools"] = offered
        body["tool_choice"] = tool_choice(ctx)
        if not hosted.parallel(ctx):
            body["parallel_tool_calls"] = False
    left = r.budget_left
    if left is not None:
        body["max_completion_tokens" if config.official else "max_tokens"] = max(1, left)
    fmt = ctx.format
    if fmt.type == "json_object":
        body["response_format"] = {"type": "json_object"}
    elif fmt.type == "json_schema":
        schema: dict[str, Any] = {"name": fmt.name or "response", "schema": dict(fmt.schema or {})}
        body["response_format"] = {"type": "json_schema", "json_schema": schema}
        if fmt.strict:
            schema["strict"] = True
    req = r.request
    if req is not None:
        for key in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
            value = getattr(req, key)
            if value is not None:
                body[key] = value
        if req.reasoning and req.reasoning.get("effort"):
            body["reasoning_effort"] = req.reasoning["effort"]
        if req.prompt_cache_key:
            body["prompt_cache_key"] = req.prompt_cache_key
    return body


@attrs.define
class ChatStream:
    """Chunks in, pieces out. `chunk` takes one parsed `chat.completion.chunk` (or an `error`
    object); `end` gives the step's last pieces once the stream is over."""

    open: str = ""  # the item being streamed: "reasoning", "text", "refusal", "call", ""
    call: int | None = None  # the tool-call index being streamed
    seen: set[int] = attrs.field(factory=set)
    finish: str | None = None
    usage: dict[str, Any] | None = None
    produced: list[str] = attrs.field(factory=list)  # every delta, for a usage estimate
    declared: Collection[str] | None = None  # the request's function tools (None: any)
    hosted: Mapping[str, Maker] = attrs.field(factory=dict)  # functions rollout runs, by name
    held: list[p.Piece] = attrs.field(factory=list)  # hosted calls, streamed last in the step
    _hosted_call: list[str] | None = None  # the open hosted call: its name, its argument text

    def undeclared(self, name: object) -> p.Failed | None:
        """A failure for a call of a tool the request never declared (the real API never
        returns one), else None."""
        if self.declared is None or name in self.declared:
            return None
        return p.Failed("server_error", undeclared_call(str(name)))

    def chunk(self, data: dict[str, Any]) -> list[p.Piece]:
        error = data.get("error")
        if error is not None:
            e = error if isinstance(error, dict) else {"message": str(error)}
            code = str(e.get("code") or "server_error")
            return [p.Failed(code, str(e.get("message") or "The upstream engine failed."))]
        if isinstance(data.get("usage"), dict):
            self.usage = data["usage"]
        out: list[p.Piece] = []
        for choice in data.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                self._into("reasoning", out, p.ReasoningStart())
                out.append(p.Thought(0, reasoning))
                self.produced.append(reasoning)
            for kind in ("content", "refusal"):
                text = delta.get(kind)
                if isinstance(text, str) and text:
                    opener = p.MessageStart(refusal=kind == "refusal")
                    self._into("text" if kind == "content" else "refusal", out, opener)
                    out.append(p.Text(p.Deltas.unbilled(text)))
                    self.produced.append(text)
            for call in delta.get("tool_calls") or ():
                failed = self._call(call, out)
                if failed is not None:
                    return [failed]
            if choice.get("finish_reason"):
                self.finish = str(choice["finish_reason"])
        return out

    def plain_text(self, data: dict[str, Any]) -> str | None:
        """The text of a chunk that only continues the open message (no usage, no finish, no
        other delta): what `chunk` would make one Text piece of; else None (use `chunk`)."""
        if self.open != "text" or data.get("error") is not None or data.get("usage") is not None:
            return None
        choices = data.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("index", 0) != 0 or choice.get("finish_reason"):
            return None
        delta = choice.get("delta")
        if type(delta) is not dict:
            return None
        text = delta.get("content")
        if type(text) is not str or not text:
            return None
        for other in ("reasoning_content", "reasoning", "refusal", "tool_calls"):
            if delta.get(other):
                return None
        self.produced.append(text)
        return text

    def _into(self, kind: str, out: list[p.Piece], opener: p.Piece) -> None:
        if self.open != kind:
            self._close_hosted()
            self.open, self.call = kind, None
            out.append(opener)

    def _call(self, call: Any, out: list[p.Piece]) -> p.Failed | None:
        if not isinstance(call, dict):
            return None
        index = call.get("index", 0)
        function = call.get("function") or {}
        if index != self.call or self.open != "call":
            if index in self.seen:
                return p.Failed(
                    "server_error",
                    "The upstream engine interleaved the deltas of two tool calls; rollout "
                    "streams calls one after another.",
                )
            name = function.get("name")
            self._close_hosted()
            self.seen.add(index)
            self.open, self.call = "call", index
            if name in self.hosted:
                self._hosted_call = [str(name)]
            elif (undeclared := self.undeclared(name)) is not None:
                return undeclared
            else:
                out.append(p.CallStart(str(name or ""), call.get("id") or None))
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            self.produced.append(arguments)
            if self._hosted_call is not None:
                self._hosted_call.append(arguments)
            else:
                out.append(p.Args(p.Deltas.unbilled(arguments)))
        return None

    def _close_hosted(self) -> None:
        if self._hosted_call is not None:
            name, *arguments = self._hosted_call
            self.held.append(self.hosted[name]("".join(arguments)))
            self._hosted_call = None

    def end(self, prompt_tokens: int, count: Any) -> list[p.Piece]:
        """The step's usage (the engine's; else `prompt_tokens` and `count` of what it
        streamed, rollout's tokenizer) and how it finished."""
        u = self.usage
        if u is None:
            usage = p.Usage(prompt_tokens, 0, sum(count(t) for t in self.produced))
        else:
            prompt_details = u.get("prompt_tokens_details") or {}
            output_details = u.get("completion_tokens_details") or {}
            usage = p.Usage(
                int(u.get("prompt_tokens") or 0),
                int(prompt_details.get("cached_tokens") or 0),
                int(u.get("completion_tokens") or 0),
                int(output_details.get("reasoning_tokens") or 0),
            )
        if self.finish is None:  # cut short: what came is not the whole answer
            return [p.Failed("server_error", CUT_SHORT)]
        self._close_hosted()
        return [*self.held, usage, p.Finish(FINISH.get(self.finish, self.finish))]


def as_chunk(completion: dict[str, Any]) -> dict[str, Any]:
    """A whole (non-streamed) chat completion as the one chunk that streams it: each choice's
    message as its delta (tool calls numbered), its finish reason and the usage."""
    choices = []
    for choice in completion.get("choices") or ():
        message = dict(choice.get("message") or {})
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            message["tool_calls"] = [{**call, "index": i} for i, call in enumerate(calls)]
        choices.append({**choice, "delta": message})
    return {**completion, "choices": choices}
