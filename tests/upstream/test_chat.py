# The upstream dialects without a server: a context rendered as chat messages and as stateless
# Responses input, the request knobs each carries, streamed chunks and events into pieces
# (reasoning, refusals, interleaved calls, missing usage, finish reasons, errors), and an
# engine's error replies mapped onto the documented codes.
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import codec
from protocol.choices import ToolChoice
from protocol.items import Message
from rollout.conversation.calls import Citation
from rollout.conversation.context import Context
from rollout.conversation.work import Work
from rollout.engine.engine import Engine
from rollout.model import pieces as p
from rollout.upstream import chat, responses
from rollout.upstream.pool import refusal
from rollout.upstream.target import UpstreamConfig
from support import strategies

CONFIG = UpstreamConfig(url="http://127.0.0.1:9/v1")
TOOL = {"type": "function", "name": "f", "parameters": {"type": "object"}}


async def rollout_for(body: dict[str, Any]) -> Any:
    async def emit(event: Any) -> None:
        del event

    prepared = await Engine().prepare(codec.decode_create({"model": "m", **body}), Work(), emit)
    return prepared.rollout


HISTORY = [
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "Calling."},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "function_call", "call_id": "c2", "name": "f", "arguments": '{"a":1}'},
    {"type": "function_call_output", "call_id": "c1", "output": "one"},
    {"type": "function_call_output", "call_id": "c2", "output": "two"},
]


async def test_chat_messages_of_a_context() -> None:
    r = await rollout_for({"instructions": "You help.", "input": HISTORY, "tools": [TOOL]})
    sent = chat.messages(r.ctx)
    assert [m["role"] for m in sent] == ["system", "system", "user", "assistant", "tool", "tool"]
    assistant = sent[3]
    assert assistant["content"] == "Calling."
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2"]
    assert sent[5] == {"role": "tool", "tool_call_id": "c2", "content": "two"}


async def test_a_growing_context_renders_its_new_items_only() -> None:
    """Messages remembered per context: after each extension they are what a fresh rendering
    of the same items gives, and the earlier result is not changed (a call joining the last
    assistant message replaces it)."""
    r = await rollout_for({"instructions": "You help.", "input": HISTORY[:3], "tools": [TOOL]})
    ctx = r.ctx
    first = chat.messages(ctx)
    kept = [dict(m) for m in first]
    for item in HISTORY[3:]:
        ctx.extend(codec.decode_create({"model": "m", "input": [item]}).input, Work())
        fresh = Context(instructions=ctx.instructions, items=list(ctx.items))
        assert chat.messages(ctx) == chat.messages(fresh)
    assert first == kept
    assert chat.messages(ctx)[3]["tool_calls"][1]["id"] == "c2"


async def test_chat_request_knobs() -> None:
    r = await rollout_for(
        {
            "input": "hi",
            "tools": [TOOL],
            "tool_choice": {"type": "function", "name": "f"},
            "parallel_tool_calls": False,
            "max_output_tokens": 50,
            "temperature": 0.2,
            "text": {
                "format": {"type": "json_schema", "name": "out", "schema": {}, "strict": True}
            },
            "reasoning": {"effort": "low"},
        }
    )
    body = chat.request(r, CONFIG)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert body["parallel_tool_calls"] is False and body["max_tokens"] == 50
    assert body["temperature"] == 0.2 and body["reasoning_effort"] == "low"
    assert body["response_format"]["json_schema"] == {"name": "out", "schema": {}, "strict": True}
    official = UpstreamConfig(url="https://api.openai.com/v1")
    assert chat.request(r, official)["max_completion_tokens"] == 50
    r.ctx.response_steps = 1  # a forced call binds the first step only
    assert chat.request(r, CONFIG)["tool_choice"] == "auto"


def test_tool_choice_after_max_tool_calls_is_none() -> None:
    ctx = Context(choice=ToolChoice(max_calls=2))
    ctx.response_calls = 2
    assert chat.tool_choice(ctx) == "none"


def test_chat_chunks_to_pieces() -> None:
    stream = chat.ChatStream()
    got: list[p.Piece] = []
    for delta in (
        {"role": "assistant", "reasoning_content": "think"},
        {"content": "Hi"},
        {"tool_calls": [{"index": 0, "id": "call_x", "function": {"name": "f", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
    ):
        got += stream.chunk({"choices": [{"index": 0, "delta": delta}]})
    got += stream.chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert got == [
        p.ReasoningStart(),
        p.Thought(0, "think"),
        p.MessageStart(),
        p.Text(p.Deltas.unbilled("Hi")),
        p.CallStart("f", "call_x"),
        p.Args(p.Deltas.unbilled("{}")),
    ]
    usage, finish = stream.end(100, len)  # no usage reported: rollout counts
    assert usage == p.Usage(100, 0, len("think") + len("Hi") + len("{}"))
    assert finish == p.Finish("stop")


def test_chat_usage_refusals_errors_and_interleaving() -> None:
    stream = chat.ChatStream()
    assert stream.chunk({"choices": [{"delta": {"refusal": "No."}}]}) == [
        p.MessageStart(refusal=True),
        p.Text(p.Deltas.unbilled("No.")),
    ]
    stream.chunk({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}})
    stream.chunk({"choices": [{"delta": {}, "finish_reason": "length"}]})
    assert stream.end(0, len) == [p.Usage(9, 0, 2), p.Finish("length")]
    (failed,) = chat.ChatStream().chunk({"error": {"message": "boom", "code": "overloaded"}})
    assert failed == p.Failed("overloaded", "boom")
    interleaved = chat.ChatStream()
    for index in (0, 1, 0):
        out = interleaved.chunk(
            {"choices": [{"delta": {"tool_calls": [{"index": index, "function": {"name": "f"}}]}}]}
        )
    assert isinstance(out[0], p.Failed)


async def test_responses_input_is_stateless() -> None:
    r = await rollout_for({"input": HISTORY, "tools": [TOOL]})
    items = responses.input_items(r)
    assert all("id" not in item for item in items)
    assert [i.get("type") for i in items][-2:] == ["function_call_output"] * 2
    body = responses.request(r, CONFIG)
    assert body["store"] is False and body["stream"] is True
    assert body["tools"] == [{"type": "function", "name": "f", "parameters": {"type": "object"}}]


def test_responses_events_to_pieces() -> None:
    stream = responses.ResponsesStream()
    item = {"type": "function_call", "name": "f", "call_id": "call_1"}
    assert stream.event({"type": "response.output_item.added", "item": item}) == [
        p.CallStart("f", "call_1")
    ]
    usage = {"input_tokens": 7, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 4}}
    incomplete = {"incomplete_details": {"reason": "content_filter"}, "usage": usage}
    assert stream.event({"type": "response.incomplete", "response": incomplete}) == [
        p.Usage(7, 4, 3),
        p.Finish("content_filter"),
    ]
    failed = {"error": {"code": "server_error", "message": "down"}}
    assert responses.ResponsesStream().event({"type": "response.failed", "response": failed}) == [
        p.Failed("server_error", "down")
    ]


def test_a_chat_stream_without_a_finish_reason_was_cut_short() -> None:
    stream = chat.ChatStream()
    stream.chunk({"choices": [{"index": 0, "delta": {"content": "The first half"}}]})
    assert stream.end(10, len) == [p.Failed("server_error", chat.CUT_SHORT)]


def test_a_whole_chat_completion_reads_as_its_one_chunk() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    message = {"role": "assistant", "content": "Done.", "tool_calls": [call]}
    completion = {
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3},
    }
    stream = chat.ChatStream()
    assert stream.chunk(chat.as_chunk(completion)) == [
        p.MessageStart(),
        p.Text(p.Deltas.unbilled("Done.")),
        p.CallStart("f", "call_1"),
        p.Args(p.Deltas.unbilled("{}")),
    ]
    assert stream.end(0, len) == [p.Usage(5, 0, 3), p.Finish("stop")]


def test_a_whole_response_reads_as_its_events() -> None:
    whole = {
        "status": "completed",
        "output": [
            {"type": "message", "content": [{"type": "output_text", "text": "Hi."}]},
            {"type": "function_call", "name": "f", "call_id": "call_1", "arguments": "{}"},
        ],
        "usage": {"input_tokens": 4, "output_tokens": 2},
    }
    stream = responses.ResponsesStream()
    got = [piece for event in responses.events_of(whole) for piece in stream.event(event)]
    assert got == [
        p.MessageStart(),
        p.Text(p.Deltas.unbilled("Hi.")),
        p.CallStart("f", "call_1"),
        p.Args(p.Deltas.unbilled("{}")),
        p.Usage(4, 0, 2),
        p.Finish("stop"),
    ]
    assert stream.done


def test_a_call_of_an_undeclared_tool_fails_the_step() -> None:
    stream = chat.ChatStream(declared={"f"})
    declared = {"index": 0, "function": {"name": "f", "arguments": "{}"}}
    assert stream.chunk({"choices": [{"delta": {"tool_calls": [declared]}}]})[0] == p.CallStart("f")
    other = {"index": 1, "function": {"name": "rm_rf", "arguments": "{}"}}
    (failed,) = stream.chunk({"choices": [{"delta": {"tool_calls": [other]}}]})
    assert failed == p.Failed("server_error", chat.undeclared_call("rm_rf"))
    item = {"type": "function_call", "name": "rm_rf", "call_id": "call_1"}
    added = {"type": "response.output_item.added", "item": item}
    assert responses.ResponsesStream(declared={"f"}).event(added) == [failed]


def test_error_replies_map_to_the_documented_codes() -> None:
    limited = refusal(429, {"retry-after": "7", "x-ratelimit-remaining-requests": "0"}, b"{}")
    assert (limited.status, limited.code) == (429, "rate_limit_exceeded")
    assert limited.headers == {"retry-after": "7", "x-ratelimit-remaining-requests": "0"}
    crashed = refusal(503, {}, b"upstream connect error")
    assert (crashed.status, crashed.code, crashed.type) == (500, "server_error", "server_error")
    assert "upstream connect error" in crashed.message
    bad = refusal(400, {}, b'{"error": {"message": "too long", "code": "context_length_exceeded"}}')
    assert (bad.status, bad.code, bad.message) == (400, "context_length_exceeded", "too long")
    keyless = refusal(401, {}, b'{"error": {"message": "bad key"}}')
    assert keyless.status == 500  # the server's upstream key, not the client's


async def test_responses_request_sends_only_the_apis_own_fields() -> None:
    """What a lenient rollout accepted beyond the API's fields of `reasoning`, `text` and its
    format stays rollout's; `max_tool_calls` is what is left of it (none once spent)."""
    r = await rollout_for(
        {
            "input": "hi",
            "tools": [TOOL],
            "max_tool_calls": 3,
            "reasoning": {"effort": "low", "x": 1},
            "text": {
                "verbosity": "low",
                "bogus": True,
                "format": {"type": "json_schema", "name": "o", "schema": {}, "extra": 1},
            },
        }
    )
    body = responses.request(r, CONFIG)
    assert body["reasoning"] == {"effort": "low"}
    assert body["text"] == {
        "verbosity": "low",
        "format": {"type": "json_schema", "name": "o", "schema": {}},
    }
    assert body["max_tool_calls"] == 3
    r.ctx.response_calls = 2
    assert responses.request(r, CONFIG)["max_tool_calls"] == 1
    r.ctx.response_calls = 3
    spent = responses.request(r, CONFIG)
    assert "max_tool_calls" not in spent and spent["tool_choice"] == "none"


def test_an_engines_url_citation_is_a_cited_piece() -> None:
    """A URL citation streamed (or in a whole answer's text part) cites the open message; the
    engine's file annotations are not rollout's to place."""
    cited = {"type": "url_citation", "url": "https://x.test/", "title": "X"}
    cited |= {"start_index": 0, "end_index": 3}
    event = {"type": "response.output_text.annotation.added", "annotation": cited}
    want = p.Cited(Citation(url="https://x.test/", title="X", start_index=0, end_index=3))
    assert responses.ResponsesStream().event(event) == [want]
    files = {"type": "file_citation", "file_id": "f", "index": 0, "filename": "a"}
    assert responses.ResponsesStream().event({**event, "annotation": files}) == []
    part = {"type": "output_text", "text": "Hi.", "annotations": [cited]}
    whole = {"status": "completed", "output": [{"type": "message", "content": [part]}]}
    stream = responses.ResponsesStream()
    got = [piece for e in responses.events_of(whole) for piece in stream.event(e)]
    assert got[:3] == [p.MessageStart(), p.Text(p.Deltas.unbilled("Hi.")), want]


@settings(max_examples=60, deadline=None)
@given(st.lists(strategies.messages | strategies.function_call_outputs, max_size=5))
def test_messages_are_rendered_as_the_general_path_renders_them(items: list[Any]) -> None:
    # A message is rendered at once (its role, the text of its one text part); any content
    # gives what `_content` makes of it.
    ctx = Context(items=[i for i in items if type(i) is Message])
    expected = [
        {"role": "system" if m.role == "developer" else m.role, "content": chat._content(m)}
        for m in ctx.items
        if isinstance(m, Message)
    ]
    assert chat.messages(ctx) == expected
