"""SSE bodies go through an outbox: a burst of events leaves in few writes (one h11 chunk each),
in order and complete, and a client that stops reading does not grow the server's memory."""

from __future__ import annotations

import functools
import socket

import h11
import orjson
import trio

import rollout
from rollout.model.policy import TextStep
from rollout.service.config import ServerConfig
from rollout.service.service import Service

LONG = " ".join(["word"] * 3000)


async def _stream(port: int, text_input: str) -> tuple[list[str], int, bytes]:
    """Event types, the number of h11 chunks the body came in, and the delta text."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    client = h11.Connection(h11.CLIENT)
    body = orjson.dumps({"model": "m", "input": text_input, "stream": True})
    head = h11.Request(
        method="POST",
        target="/v1/responses",
        headers=[
            ("host", "x"),
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
        ],
    )
    await stream.send_all(client.send(head) + client.send(h11.Data(data=body)))
    await stream.send_all(client.send(h11.EndOfMessage()))
    data = bytearray()
    chunks = 0
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA:
            client.receive_data(await stream.receive_some(65536))
        elif isinstance(event, h11.Data):
            data += event.data
            chunks += event.chunk_end
        elif isinstance(event, h11.EndOfMessage):
            break
    await stream.aclose()
    types: list[str] = []
    text = bytearray()
    for block in bytes(data).split(b"\n\n"):
        if block:
            kind, payload = block.split(b"\n")
            types.append(kind.removeprefix(b"event: ").decode())
            event_json = orjson.loads(payload.removeprefix(b"data: "))
            assert event_json["type"] == types[-1]
            if types[-1] == "response.output_text.delta":
                text += event_json["delta"].encode()
    return types, chunks, bytes(text)


async def test_a_burst_of_deltas_leaves_in_few_writes_in_order() -> None:
    engine = rollout.Engine(policy=rollout.ScriptedPolicy(lambda ctx: TextStep(text=LONG)))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, engine))
        types, chunks, text = await _stream(port, "go")
        assert types[0] == "response.created" and types[-1] == "response.completed"
        deltas = types.count("response.output_text.delta")
        assert deltas >= 3000
        assert text.decode() == LONG
        assert chunks * 10 < len(types)  # coalesced: far fewer writes than events
        # the connection is kept alive and serves the next stream the same way
        again, _, text2 = await _stream(port, "again")
        assert again == types and text2 == text
        nursery.cancel_scope.cancel()


async def test_a_client_that_stops_reading_an_sse_body_stalls_its_producer() -> None:
    engine = rollout.Engine(
        policy=rollout.ScriptedPolicy(lambda ctx: TextStep(text=" ".join(["word"] * 200_000)))
    )
    host = Service(engine, ServerConfig())
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, service=host))
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        body = orjson.dumps({"model": "m", "input": "flood", "stream": True})
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        sent = -1
        while engine.stats.events_sent != sent:  # until the producer stops: it waits
            sent = engine.stats.events_sent
            await trio.sleep(0.2)
        assert 0 < sent < 200_000  # stalled, not streamed to the end into memory
        sock.close()
        nursery.cancel_scope.cancel()
