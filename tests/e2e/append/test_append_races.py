# Racing appends: two clients append the same outputs to one suspended rollout at once, over two
# HTTP connections, or over HTTP and WebSocket. The check and the recording of an append are one
# step under the rollout's lifetime table, so exactly one append wins every time; the other is
# refused with a documented error; no request hangs; each call_id gets exactly one output.
from __future__ import annotations

import socket
from typing import Any

import orjson
import trio

from protocol.items import FunctionCallOutput
from rollout.client import ClientError, HttpClient, connect_ws
from rollout.testing.plugin import RolloutServer
from support.appendhttp import create, sse
from support.events import pending_ids
from support.tools import output, parallel, tool_steps
from support.waits import TIMEOUT

TRIALS = 30
LOSING = {(404, "response_not_found"), (409, "response_not_suspended")}


def outcome(status: int, value: Any) -> tuple[int, str | None]:
    if status == 200:
        assert isinstance(value, list) and value and value[-1]["type"] == "response.completed"
        return 200, None
    return status, value["error"]["code"]


def raw_append(port: int, rid: str, items: list[dict[str, Any]]) -> bytes:
    body = orjson.dumps({"input": items})
    return (
        f"POST /v1/responses/{rid}/append HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body


def sent(port: int, request: bytes) -> trio.SocketStream:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(request)
    sock.setblocking(False)
    return trio.SocketStream(trio.socket.from_stdlib_socket(sock))


async def read_all(stream: trio.SocketStream) -> tuple[int, bytes]:
    data = b""
    while chunk := await stream.receive_some(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


async def test_two_http_appends_of_the_same_outputs_exactly_one_wins(
    rollout_server: RolloutServer,
) -> None:
    server = rollout_server
    server.script(tool_steps(1))
    for _ in range(TRIALS):
        async with HttpClient(server.http_base_url) as http:
            rid, first = await create(http)
        (cid,) = pending_ids(first[-1])
        request = raw_append(server.port, rid, [output(cid)])
        # Both requests are on the wire before the server reads either (plain blocking
        # sockets: the server's trio loop does not run until the test awaits).
        one, two = (sent(server.port, request) for _ in range(2))
        with trio.fail_after(TIMEOUT):  # a hang fails the test; a slow machine does not
            results = [await read_all(one), await read_all(two)]
        await one.aclose()
        await two.aclose()
        won = [body for status, body in results if status == 200]
        assert len(won) == 1, results
        assert won[0].count(b"event: response.completed") == 1, won
        (lost,) = [(s, orjson.loads(b)["error"]["code"]) for s, b in results if s != 200]
        assert lost in LOSING, results
    assert server.engine.stats.http_in_flight == 0


async def partial_race(server: RolloutServer) -> None:
    async with HttpClient(server.http_base_url) as one, HttpClient(server.http_base_url) as two:
        rid, first = await create(one, store=True)
        a, b = pending_ids(first[-1])
        statuses: list[int] = []

        async def race(http: HttpClient) -> None:
            path = f"/responses/{rid}/append"
            status, _, _ = await sse(http, path, {"input": [output(a)]})
            statuses.append(status)

        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(race, one)
                nursery.start_soon(race, two)
        assert sorted(statuses)[0] == 200 and len(statuses) == 2, statuses
        status, _, rest = await sse(one, f"/responses/{rid}/append", {"input": [output(b)]})
        assert status == 200 and rest[-1]["type"] == "response.completed"
        record = await server.engine.store.get(rid)
        assert record is not None
        answered = [i.call_id for i in record.input_items if isinstance(i, FunctionCallOutput)]
        assert sorted(answered) == sorted([a, b]), answered


async def test_racing_partial_appends_store_one_output_per_call(
    rollout_server: RolloutServer,
) -> None:
    rollout_server.script([parallel("a", "b")])
    for _ in range(TRIALS // 3):
        await partial_race(rollout_server)


async def http_ws_race(server: RolloutServer) -> None:
    async with HttpClient(server.http_base_url) as http:
        rid, first = await create(http)
        (cid,) = pending_ids(first[-1])
        results: list[str] = []

        async def over_http() -> None:
            path = f"/responses/{rid}/append"
            status, _, value = await sse(http, path, {"input": [output(cid)]})
            results.append("won" if status == 200 else value["error"]["code"])

        async def over_ws() -> None:
            async with connect_ws(server.ws_url) as ws:
                try:
                    async for event in await ws.append(rid, [output(cid)]):
                        if event.type == "response.completed":
                            results.append("won")
                except ClientError as exc:
                    results.append(str(exc.code))

        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(over_http)
                nursery.start_soon(over_ws)
        assert results.count("won") == 1, results
        assert len(results) == 2, results


async def test_http_append_racing_a_websocket_append_exactly_one_wins(
    rollout_server: RolloutServer,
) -> None:
    rollout_server.script(tool_steps(1))
    for _ in range(TRIALS // 2):
        await http_ws_race(rollout_server)
