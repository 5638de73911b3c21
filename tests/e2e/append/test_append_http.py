# The append shape over HTTP (append-protocol.md, "Over HTTP"): a streaming create ends its SSE
# response at the first pause, `POST /v1/responses/{id}/append` streams to the next pause or the
# end, errors are HTTP statuses with the standard envelope, cancel answers the final response,
# and a stored rollout is retrievable with its appended input items.
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import trio

from rollout.client import HttpClient
from rollout.model.policy import call, text
from rollout.testing.plugin import RolloutServer
from support.appendhttp import Frames, append, create, sse
from support.errors import assert_envelope
from support.events import TERMINAL, assert_contiguous, pending_ids, types
from support.frames import append_body
from support.servers import SLOW
from support.tools import cmd, output, parallel, tool_steps
from support.waits import wait_for


def envelope(value: Any, code: str, param: str | None) -> dict[str, Any]:
    return assert_envelope(value, code=code, param=param)


@pytest.fixture
async def http(rollout_server: RolloutServer) -> AsyncIterator[HttpClient]:
    """The trio client for the `rollout_server` fixture's server."""
    async with HttpClient(rollout_server.http_base_url) as client:
        yield client


async def two_pending(server: RolloutServer, http: HttpClient) -> tuple[str, Frames, str, str]:
    """A create whose model calls exec twice in parallel: (id, frames, the two call ids)."""
    server.script([parallel("a", "b")])
    rid, first = await create(http)
    a, b = pending_ids(first[-1])
    return rid, first, a, b


async def test_create_streams_to_the_first_pause_then_append_resumes(
    rollout_server: RolloutServer, http: HttpClient
) -> None:
    rollout_server.script(tool_steps(2))
    rid, first = await create(http)
    # The HTTP response ended at the pause (`sse` returned); the rollout stays suspended.
    assert first[-1]["type"] == "response.done"
    assert types(first).count("response.done") == 1
    assert not TERMINAL & set(types(first))
    second = await append(http, rid, [output(c) for c in pending_ids(first[-1])])
    assert second[-1]["type"] == "response.done"
    assert types(second).count("response.done") == 1
    third = await append(http, rid, [output(c) for c in pending_ids(second[-1])])
    assert third[-1]["type"] == "response.completed"
    every = first + second + third
    assert_contiguous(every)
    assert sum(t in TERMINAL for t in types(every)) == 1
    assert third[-1]["response"]["id"] == rid
    added = [f["output_index"] for f in every if f["type"] == "response.output_item.added"]
    assert added == [0, 1, 2]
    final = third[-1]["response"]
    assert [i["arguments"] for i in final["output"][:2]] == [
        f'{{"cmd":"{cmd(i)}"}}' for i in range(2)
    ]
    # One route and one (blocking, over HTTP) bill for the whole rollout.
    assert rollout_server.engine.stats.billed == 1
    assert rollout_server.engine.stats.totals.counts["routing"].calls == 1


async def test_partial_append_streams_nothing_until_the_last_output(
    rollout_server: RolloutServer, http: HttpClient
) -> None:
    rid, first, a, b = await two_pending(rollout_server, http)
    assert await append(http, rid, [output(b)]) == []
    rest = await append(http, rid, [output(a)])
    assert rest[-1]["type"] == "response.completed"
    assert_contiguous(first + rest)


@pytest.mark.parametrize("stream_value", [False, None])
async def test_append_create_must_stream(
    rollout_server: RolloutServer, http: HttpClient, stream_value: bool | None
) -> None:
    rollout_server.script(tool_steps(1))
    payload = append_body(stream=stream_value)
    if stream_value is None:
        del payload["stream"]
    status, _, value = await sse(http, "/responses", payload)
    assert status == 400
    envelope(value, "invalid_value", "stream")
    assert rollout_server.engine.stats.responses == 0


async def test_unknown_shape_is_refused(rollout_server: RolloutServer, http: HttpClient) -> None:
    rollout_server.script(tool_steps(1))
    status, _, value = await sse(http, "/responses", append_body(stream=True, shape="both"))
    assert status == 400
    envelope(value, "invalid_value", "shape")


async def test_append_errors_are_http_statuses_and_the_rollout_stays_resumable(
    rollout_server: RolloutServer, http: HttpClient
) -> None:
    rid, first, a, b = await two_pending(rollout_server, http)
    cases: list[tuple[str, list[dict[str, Any]], int, str, str | None]] = [
        ("resp_nope", [output(a)], 404, "response_not_found", "response_id"),
        (rid, [output("call_nope")], 400, "unknown_call_id", "input[0].call_id"),
        (rid, [output(a), output(a)], 400, "duplicate_call_output", "input[1].call_id"),
        (
            rid,
            [{"type": "function_call_output", "output": "x"}],
            400,
            "missing_required_parameter",
            "input[0].call_id",
        ),
        (
            rid,
            [{"type": "function_call", "call_id": a, "name": "exec", "arguments": "{}"}],
            400,
            "invalid_value",
            "input[0].type",
        ),
    ]
    for target, items, status, code, param in cases:
        got, _, value = await sse(http, f"/responses/{target}/append", {"input": items})
        assert got == status, (code, value)
        envelope(value, code, param)
    # A partial append, then a duplicate of it in a later append.
    assert await append(http, rid, [output(a)]) == []
    got, _, value = await sse(http, f"/responses/{rid}/append", {"input": [output(a)]})
    assert got == 400
    envelope(value, "duplicate_call_output", "input[0].call_id")
    rest = await append(http, rid, [output(b)])
    assert rest[-1]["type"] == "response.completed"
    assert_contiguous(first + rest)
    # Finished: 409, not suspended.
    got, _, value = await sse(http, f"/responses/{rid}/append", {"input": [output(b)]})
    assert got == 409
    envelope(value, "response_not_suspended", "response_id")


async def test_append_while_running_is_409(rollout_server: RolloutServer, http: HttpClient) -> None:
    rollout_server.script([call("exec", {"cmd": cmd(0)}), text("ok " * 25)])
    rollout_server.profile(SLOW)
    rid, first = await create(http)
    (cid,) = pending_ids(first[-1])
    result: dict[str, Frames] = {}

    async def resume() -> None:
        result["rest"] = await append(http, rid, [output(cid)])

    async with HttpClient(rollout_server.http_base_url) as two, trio.open_nursery() as nursery:
        nursery.start_soon(resume)
        await wait_for(lambda: rollout_server.engine.stats.events_sent > len(first) + 3)
        got, _, value = await sse(two, f"/responses/{rid}/append", {"input": []})
        assert got == 409
        envelope(value, "response_not_suspended", "response_id")
    assert result["rest"][-1]["type"] == "response.completed"
    assert_contiguous(first + result["rest"])


async def test_cancel_a_suspended_rollout(rollout_server: RolloutServer, http: HttpClient) -> None:
    rollout_server.script(tool_steps(2))
    rid, _ = await create(http)
    response = await http.json("POST", f"/responses/{rid}/cancel")
    assert response["id"] == rid
    assert response["status"] == "cancelled"
    assert response["incomplete_details"] is None
    got, _, value = await sse(http, f"/responses/{rid}/append", {"input": []})
    assert got == 409
    envelope(value, "response_not_suspended", "response_id")
    assert rollout_server.engine.stats.billed == 1
    # Unknown ids: 404.
    status, _, chunks = await http.request("POST", "/responses/resp_nope/cancel")
    data = b"".join([c async for c in chunks])
    assert status == 404
    envelope(orjson.loads(data), "response_not_found", None)


async def test_stored_append_rollout_is_retrievable_with_its_appended_inputs(
    rollout_server: RolloutServer, http: HttpClient
) -> None:
    rollout_server.script(tool_steps(2))
    rid, frames = await create(http, store=True)
    sent: list[str] = []
    steer = {"role": "user", "content": "keep going"}
    while frames[-1]["type"] == "response.done":
        ids = pending_ids(frames[-1])
        sent += ids
        extra = [steer] if len(sent) == 1 else []
        frames = await append(http, rid, [output(c, f"out {c}") for c in ids] + extra)
    assert frames[-1]["type"] == "response.completed"
    response = await http.json("GET", f"/responses/{rid}")
    assert response["id"] == rid
    assert response["status"] == "completed"
    assert [i["type"] for i in response["output"]] == ["function_call"] * 2 + ["message"]
    items = await http.json("GET", f"/responses/{rid}/input_items?order=asc&limit=100")
    data = items["data"]
    assert [i["type"] for i in data] == [
        "message",
        "function_call_output",
        "message",
        "function_call_output",
    ]
    assert data[0]["content"][0]["text"] == "Fix the failing tests."
    assert [i["call_id"] for i in data if i["type"] == "function_call_output"] == sent
    assert [i["output"] for i in data if i["type"] == "function_call_output"] == [
        f"out {c}" for c in sent
    ]
    assert data[2]["content"][0]["text"] == "keep going"
    assert all(i.get("id") for i in data)
