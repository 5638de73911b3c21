# Tool rollouts over HTTP with the official SDK: client function calls continued by
# previous_response_id (store) or by resending the full history (store=false), schema-valid
# arguments from the default model, parallel calls, and the hosted web search with citations.
from __future__ import annotations

import concurrent.futures
from typing import Any

import attrs
import jsonschema
import orjson
import pytest
from openai import OpenAI
from openai.types.responses import (
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
)

from rollout.conversation import tokens
from rollout.model.policy import DefaultPolicy, ScriptedPolicy, call, text
from rollout.testing.thread import ServerThread
from support.sdk import assert_event_class, function_calls
from support.tools import EXEC_TOOL, MODEL, function_tool

STEPS = 5
FINAL = "All five commands ran; the build is green."
SCRIPT = [*(call("exec", {"cmd": f"make step{i}", "n": i}) for i in range(STEPS)), text(FINAL)]
PROMPT = "Run the build steps one by one."


def tool_output(i: int) -> str:
    # long enough that the history visibly grows every turn
    return f"step {i} ok\n" + "log line of the build output\n" * 20


@attrs.define
class Rollout:
    calls: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    final: str = ""
    responses: list[Any] = attrs.field(factory=list)
    tokenize: list[int] = attrs.field(factory=list)  # tokens tokenized per turn
    scan: list[int] = attrs.field(factory=list)  # tokens scanned per turn
    input_tokens: list[int] = attrs.field(factory=list)


def counters(server: ServerThread) -> tuple[int, int]:
    counts = server.engine.stats.totals.counts
    return counts["tokenize"].tokens, counts["scan"].tokens


def run_rollout(
    server: ServerThread, client: OpenAI, *, chained: bool, stream: bool = False
) -> Rollout:
    """The client side of an agent loop: answer every call until the model answers in text.

    `stream`: each turn is an SSE create, and the turn's response is the one in the terminal
    `response.completed` event (what clients falling back from WebSocket to HTTP do)."""
    out = Rollout()
    history: list[Any] = [{"role": "user", "content": PROMPT}]
    new_input: list[Any] = list(history)
    previous: str | None = None
    for _turn in range(STEPS + 2):
        before = counters(server)
        if chained:
            args: dict[str, Any] = {"input": new_input, "previous_response_id": previous}
        else:
            args = {"input": history, "store": False}
        if stream:
            events = list(
                client.responses.create(model=MODEL, tools=[EXEC_TOOL], stream=True, **args)
            )
            assert events[-1].type == "response.completed"
            resp = events[-1].response
        else:
            resp = client.responses.create(model=MODEL, tools=[EXEC_TOOL], **args)
        after = counters(server)
        assert resp.status == "completed", resp.error
        out.responses.append(resp)
        out.tokenize.append(after[0] - before[0])
        out.scan.append(after[1] - before[1])
        assert resp.usage is not None
        out.input_tokens.append(resp.usage.input_tokens)
        calls = function_calls(resp)
        if not calls:
            out.final = resp.output_text
            return out
        outputs: list[Any] = []
        for c in calls:
            out.calls.append((c.name, orjson.loads(c.arguments)))
            output = tool_output(len(out.calls) - 1)
            outputs.append({"type": "function_call_output", "call_id": c.call_id, "output": output})
        history += [item.model_dump(exclude_none=True) for item in resp.output]
        history += outputs
        new_input = outputs
        previous = resp.id
    raise AssertionError("the model never answered in text")


EXPECTED_CALLS = [("exec", {"cmd": f"make step{i}", "n": i}) for i in range(STEPS)]


def test_chained_rollout_sends_only_tool_outputs(serve) -> None:
    server, client = serve(policy=ScriptedPolicy(SCRIPT))
    r = run_rollout(server, client, chained=True)
    assert r.calls == EXPECTED_CALLS
    assert r.final == FINAL
    assert len(r.responses) == STEPS + 1
    for prev, resp in zip(r.responses, r.responses[1:], strict=False):
        assert resp.previous_response_id == prev.id
        # the stored input of a continued turn is just the tool output answering prev's call
        items = client.responses.input_items.list(resp.id).data
        [only] = items
        assert only.type == "function_call_output"
        assert only.call_id == function_calls(prev)[0].call_id
    # every call id is distinct and got answered
    call_ids = [function_calls(x)[0].call_id for x in r.responses[:-1]]
    assert len(set(call_ids)) == STEPS
    assert len(server.engine.store) == STEPS + 1
    # No connection cache over HTTP: each turn re-renders the stored history, so the work
    # grows with the conversation, and covers at least the whole prompt.
    assert all(b > a for a, b in zip(r.input_tokens, r.input_tokens[1:], strict=False))
    assert all(b > a for a, b in zip(r.tokenize, r.tokenize[1:], strict=False)), r.tokenize
    assert all(b > a for a, b in zip(r.scan, r.scan[1:], strict=False)), r.scan
    for work, prompt in zip(r.tokenize, r.input_tokens, strict=True):
        assert work >= prompt
    new_input_tokens = tokens.count(tool_output(STEPS - 1))
    assert r.tokenize[-1] > 3 * new_input_tokens


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_full_history_rollout_with_store_false(serve, stream: bool) -> None:
    server, client = serve(policy=ScriptedPolicy(SCRIPT))
    r = run_rollout(server, client, chained=False, stream=stream)
    assert r.calls == EXPECTED_CALLS
    assert r.final == FINAL
    assert len(server.engine.store) == 0
    assert all(resp.store is False for resp in r.responses)
    # the whole history is decoded, scanned and tokenized again on every turn
    assert all(b > a for a, b in zip(r.input_tokens, r.input_tokens[1:], strict=False))
    assert all(b > a for a, b in zip(r.tokenize, r.tokenize[1:], strict=False)), r.tokenize
    assert all(b > a for a, b in zip(r.scan, r.scan[1:], strict=False)), r.scan
    for work, prompt in zip(r.tokenize, r.input_tokens, strict=True):
        assert work >= prompt
    new_input_tokens = tokens.count(tool_output(STEPS - 1))
    assert r.tokenize[-1] > 3 * new_input_tokens


def test_chained_and_full_history_give_the_same_rollout(serve) -> None:
    s1, c1 = serve(policy=ScriptedPolicy(SCRIPT))
    s2, c2 = serve(policy=ScriptedPolicy(SCRIPT))
    chained = run_rollout(s1, c1, chained=True)
    full = run_rollout(s2, c2, chained=False)
    assert chained.calls == full.calls == EXPECTED_CALLS
    assert chained.final == full.final == FINAL

    # Same conversation, same prompt every turn: ids (random) never reach the prompt, and each
    # item is tokenized on its own, however the items were delivered.
    assert chained.input_tokens == full.input_tokens


def test_function_call_usage_counts_argument_tokens(serve) -> None:
    _, client = serve(policy=ScriptedPolicy(SCRIPT))
    resp = client.responses.create(model=MODEL, input=PROMPT, tools=[EXEC_TOOL])
    [fc] = function_calls(resp)
    assert fc.id.startswith("fc_") and fc.call_id.startswith("call_")
    assert fc.status == "completed"
    assert resp.output_text == ""
    assert resp.usage is not None
    assert resp.usage.output_tokens == tokens.count(fc.arguments)
    assert resp.usage.total_tokens == resp.usage.input_tokens + resp.usage.output_tokens


def test_streamed_function_call_events(serve) -> None:
    _, client = serve(policy=ScriptedPolicy(SCRIPT))
    events = list(
        client.responses.create(model=MODEL, input=PROMPT, tools=[EXEC_TOOL], stream=True)
    )
    for e in events:
        assert_event_class(e)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    kinds = [e.type for e in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-3:] == [
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert "response.content_part.added" not in kinds
    added = events[2]
    assert isinstance(added, ResponseOutputItemAddedEvent)
    assert added.item.type == "function_call" and added.item.name == "exec"
    deltas = [e for e in events if isinstance(e, ResponseFunctionCallArgumentsDeltaEvent)]
    done = events[-3]
    assert isinstance(done, ResponseFunctionCallArgumentsDoneEvent)
    args = "".join(d.delta for d in deltas)
    assert done.arguments == args
    assert orjson.loads(args) == {"cmd": "make step0", "n": 0}
    item_done = events[-2]
    assert isinstance(item_done, ResponseOutputItemDoneEvent)
    assert item_done.item.arguments == args and item_done.item.status == "completed"
    assert all(d.item_id == added.item.id for d in deltas)
    final = events[-1].response
    assert final.status == "completed"
    assert [o.type for o in final.output] == ["function_call"]


# -- the default model and JSON Schema tools ----------------------------------------------------

# The parameters schema of each tool, by tool name.
SCHEMAS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 2, "maxLength": 40},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
        },
        "required": ["city", "unit", "days"],
        "additionalProperties": False,
    },
    "search_files": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "pattern": "^[a-z]+\\.py$"},
            "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
            "options": {
                "type": "object",
                "properties": {
                    "case_sensitive": {"type": "boolean"},
                    "max_results": {"type": ["integer", "null"], "minimum": 0},
                },
                "required": ["case_sensitive"],
                "additionalProperties": False,
            },
            "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        },
        "required": ["pattern", "paths", "options"],
        "additionalProperties": False,
    },
    "set_mode": {
        "type": "object",
        "properties": {
            "mode": {"anyOf": [{"const": "fast"}, {"type": "integer", "multipleOf": 5}]},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True},
        },
        "required": ["mode"],
    },
}
EXTRA: dict[str, dict[str, Any]] = {
    "get_weather": {"description": "Weather for a city.", "strict": True},
}
SCHEMA_TOOLS = [
    function_tool(name, schema, **EXTRA.get(name, {})) for name, schema in SCHEMAS.items()
]


ALL_THREE = "Check the weather in Oslo, search the files and set the mode."


def test_default_policy_arguments_match_tool_schemas(serve) -> None:
    n = 6
    _, client = serve(policy=DefaultPolicy(tool_calls=n, seed=7))
    schemas = SCHEMAS
    resp = client.responses.create(model=MODEL, input=ALL_THREE, tools=SCHEMA_TOOLS)
    seen: list[str] = []
    for _ in range(n + 1):
        calls = function_calls(resp)
        if not calls:
            break
        outputs = []
        for c in calls:
            seen.append(c.name)
            args = orjson.loads(c.arguments)
            jsonschema.Draft202012Validator(schemas[c.name]).validate(args)
            outputs.append({"type": "function_call_output", "call_id": c.call_id, "output": "ok"})
        resp = client.responses.create(
            model=MODEL, input=outputs, tools=SCHEMA_TOOLS, previous_response_id=resp.id
        )
    # Each tool once: a second call would mean what the first meant.
    assert sorted(seen) == sorted(schemas)
    assert resp.status == "completed" and resp.output_text
    assert not function_calls(resp)


def test_parallel_calls_in_one_response(serve) -> None:
    _, client = serve(policy=DefaultPolicy(tool_calls=2, parallel=2))
    tools = SCHEMA_TOOLS[:2]
    prompt = "Check the weather in Oslo and search the files."
    resp = client.responses.create(model=MODEL, input=prompt, tools=tools)
    calls = function_calls(resp)
    # One sentence of commentary, then both calls, in one step.
    assert len(calls) == 2 and resp.output[0].type == "message"
    assert len(resp.output) == 3
    assert {c.name for c in calls} == {"get_weather", "search_files"}
    assert len({c.call_id for c in calls}) == 2
    assert resp.usage is not None
    said = tokens.count(resp.output_text)
    assert resp.usage.output_tokens == said + sum(tokens.count(c.arguments) for c in calls)
    outputs = [
        {"type": "function_call_output", "call_id": c.call_id, "output": f"result {i}"}
        for i, c in enumerate(calls)
    ]
    final = client.responses.create(
        model=MODEL, input=outputs, tools=tools, previous_response_id=resp.id
    )
    assert final.status == "completed" and final.output_text
    assert not function_calls(final)


# -- hosted web search --------------------------------------------------------------------------


def test_web_search_streamed_with_citations(client: OpenAI) -> None:
    events = list(
        client.responses.create(
            model=MODEL,
            input="latest trio release notes",
            tools=[{"type": "web_search"}],
            stream=True,
        )
    )
    for e in events:
        assert_event_class(e)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    kinds = [e.type for e in events]
    search = [
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
    ]
    assert [k for k in kinds if k.startswith("response.web_search_call.")] == search
    i = kinds.index(search[0])
    assert kinds[i - 1] == "response.output_item.added"
    assert kinds[i + 3] == "response.output_item.done"
    ws_id = events[i - 1].item.id
    assert ws_id.startswith("ws_")
    assert all(events[i + k].item_id == ws_id for k in range(3))

    final = events[-1]
    assert final.type == "response.completed"
    ws, msg = final.response.output
    assert ws.type == "web_search_call" and ws.status == "completed" and ws.id == ws_id
    assert ws.action.type == "search" and ws.action.query
    urls = [s.url for s in ws.action.sources]
    assert urls and all(u.startswith("https://") for u in urls)

    assert msg.type == "message"
    part = msg.content[0]
    anns = part.annotations
    assert [a.url for a in anns] == urls
    for a in anns:
        assert a.type == "url_citation"
        assert part.text[a.start_index : a.end_index] == a.title
    added = [e for e in events if e.type == "response.output_text.annotation.added"]
    assert [e.annotation_index for e in added] == list(range(len(anns)))
    assert [e.annotation.url for e in added] == urls
    # each annotation arrives after the delta that completes the cited text
    deltas_before = [
        "".join(e.delta for e in events[: events.index(x)] if e.type.endswith("text.delta"))
        for x in added
    ]
    for a, prefix in zip(anns, deltas_before, strict=True):
        assert len(prefix) >= a.end_index


def test_web_search_non_streaming(client: OpenAI) -> None:
    resp = client.responses.create(
        model=MODEL, input="weather in Paris", tools=[{"type": "web_search"}]
    )
    assert [o.type for o in resp.output] == ["web_search_call", "message"]
    text_ = resp.output_text
    for a in resp.output[1].content[0].annotations:
        assert text_[a.start_index : a.end_index] == a.title


def test_concurrent_rollouts_on_one_client(serve) -> None:
    """Several agent loops at once through one (thread-safe) SDK client and its pool."""
    server, client = serve(policy=ScriptedPolicy(SCRIPT))
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        futures = [
            pool.submit(run_rollout, server, client, chained=i % 2 == 0, stream=i % 3 == 0)
            for i in range(6)
        ]
        results = [f.result(timeout=30) for f in futures]
    for r in results:
        assert r.calls == EXPECTED_CALLS
        assert r.final == FINAL
    assert len(server.engine.store) == 3 * (STEPS + 1)  # only the chained ones are stored
