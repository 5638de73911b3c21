# The Responses dialect of an upstream engine (OpenAI's API, or an engine that serves
# /v1/responses). rollout keeps the state, so each step forwards the whole context as a stateless
# request (`store: false`, the items without rollout's ids, function tools, the request's
# knobs, only by the API's own names: what a lenient rollout accepted beyond them stays
# rollout's); `ResponsesStream` turns the engine's streamed events into the loop's pieces (URL
# citations included). What the
# engine lacks, rollout adds around it: WebSocket mode, the connection cache, the append shape.
# Pure: no I/O. The engine's hosted tools are not used: the request's are offered to it as
# functions, and rollout runs them (rollout.upstream.hosted).
from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import attrs

from protocol import codec
from protocol.agentitems import AGENT_ITEMS
from protocol.items import FunctionCall, FunctionCallOutput, Message
from rollout.conversation.calls import Citation
from rollout.engine.loop import Rollout
from rollout.model import pieces as p
from rollout.upstream import chat, hosted
from rollout.upstream.hosted import Maker
from rollout.upstream.target import UpstreamConfig

#: The fields the API knows of `reasoning`, `text` and `text.format` (openai's
#: shared_params/reasoning.py, responses/response_text_config_param.py and
#: response_format_text_json_schema_config_param.py): only these are forwarded.
REASONING_KEYS = ("context", "effort", "generate_summary", "mode", "summary")
TEXT_KEYS = ("format", "verbosity")
FORMAT_KEYS = ("type", "name", "schema", "strict", "description")


def input_items(r: Rollout) -> list[dict[str, Any]]:
    """The conversation as stateless input: messages, calls and outputs, without ids (they are
    rollout's, not the engine's) or agents; reasoning and hosted calls are rollout's own items."""
    out = []
    for item in r.ctx.items:
        if type(item) in AGENT_ITEMS:  # a multi-agent action's call or output, a message
            item = hosted.as_plain(item)
        if isinstance(item, Message | FunctionCall | FunctionCallOutput):
            value = codec.to_json(item)
            value.pop("id", None)
            value.pop("agent", None)  # (a multi-agent response's: the beta's field, not the API's)
            out.append(value)
        elif (shown := hosted.as_call(item, r.ctx)) is not None:  # a hosted call, as its function's
            call_id, name, arguments, output = shown
            call = {"type": "function_call", "call_id": call_id, "name": name}
            out.append({**call, "arguments": arguments})
            out.append({"type": "function_call_output", "call_id": call_id, "output": output})
    return out


def tool_choice(r: Rollout) -> str | dict[str, Any]:
    choice = chat.tool_choice(r.ctx)
    if isinstance(choice, dict):
        return {"type": "function", "name": choice["function"]["name"]}
    return choice


def request(r: Rollout, config: UpstreamConfig) -> dict[str, Any]:
    """The streamed Responses request for the rollout's next step."""
    body: dict[str, Any] = {
        "model": config.model_for(r.stream.response.model),
        "input": input_items(r),
        "stream": True,
        "store": False,
    }
    instructions = hosted.instructions(r.ctx)
    if instructions:
        body["instructions"] = instructions
    offered = [t["function"] for t in chat.tools(r.ctx)]
    if offered:
        body["tools"] = [{"type": "function", **t} for t in offered]
        body["tool_choice"] = tool_choice(r)
        if not hosted.parallel(r.ctx):
            body["parallel_tool_calls"] = False
        max_calls = r.ctx.choice.max_calls
        if max_calls is not None:  # what is left of it, when it is not spent (then: none)
            left_calls = max_calls - r.ctx.response_calls
            if left_calls > 0:
                body["max_tool_calls"] = left_calls
    left = r.budget_left
    if left is not None:
        body["max_output_tokens"] = max(16, left) if config.official else max(1, left)
    req = r.request
    if req is not None:
        for key in ("temperature", "top_p", "prompt_cache_key"):
            value = getattr(req, key)
            if value is not None:
                body[key] = value
        if req.reasoning is not None:
            body["reasoning"] = _known(req.reasoning, REASONING_KEYS)
        if req.text is not None:
            text = _known(req.text, TEXT_KEYS)
            if isinstance(text.get("format"), dict):
                text["format"] = _known(text["format"], FORMAT_KEYS)
            body["text"] = text
    return body


def _known(value: dict[str, Any], keys: Collection[str]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k in keys}


@attrs.define
class ResponsesStream:
    """The engine's Responses events in, pieces out; `end` closes a stream that stopped
    without a terminal event (a broken one)."""

    done: bool = False
    declared: Collection[str] | None = None  # the request's function tools (None: any)
    hosted: Mapping[str, Maker] = attrs.field(factory=dict)  # functions rollout runs, by name
    held: list[p.Piece] = attrs.field(factory=list)  # hosted calls, streamed last in the step
    _hosted_call: list[str] | None = None  # the open hosted call: its name, its argument text

    def event(self, data: dict[str, Any]) -> list[p.Piece]:
        kind = data.get("type")
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            return [p.Text(p.Deltas.unbilled(str(data.get("delta", ""))))]
        if kind == "response.function_call_arguments.delta":
            if self._hosted_call is not None:
                self._hosted_call.append(str(data.get("delta", "")))
                return []
            return [p.Args(p.Deltas.unbilled(str(data.get("delta", ""))))]
        if kind == "response.reasoning_summary_text.delta":
            return [p.Summary(p.Deltas.unbilled(str(data.get("delta", ""))))]
        if kind == "response.reasoning_text.delta":
            return [p.Thought(0, str(data.get("delta", "")))]
        if kind == "response.output_text.annotation.added":
            return _cited(data.get("annotation"))
        if kind == "response.content_part.added":
            part = data.get("part") or {}
            return [p.MessageStart(refusal=part.get("type") == "refusal")]
        item = data.get("item") or {}
        if kind == "response.output_item.added":
            if item.get("type") == "function_call":
                name = str(item.get("name", ""))
                if name in self.hosted:
                    self._hosted_call = [name]
                    return []
                if self.declared is not None and name not in self.declared:
                    return [p.Failed("server_error", chat.undeclared_call(name))]
                return [p.CallStart(name, item.get("call_id") or None)]
            if item.get("type") == "reasoning":
                return [p.ReasoningStart()]
            return []
        if kind == "response.output_item.done" and item.get("type") == "reasoning":
            return [p.ReasoningEnd()]
        if kind == "response.output_item.done" and self._hosted_call is not None:
            name, *deltas = self._hosted_call
            self._hosted_call = None
            arguments = str(item.get("arguments") or "".join(deltas))
            self.held.append(self.hosted[name](arguments))
            return []
        if kind in ("response.completed", "response.incomplete"):
            self.done = True
            response = data.get("response") or {}
            details = response.get("incomplete_details") or {}
            reason = details.get("reason")
            finish = "stop" if kind == "response.completed" else "length"
            if reason == "content_filter":
                finish = "content_filter"
            return [*self.held, _usage(response.get("usage") or {}), p.Finish(finish)]
        if kind in ("response.failed", "error"):
            self.done = True
            error = (data.get("response") or {}).get("error") if kind != "error" else data
            error = error.get("error", error) if isinstance(error, dict) else {}
            code = str(error.get("code") or "server_error")
            return [p.Failed(code, str(error.get("message") or "The upstream engine failed."))]
        return []


def events_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    """A whole (non-streamed) Response as the events that would have streamed it: each output
    item's start and text or arguments, then its terminal event (by its status)."""
    out: list[dict[str, Any]] = []
    for item in response.get("output") or ():
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or ():
                out.append({"type": "response.content_part.added", "part": part})
                text = part.get("text") if part.get("type") == "output_text" else None
                text = part.get("refusal") if part.get("type") == "refusal" else text
                out.append({"type": "response.output_text.delta", "delta": text or ""})
                for annotation in part.get("annotations") or ():
                    event = "response.output_text.annotation.added"
                    out.append({"type": event, "annotation": annotation})
        elif kind == "function_call":
            out.append({"type": "response.output_item.added", "item": item})
            delta = item.get("arguments") or ""
            out.append({"type": "response.function_call_arguments.delta", "delta": delta})
            out.append({"type": "response.output_item.done", "item": item})
    status = response.get("status")
    if status == "failed":
        out.append({"type": "response.failed", "response": response})
    elif status in ("completed", "incomplete"):
        out.append({"type": f"response.{status}", "response": response})
    return out


def _cited(annotation: Any) -> list[p.Piece]:
    """A URL citation of the open message (the engine's other annotations name its files)."""
    if not isinstance(annotation, dict) or annotation.get("type") != "url_citation":
        return []
    citation = Citation(
        url=str(annotation["url"]),
        title=str(annotation.get("title") or ""),
        start_index=int(annotation["start_index"]),
        end_index=int(annotation["end_index"]),
    )
    return [p.Cited(citation)]


def _usage(u: dict[str, Any]) -> p.Usage:
    return p.Usage(
        int(u.get("input_tokens") or 0),
        int((u.get("input_tokens_details") or {}).get("cached_tokens") or 0),
        int(u.get("output_tokens") or 0),
        int((u.get("output_tokens_details") or {}).get("reasoning_tokens") or 0),
    )
