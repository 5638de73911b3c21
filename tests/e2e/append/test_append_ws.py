# The append shape over WebSocket, frame by frame (append-protocol.md): one response id and one
# event numbering per rollout across pauses, the `response.done` pause event, parallel calls
# answered in several appends, every append error (the rollout stays resumable), appended user
# messages, hosted tools that never pause, cancel, the append timeout, and the lifetime of a
# rollout whose connection dropped (resume from a new connection, grace expiry, API-key owner).
from __future__ import annotations

from typing import Any

import pytest
import trio

from protocol.items import FunctionCallOutput
from rollout.conversation.context import Context
from rollout.model.policy import ScriptedPolicy, Step, call, search, text
from rollout.testing.plugin import RolloutServer
from support.events import TERMINAL, assert_contiguous, pending_ids, response_id_of, types
from support.frames import append_frame, cancel_frame, create_frame
from support.rawws import JsonWs, json_ws
from support.servers import SLOW, Served, serving
from support.tools import cmd, output, parallel, tool_script, tool_steps
from support.waits import wait_for

Server = RolloutServer | Served


async def start(ws: JsonWs, **extra: Any) -> tuple[str, list[dict[str, Any]]]:
    """Create an append rollout and read to its first pause (or end): (id, frames)."""
    await ws.send(create_frame(**extra))
    frames = await ws.to_pause_or_end()
    return response_id_of(frames[-1]), frames


async def finish(ws: JsonWs, rid: str, pause: dict[str, Any]) -> list[dict[str, Any]]:
    """Answer every pause with outputs until the terminal event; the frames after `pause`."""
    frames: list[dict[str, Any]] = []
    while pause["type"] == "response.done":
        await ws.send(append_frame(rid, [output(c) for c in pending_ids(pause)]))
        chunk = await ws.to_pause_or_end()
        frames += chunk
        pause = chunk[-1]
    return frames


async def refused_then_resumed(
    ws: JsonWs, rid: str, frames: list[dict[str, Any]], append: dict[str, Any]
) -> dict[str, Any]:
    """Send `append`, which must be refused with an `error` event; then the rollout (suspended at
    `frames[-1]`) still completes, numbered on from where it paused. Returns the error."""
    await ws.send(append)
    error = await ws.error()
    rest = await finish(ws, rid, frames[-1])
    assert rest[-1]["type"] == "response.completed"
    assert_contiguous(frames + rest)
    return error


CANCELLED = ("cancelled", "client_disconnected")


async def ends_incomplete(
    server: Server, ws: JsonWs, rid: str, frames: list[dict[str, Any]], reason: str
) -> None:
    """The rollout suspended at `frames[-1]` ends with one `response.incomplete` for `reason`,
    numbered on from the pause, is billed once and is no longer live; after that an append is
    refused as not suspended."""
    rest = await ws.to_pause_or_end()
    assert types(rest) == ["response.incomplete"]
    if reason in CANCELLED:  # a cancel, or the client gone: status `cancelled`, no reason
        assert rest[0]["response"]["incomplete_details"] is None
        assert rest[0]["response"]["status"] == "cancelled"
    else:
        assert rest[0]["response"]["incomplete_details"]["reason"] == reason
        assert rest[0]["response"]["status"] == "incomplete"
    assert_contiguous(frames + rest)
    await wait_for(lambda: server.engine.stats.billed == 1)
    await wait_for(lambda: server.service.live.rollouts == {})
    await ws.send(append_frame(rid, [output(c) for c in pending_ids(frames[-1])]))
    assert (await ws.error())["code"] == "response_not_suspended"


async def parked(server: RolloutServer, turns: int) -> tuple[str, list[dict[str, Any]]]:
    """A `turns`-call rollout created on a connection that then closed: parked, still suspended.
    Returns its id and the frames received before the close."""
    server.script(tool_steps(turns))
    async with json_ws(server.ws_url) as first:
        rid, frames = await start(first)
    await wait_for(lambda: server.service.live.rollouts[rid].sink is None)
    assert server.service.live.rollouts[rid].state == "parked"  # suspended, its client gone
    return rid, frames


# -- one response, one numbering ----------------------------------------------------------------


async def test_one_response_id_and_contiguous_numbering_across_pauses(
    rollout_server: RolloutServer,
) -> None:
    rollout_server.script(tool_steps(3))
    async with json_ws(rollout_server.ws_url) as ws:
        rid, frames = await start(ws)
        frames += await finish(ws, rid, frames[-1])
        await ws.nothing(0.1)

    # One response id for the whole rollout.
    ids = {response_id_of(f) for f in frames if "response" in f or f["type"] == "response.done"}
    assert ids == {rid}
    # sequence_number from 0, contiguous across the three pauses.
    assert_contiguous(frames)
    # Exactly one terminal event, the last one.
    kinds = types(frames)
    assert sum(k in TERMINAL for k in kinds) == 1
    assert kinds[-1] == "response.completed"
    assert kinds.count("response.done") == 3
    assert kinds.count("response.created") == 1
    # output_index keeps counting across pauses: three calls then the message.
    added = [f for f in frames if f["type"] == "response.output_item.added"]
    assert [f["output_index"] for f in added] == [0, 1, 2, 3]
    assert [f["item"]["type"] for f in added] == ["function_call"] * 3 + ["message"]
    # Each pause names exactly the calls streamed just before it, and carries running usage.
    pauses = [i for i, f in enumerate(frames) if f["type"] == "response.done"]
    last_usage = 0
    for n, i in enumerate(pauses):
        pause = frames[i]
        assert set(pause) >= {"type", "sequence_number", "response_id", "pending_calls", "usage"}
        assert "response" not in pause  # small on purpose: no snapshot
        done = [
            f["item"]
            for f in frames[:i]
            if f["type"] == "response.output_item.done" and f["output_index"] == n
        ]
        assert pause["pending_calls"] == [
            {"call_id": done[0]["call_id"], "name": "exec", "item_id": done[0]["id"]}
        ]
        usage = pause["usage"]
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
        assert usage["output_tokens"] > last_usage  # a running total
        last_usage = usage["output_tokens"]
    final = frames[-1]["response"]
    assert final["status"] == "completed"
    assert final["usage"]["output_tokens"] > last_usage
    assert [i["type"] for i in final["output"]] == ["function_call"] * 3 + ["message"]
    assert [i["arguments"] for i in final["output"][:3]] == [
        f'{{"cmd":"{cmd(i)}"}}' for i in range(3)
    ]


# -- parallel calls -----------------------------------------------------------------------------


async def test_parallel_outputs_in_separate_out_of_order_appends(
    rollout_server: RolloutServer,
) -> None:
    seen: list[list[str]] = []

    def policy(ctx: Context) -> Step:
        if ctx.model_turns == 0:
            return parallel("a", "b", "c")
        seen.append([i.call_id for i in ctx.items if isinstance(i, FunctionCallOutput)])
        return text("merged")

    rollout_server.policy(policy)
    async with json_ws(rollout_server.ws_url) as ws:
        rid, frames = await start(ws)
        pause = frames[-1]
        a, b, c = pending_ids(pause)
        assert [p["name"] for p in pause["pending_calls"]] == ["exec"] * 3
        # Three function calls, three distinct output indexes, one pause.
        added = [f for f in frames if f["type"] == "response.output_item.added"]
        assert [f["output_index"] for f in added] == [0, 1, 2]
        # Out of order, one per frame: no resume (no event at all) before the last one.
        await ws.send(append_frame(rid, [output(c, "third")]))
        await ws.nothing(0.15)
        await ws.send(append_frame(rid, [output(a, "first")]))
        await ws.nothing(0.15)
        await ws.send(append_frame(rid, [output(b, "second")]))
        rest = await ws.to_pause_or_end()
    assert rest[-1]["type"] == "response.completed"
    assert rest[0]["sequence_number"] == pause["sequence_number"] + 1
    assert_contiguous(frames + rest)
    # The context holds the outputs in arrival order.
    assert seen == [[c, a, b]]


# -- append errors, each leaving the rollout resumable ------------------------------------------


async def test_unknown_response_id_then_resume(rollout_server: RolloutServer) -> None:
    rollout_server.script(tool_steps(1))
    async with json_ws(rollout_server.ws_url) as ws:
        rid, frames = await start(ws)
        (cid,) = pending_ids(frames[-1])
        wrong_id = append_frame("resp_does_not_exist", [output(cid)])
        error = await refused_then_resumed(ws, rid, frames, wrong_id)
        assert error["code"] == "response_not_found"
        assert error["param"] == "response_id"
        [refusal] = [f for f in ws.received if f["type"] == "error"]
        assert refusal["status"] == 404


async def test_append_while_running_and_after_finished_is_not_suspended(
    rollout_server: RolloutServer,
) -> None:
    long_cmd = " ".join(f"step{i}" for i in range(20))  # ~40 tokens: 0.8 s at 50 tokens/s
    rollout_server.script([call("exec", {"cmd": long_cmd}), text("ok " * 20)])
    rollout_server.profile(SLOW)
    async with json_ws(rollout_server.ws_url) as ws:
        await ws.send(create_frame())
        created = await ws.recv()
        rid = created["response"]["id"]
        # The call's arguments stream at 50 tokens/s: the rollout is running, not suspended.
        await ws.send(append_frame(rid, [output("call_x")]))
        frames = [created]
        while True:
            frame = await ws.recv()
            if frame["type"] == "error":
                break
            frames.append(frame)
        assert frame["error"]["code"] == "response_not_suspended"
        assert frame["error"]["param"] == "response_id"
        assert frame["status"] == 409
        frames += await ws.to_pause_or_end()
        assert frames[-1]["type"] == "response.done"
        # Still resumable: the valid append resumes it. While it streams the answer, another
        # append is refused again (running), and the rollout is unaffected.
        (cid,) = pending_ids(frames[-1])
        await ws.send(append_frame(rid, [output(cid)]))
        first = await ws.recv()
        await ws.send(append_frame(rid, [output(cid)]))
        rest = [first]
        while True:
            frame = await ws.recv()
            if frame["type"] == "error":
                assert frame["error"]["code"] == "response_not_suspended"
                continue
            rest.append(frame)
            if frame["type"] in TERMINAL:
                break
        assert rest[-1]["type"] == "response.completed"
        assert_contiguous(frames + rest)
        # After the end: not suspended (finished), not "not found".
        await ws.send(append_frame(rid, [output(cid)]))
        error = await ws.error()
        assert error["code"] == "response_not_suspended"
        assert ws.received[-1]["status"] == 409


async def test_unknown_call_id_then_resume(rollout_server: RolloutServer) -> None:
    rollout_server.script(tool_steps(1))
    async with json_ws(rollout_server.ws_url) as ws:
        rid, frames = await start(ws)
        error = await refused_then_resumed(
            ws, rid, frames, append_frame(rid, [output("call_nope")])
        )
        assert error["code"] == "unknown_call_id"
        assert error["param"] == "input[0].call_id"


async def test_duplicate_call_output_in_one_append_and_in_a_later_one(
    rollout_server: RolloutServer,
) -> None:
    rollout_server.script([parallel("a", "b")])
    async with json_ws(rollout_server.ws_url) as ws:
        rid, frames = await start(ws)
        a, b = pending_ids(frames[-1])
        # Twice in one append: the whole append is refused (nothing applied).
        await ws.send(append_frame(rid, [output(a), output(a)]))
        error = await ws.error()
        assert error["code"] == "duplicate_call_output"
        assert error["param"] == "input[1].call_id"
        # A valid partial append, then the same output again in a later append.
        await ws.send(append_frame(rid, [output(a)]))
        await ws.nothing(0.1)
        await ws.send(append_frame(rid, [output(b), output(a)]))
        error = await ws.error()
        assert error["code"] == "duplicate_call_output"
        assert error["param"] == "input[1].call_id"
        await ws.send(append_frame(rid, [output(a)]))
        error = await ws.error()
        assert error["code"] == "duplicate_call_output"
        assert error["param"] == "input[0].call_id"
        # The rollout is still waiting for b only.
        await ws.send(append_frame(rid, [output(b)]))
        rest = await ws.to_pause_or_end()
        assert rest[-1]["type"] == "response.completed"
        assert_contiguous(frames + rest)


@pytest.mark.parametrize(
    ("item", "code", "param"),
    [
        (
            {"type": "function_call_output", "output": "x"},
            "missing_required_parameter",
            "input[0].call_id",
        ),
        (
            {"type": "function_call", "call_id": "call_1", "name": "exec", "arguments": "{}"},
            "invalid_value",
            "input[0].type",
        ),
        ({"type": "bogus"}, "invalid_value", "input[0].type"),
        (
            {"type": "function_call_output", "call_id": 7, "output": "x"},
            "invalid_type",
            "input[0].call_id",
        ),
    ],
)
async def test_malformed_items_then_resume(
    rollout_server: RolloutServer, item: dict[str, Any], code: str, param: str
) -> None:
    rollout_server.script(tool_steps(1))
    async with json_ws(rollout_server.ws_url) as ws:
        rid, frames = await start(ws)
        error = await refused_then_resumed(ws, rid, frames, append_frame(rid, [item]))
        assert error["type"] == "invalid_request_error"
        assert error["code"] == code
        assert error["param"] == param


# -- appended user messages ---------------------------------------------------------------------


async def test_user_message_appended_with_the_output_joins_the_context(
    rollout_server: RolloutServer,
) -> None:
    def policy(ctx: Context) -> Step:
        if ctx.model_turns == 0:
            return call("exec", {"cmd": cmd(0)})
        return text(f"heard: {ctx.last_user_text}")

    rollout_server.policy(policy)
    async with json_ws(rollout_server.ws_url) as ws:
        rid, frames = await start(ws)
        (cid,) = pending_ids(frames[-1])
        steer = {"role": "user", "content": "use the fast suite"}
        await ws.send(append_frame(rid, [output(cid), steer]))
        rest = await ws.to_pause_or_end()
    final = rest[-1]["response"]
    assert final["status"] == "completed"
    assert final["output"][-1]["content"][0]["text"] == "heard: use the fast suite"
    # Scanned once each: header, initial input, and the two appended items.
    await wait_for(lambda: rollout_server.engine.stats.responses == 1)
    assert rollout_server.engine.stats.totals.counts["scan"].items == 4


async def test_user_message_alone_does_not_resume(rollout_server: RolloutServer) -> None:
    seen: list[list[str]] = []

    def policy(ctx: Context) -> Step:
        if ctx.model_turns == 0:
            return call("exec", {"cmd": cmd(0)})
        seen.append([type(i).__name__ for i in ctx.items])
        return text("ok")

    rollout_server.policy(policy)
    async with json_ws(rollout_server.ws_url) as ws:
        rid, frames = await start(ws)
        (cid,) = pending_ids(frames[-1])
        await ws.send(append_frame(rid, [{"role": "user", "content": "hold on"}]))
        await ws.nothing(0.15)
        await ws.send(append_frame(rid, [output(cid)]))
        rest = await ws.to_pause_or_end()
    assert rest[-1]["type"] == "response.completed"
    # Messages and outputs join the context in arrival order.
    assert seen == [["Message", "FunctionCall", "Message", "FunctionCallOutput"]]


# -- hosted tools never pause -------------------------------------------------------------------


async def test_hosted_web_search_never_pauses(rollout_server: RolloutServer) -> None:
    rollout_server.script([search("trio websockets"), call("exec", {"cmd": cmd(0)}), text("ok")])
    tools = [create_frame()["tools"][0], {"type": "web_search"}]
    async with json_ws(rollout_server.ws_url) as ws:
        rid, frames = await start(ws, tools=tools)
        rest = await finish(ws, rid, frames[-1])
    every = frames + rest
    kinds = types(every)
    assert kinds.count("response.done") == 1
    assert "response.web_search_call.completed" in kinds
    assert kinds.index("response.web_search_call.completed") < kinds.index("response.done")
    pause = every[kinds.index("response.done")]
    assert [p["name"] for p in pause["pending_calls"]] == ["exec"]
    assert kinds[-1] == "response.completed"
    assert_contiguous(every)
    output_types = [i["type"] for i in every[-1]["response"]["output"]]
    assert output_types == ["web_search_call", "function_call", "message"]


# -- cancel -------------------------------------------------------------------------------------


async def test_cancel_while_running(rollout_server: RolloutServer) -> None:
    rollout_server.script([text("word " * 200)])
    rollout_server.profile(SLOW)
    async with json_ws(rollout_server.ws_url) as ws:
        await ws.send(create_frame())
        created = await ws.recv()
        rid = created["response"]["id"]
        await ws.until(lambda f: f["type"] == "response.output_text.delta")
        await ws.send(cancel_frame(rid))
        rest = await ws.to_pause_or_end()
        assert rest[-1]["type"] == "response.incomplete"
        assert rest[-1]["response"]["status"] == "cancelled"
        assert_contiguous(ws.received)
        await ws.nothing(0.1)
    await wait_for(lambda: rollout_server.engine.stats.billed == 1)
    assert rollout_server.service.live.rollouts == {}


async def test_cancel_while_suspended(rollout_server: RolloutServer) -> None:
    rollout_server.script(tool_steps(2))
    async with json_ws(rollout_server.ws_url) as ws:
        rid, frames = await start(ws)
        await ws.send(cancel_frame(rid))
        await ends_incomplete(rollout_server, ws, rid, frames, "cancelled")


async def test_cancel_unknown_response_is_an_error(rollout_server: RolloutServer) -> None:
    rollout_server.script(tool_steps(1))
    async with json_ws(rollout_server.ws_url) as ws:
        await ws.send(cancel_frame("resp_nope"))
        assert (await ws.error())["code"] == "response_not_found"


# -- the append timeout -------------------------------------------------------------------------


async def test_append_timeout_ends_the_rollout() -> None:
    async with (
        serving(tool_script(2), append_timeout_s=0.3) as server,
        json_ws(server.ws_url) as ws,
    ):
        rid, frames = await start(ws)
        await ends_incomplete(server, ws, rid, frames, "append_timeout")


# -- disconnect, resume, grace ------------------------------------------------------------------


async def test_resume_from_a_new_connection(rollout_server: RolloutServer) -> None:
    # The first connection is closed; the rollout is parked, not finished.
    rid, frames = await parked(rollout_server, 2)
    host = rollout_server.service.live
    async with json_ws(rollout_server.ws_url) as second:
        rest = await finish(second, rid, frames[-1])
        await second.nothing(0.1)
    assert types(rest).count("response.done") == 1
    assert rest[-1]["type"] == "response.completed"
    # No event was sent while nobody was connected: numbering is contiguous across both.
    assert_contiguous(frames + rest)
    assert {response_id_of(f) for f in rest if f["type"] in TERMINAL} == {rid}
    await wait_for(lambda: rollout_server.engine.stats.billed == 1)
    assert host.rollouts == {}


async def test_parked_rollout_is_finished_after_the_grace_period() -> None:
    async with serving(tool_script(2), append_grace_s=0.3) as server:
        async with json_ws(server.ws_url) as ws:
            rid, frames = await start(ws)
        host = server.service.live
        await wait_for(lambda: host.rollouts == {})
        await wait_for(lambda: server.engine.stats.billed == 1)
        assert server.engine.stats.responses == 1
        assert server.engine.stats.live_rollouts == 0
        # Too late: the rollout is finished and its resources freed.
        async with json_ws(server.ws_url) as late:
            await late.send(append_frame(rid, [output(c) for c in pending_ids(frames[-1])]))
            assert (await late.error())["code"] == "response_not_suspended"


async def test_grace_does_not_apply_while_connected() -> None:
    async with serving(tool_script(1), append_grace_s=0.2) as server, json_ws(server.ws_url) as ws:
        rid, frames = await start(ws)
        await ws.nothing(0.5)
        rest = await finish(ws, rid, frames[-1])
        assert rest[-1]["type"] == "response.completed"


async def test_reconnected_client_is_not_cut_off_by_the_grace_period() -> None:
    async with serving(ScriptedPolicy([parallel("a", "b")]), append_grace_s=0.3) as server:
        async with json_ws(server.ws_url) as first:
            rid, frames = await start(first)
        a, b = pending_ids(frames[-1])
        async with json_ws(server.ws_url) as second:
            await second.send(append_frame(rid, [output(a)]))  # re-attaches, partial
            with trio.move_on_after(0.6):
                early = await second.recv()
                raise AssertionError(f"the rollout ended while its client was connected: {early}")
            await second.send(append_frame(rid, [output(b)]))
            rest = await second.to_pause_or_end()
            assert rest[-1]["type"] == "response.completed"


async def test_parked_rollout_cannot_be_resumed_with_another_api_key() -> None:
    async with serving(tool_script(1), api_keys=frozenset({"k1", "k2"})) as server:
        async with json_ws(server.ws_url, api_key="k1") as first:
            rid, frames = await start(first)
        outputs = [output(c) for c in pending_ids(frames[-1])]
        async with json_ws(server.ws_url, api_key="k2") as other:
            await other.send(append_frame(rid, outputs))
            error = await other.error()
            assert error["code"] == "response_not_found"
            await other.send(cancel_frame(rid))
            assert (await other.error())["code"] == "response_not_found"
        async with json_ws(server.ws_url, api_key="k1") as owner:
            await owner.send(append_frame(rid, outputs))
            rest = await owner.to_pause_or_end()
            assert rest[-1]["type"] == "response.completed"
            assert_contiguous(frames + rest)


async def test_disconnect_while_running_ends_the_rollout(rollout_server: RolloutServer) -> None:
    rollout_server.script([text("word " * 200)])
    rollout_server.profile(SLOW)
    async with json_ws(rollout_server.ws_url) as ws:
        await ws.send(create_frame())
        await ws.until(lambda f: f["type"] == "response.output_text.delta")
    host = rollout_server.service.live
    await wait_for(lambda: host.rollouts == {})
    await wait_for(lambda: rollout_server.engine.stats.billed == 1)


async def test_another_open_connection_cannot_take_over_an_attached_rollout(
    rollout_server: RolloutServer,
) -> None:
    rollout_server.script(tool_steps(1))
    async with (
        json_ws(rollout_server.ws_url) as first,
        json_ws(rollout_server.ws_url) as second,
    ):
        rid, frames = await start(first)
        await second.send(append_frame(rid, [output(c) for c in pending_ids(frames[-1])]))
        error = await second.error()
        assert error["code"] == "response_not_found"


async def test_cancel_a_parked_rollout_from_a_new_connection(rollout_server: RolloutServer) -> None:
    rid, _ = await parked(rollout_server, 2)
    host = rollout_server.service.live
    async with json_ws(rollout_server.ws_url) as second:
        await second.send(cancel_frame(rid))
        await wait_for(lambda: rid not in host.rollouts)  # it was cancelled ...
        rest = await second.to_pause_or_end()  # ... but nobody is told
        assert types(rest) == ["response.incomplete"]
        assert rest[0]["response"]["status"] == "cancelled"
