"""Print the wire transcripts of the four ways a rollout pauses and resumes: frames in (>) and out
(<), over real sockets against an in-process server with a scripted model.

    python examples/pause_resume_transcripts.py            # all four
    python examples/pause_resume_transcripts.py steer      # or append, inject, steer-pending, async

- append: this project's shape; `response.done` pauses, `response.inject` (the official name of
  `response.append`) resumes, acknowledged by `response.inject.created`.
- inject: a multi-agent response (`multi_agent: {"enabled": true}`, header
  `OpenAI-Beta: responses_multi_agent=v1`) waits for the client's output without a pause event.
- steer: `response.steer` while the model thinks; the response ends `incomplete` (`steered`) and
  an automatic successor continues with the steering input.
- steer-pending: `response.steer` while the response stops for a client call:
  `response.steer.pending` after `response.completed`; the client's continuation takes the input.
- async: an `async: true` tool over HTTP; the model does not wait for it, the next request omits
  its output, a later one brings it on the original call_id.

Frames are shown compacted so each fits a line: ids cut to 6 hex digits, a response snapshot
as its id, status, previous_response_id, incomplete_details and output, an item as its type, name,
call_id, arguments (or text) and `async`, and a run of deltas as one line with their text. The
sequence numbers, event types and order are exactly what crossed the wire.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

import orjson
import trio
from trio_websocket import WebSocketConnection, open_websocket_url

import rollout
from rollout import CallStep, Context, FunctionCallSpec, HttpClient, TextStep

EXEC = {
    "type": "function",
    "name": "exec",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
}
LOOKUP = {**EXEC, "name": "lookup", "async": True}
STEER = "Answer in one word."
THINK = "Start CI, then think."


def model(ctx: Context) -> CallStep | TextStep:
    """The scripted model: the async lookup first when it is offered (the model does not wait
    for it), then exec, then the answer; "think" makes it think before answering (a steer cuts
    that short); a steering input gets its own answer."""
    called = set(ctx.call_names.values())
    if ctx.last_user_text == STEER:
        return TextStep(text="Green.")
    if ctx.is_async("lookup") and "lookup" not in called:
        return CallStep(calls=(FunctionCallSpec(name="lookup", arguments='{"cmd":"ci"}'),))
    if ctx.last_user_text == THINK:
        return TextStep(text="Let me think about the build.", delay_s=30)
    if "exec" not in called:
        return CallStep(calls=(FunctionCallSpec(name="exec", arguments='{"cmd":"make"}'),))
    return TextStep(text="Waiting for CI." if ctx.async_calls else "The build is green.")


_ID = re.compile(r"\b(resp|fc|call|msg|steer)_([0-9a-f]{6})[0-9a-f]+")
_DELTAS = ("response.output_text.delta", "response.function_call_arguments.delta")
_run: list[dict[str, Any]] = []  # deltas not yet printed


def item(value: dict[str, Any]) -> dict[str, Any]:
    keep = ("type", "name", "call_id", "arguments", "output", "status", "async")
    out = {k: value[k] for k in keep if k in value and value[k] is not None}
    if value.get("type") == "message" and value.get("content"):
        out["text"] = "".join(p.get("text", "") for p in value["content"])
    return out


def response(value: dict[str, Any]) -> dict[str, Any]:
    keep = ("id", "status", "previous_response_id", "incomplete_details")
    out = {k: value[k] for k in keep if value.get(k) is not None}
    return {**out, "output": [item(i) for i in value.get("output", [])]}


def compact(frame: dict[str, Any]) -> dict[str, Any]:
    if "object" in frame and frame.get("object") == "response":
        return response(frame)
    out = dict(frame)
    if isinstance(out.get("response"), dict):
        out["response"] = response(out["response"])
    if isinstance(out.get("item"), dict):
        out["item"] = item(out["item"])
    if isinstance(out.get("input"), list):
        out["input"] = [item(i) if "call_id" in i else i for i in out["input"]]
    if isinstance(out.get("tools"), list):
        out["tools"] = [
            {k: t[k] for k in ("type", "name", "async") if k in t} for t in out["tools"]
        ]
    for key in ("part", "logprobs", "item_id", "output_index", "content_index"):
        out.pop(key, None)
    return out


def flush() -> None:
    if _run:
        first, last = _run[0]["sequence_number"], _run[-1]["sequence_number"]
        text = "".join(f["delta"] for f in _run)
        print(f"< {len(_run)} x {_run[0]['type']} ({first}-{last}): {orjson.dumps(text).decode()}")
        _run.clear()


def show(direction: str, frame: Any) -> None:
    if direction == "<" and frame.get("type") in _DELTAS:
        if _run and _run[-1]["type"] != frame["type"]:
            flush()
        _run.append(frame)
        return
    flush()
    print(direction, _ID.sub(r"\1_\2", orjson.dumps(compact(frame)).decode()))


async def send(ws: WebSocketConnection, frame: dict[str, Any]) -> None:
    show(">", frame)
    await ws.send_message(orjson.dumps(frame).decode())


async def frames(ws: WebSocketConnection, until: str) -> dict[str, Any]:
    """Print frames up to (and including) one of type `until`."""
    while True:
        frame = orjson.loads(await ws.get_message())
        show("<", frame)
        if frame["type"] in (until, "error"):
            return frame


def out(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


async def append(port: int) -> None:
    async with open_websocket_url(f"ws://127.0.0.1:{port}/v1/responses") as ws:
        create = {"model": "sim-1", "store": False, "input": "Build it.", "tools": [EXEC]}
        await send(ws, {"type": "response.create", "shape": "append", **create})
        pause = await frames(ws, "response.done")
        call = pause["pending_calls"][0]["call_id"]
        inject = {"type": "response.inject", "response_id": pause["response_id"]}
        await send(ws, {**inject, "input": [out(call, "ok")]})
        await frames(ws, "response.completed")


async def inject(port: int) -> None:
    url = f"ws://127.0.0.1:{port}/v1/responses"
    beta = [(b"openai-beta", b"responses_multi_agent=v1")]
    async with open_websocket_url(url, extra_headers=beta) as ws:
        create = {"model": "sim-1", "store": False, "input": "Build it.", "tools": [EXEC]}
        await send(ws, {"type": "response.create", "multi_agent": {"enabled": True}, **create})
        created = await frames(ws, "response.created")
        done = await frames(ws, "response.output_item.done")
        inject = {"type": "response.inject", "response_id": created["response"]["id"]}
        await send(ws, {**inject, "input": [out(done["item"]["call_id"], "ok")]})
        await frames(ws, "response.completed")


async def steer(port: int) -> None:
    async with open_websocket_url(f"ws://127.0.0.1:{port}/v1/responses") as ws:
        create = {"model": "sim-1", "store": False, "input": THINK, "tools": [EXEC, LOOKUP]}
        await send(ws, {"type": "response.create", **create})
        created = await frames(ws, "response.created")
        await frames(ws, "response.output_item.done")  # the async lookup: the model goes on
        steer = {"type": "response.steer", "previous_response_id": created["response"]["id"]}
        await send(ws, {**steer, "input": STEER})
        await frames(ws, "response.incomplete")
        await frames(ws, "response.completed")


async def steer_pending(port: int) -> None:
    async with open_websocket_url(f"ws://127.0.0.1:{port}/v1/responses") as ws:
        create = {"model": "sim-1", "store": False, "input": "Build it.", "tools": [EXEC]}
        await send(ws, {"type": "response.create", **create})
        created = await frames(ws, "response.created")
        rid = created["response"]["id"]
        done = await frames(ws, "response.output_item.done")  # a client call: the response stops
        await send(ws, {"type": "response.steer", "previous_response_id": rid, "input": STEER})
        await frames(ws, "response.steer.pending")
        more = {"previous_response_id": rid, "input": [out(done["item"]["call_id"], "ok")]}
        await send(ws, {"type": "response.create", **create, **more})  # the steer goes first
        await frames(ws, "response.completed")


async def async_tool(port: int) -> None:
    async with HttpClient(f"http://127.0.0.1:{port}/v1") as http:
        body = {"model": "sim-1", "input": "Build it.", "tools": [EXEC, LOOKUP]}
        show("> POST /v1/responses", body)
        first = await http.json("POST", "/responses", body)
        show("<", first)
        lookup, exec_call = first["output"][0], first["output"][1]
        second_body = {**body, "previous_response_id": first["id"]}
        second_body["input"] = [out(exec_call["call_id"], "ok")]  # no output for the lookup yet
        show("> POST /v1/responses", second_body)
        second = await http.json("POST", "/responses", second_body)
        show("<", second)
        third_body = {**body, "previous_response_id": second["id"]}
        third_body["input"] = [out(lookup["call_id"], "CI passed")]  # later, same call_id
        show("> POST /v1/responses", third_body)
        show("<", await http.json("POST", "/responses", third_body))


SHAPES = {
    "append": append,
    "inject": inject,
    "steer": steer,
    "steer-pending": steer_pending,
    "async": async_tool,
}


async def main(names: list[str]) -> None:
    engine = rollout.Engine(policy=rollout.ScriptedPolicy(model))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, engine))
        for name in names:
            print(f"--- {name}")
            with trio.fail_after(20):
                await SHAPES[name](port)
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    chosen = sys.argv[1:] or list(SHAPES)
    unknown = [n for n in chosen if n not in SHAPES]
    if unknown:
        sys.exit(f"unknown transcript {unknown[0]!r}; choose from {', '.join(SHAPES)}")
    trio.run(main, chosen)
