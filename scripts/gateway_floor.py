"""What a short streamed response costs a Python gateway at the least: `rollout bench
gateway`'s short SSE request (a fresh connection, `"input": "short answer"`, `stream: true`)
answered by rollout, by agentic-api's Rust gateway and by a floor, all in front of one aimock,
side by side. The floor is the least a gateway in Python on trio can do for that request and
still answer it as the bench's client reads it: read the head and body, parse the JSON, send one
chat-completions request on a kept connection, read its SSE answer, write the Responses events
with orjson and close. It checks nothing, counts nothing, stores nothing and handles no error:
it is a measuring stick, not a server.

    python scripts/gateway_floor.py [-n N] [--rounds R]

Prints, per gateway, `floor.cpu.short_response.sse.NAME VALUE ms` (CPU per response, user and
system, from the process's clock) and `floor.first_token.sse.NAME VALUE ms` (p50), the medians
of R interleaved rounds of N requests. Needs Node and aimock (`npm ci` in tests/upstream);
agentic-api is measured where `rollout bench gateway` finds it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager

import orjson
import trio

from rollout.experiments.bench import peer
from rollout.experiments.bench.gateway import SHORT, fixtures
from rollout.experiments.bench.gwclients import sse_turn
from rollout.experiments.bench.gwpeers import (
    Gateway,
    agentic_gateway,
    free_port,
    peer_missing,
    rollout_gateway,
)
from rollout.experiments.harness.procs import stop as stop_process

# -- the floor: one process, `python scripts/gateway_floor.py serve PORT UPSTREAM_PORT` ----------


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _serve_floor(port: int, upstream_port: int) -> None:
    idle: list[tuple[trio.SocketStream, bytearray]] = []  # kept upstream connections

    async def handle(stream: trio.SocketStream) -> None:
        buf = bytearray()
        while b"\r\n\r\n" not in buf:
            data = await stream.receive_some(65536)
            if not data:
                return
            buf += data
        head, _, body = bytes(buf).partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        whole = bytearray(body)
        while len(whole) < length:
            whole += await stream.receive_some(65536)
        req = orjson.loads(whole)
        chat = orjson.dumps(
            {
                "model": req["model"],
                "messages": [{"role": "user", "content": req["input"]}],
                "stream": True,
            }
        )
        up, ubuf = (
            idle.pop()
            if idle
            else (await trio.open_tcp_stream("127.0.0.1", upstream_port), bytearray())
        )
        await up.send_all(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: upstream\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(chat), chat)
        )
        rid, mid, seq = "resp_" + os.urandom(12).hex(), "msg_" + os.urandom(12).hex(), 0

        def event(**fields: object) -> bytes:
            nonlocal seq
            fields["sequence_number"] = seq
            seq += 1
            name = str(fields["type"]).encode()
            return _chunk(b"event: " + name + b"\ndata: " + orjson.dumps(fields) + b"\n\n")

        response = {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "status": "in_progress",
            "model": req["model"],
            "output": [],
            "usage": None,
        }
        out = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        out += event(type="response.created", response=response)
        out += event(type="response.in_progress", response=response)
        await stream.send_all(out)
        while not (b"data: [DONE]" in ubuf and ubuf.endswith(b"0\r\n\r\n")):
            ubuf += await up.receive_some(262144)
        answer = bytes(ubuf).split(b"\r\n\r\n", 1)[1]
        ubuf.clear()
        idle.append((up, ubuf))
        out, texts = b"", list[str]()
        for line in answer.split(b"\n"):
            if not line.startswith(b"data: {"):
                continue
            chunk = orjson.loads(line[6:])
            delta = chunk["choices"][0]["delta"].get("content") if chunk.get("choices") else None
            if not delta:
                continue
            if not texts:
                added = {"id": mid, "type": "message", "status": "in_progress", "content": []}
                added["role"] = "assistant"
                out += event(type="response.output_item.added", output_index=0, item=added)
                part = {"type": "output_text", "text": "", "annotations": []}
                at = {"item_id": mid, "output_index": 0, "content_index": 0}
                out += event(type="response.content_part.added", **at, part=part)
            out += event(
                type="response.output_text.delta",
                item_id=mid,
                output_index=0,
                content_index=0,
                delta=delta,
                logprobs=[],
            )
            texts.append(delta)
        await stream.send_all(out)
        text = "".join(texts)
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {
            "id": mid,
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }
        at = {"item_id": mid, "output_index": 0, "content_index": 0}
        out = event(type="response.output_text.done", **at, text=text, logprobs=[])
        out += event(type="response.content_part.done", **at, part=part)
        out += event(type="response.output_item.done", output_index=0, item=item)
        usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
        done = {**response, "status": "completed", "output": [item], "usage": usage}
        out += event(type="response.completed", response=done) + b"0\r\n\r\n"
        await stream.send_all(out)
        await stream.aclose()

    await trio.serve_tcp(handle, port, host="127.0.0.1")


@contextmanager
def floor_gateway(upstream_port: int) -> Iterator[Gateway]:
    port = free_port()
    args = [sys.executable, __file__, "serve", str(port), str(upstream_port)]
    proc = subprocess.Popen(args)
    gateway = Gateway("floor", proc, port)
    try:
        gateway.wait_listening()
        yield gateway
    finally:
        stop_process(proc)


# -- the measurement --------------------------------------------------------------------------


def _round(gateway: Gateway, n: int) -> tuple[float, float]:
    """CPU per response (ms) and p50 first token (ms) over `n` short SSE responses."""
    body: dict[str, object] = {"model": "m", "input": SHORT, "store": False}
    before = gateway.cpu()
    firsts = [sse_turn(gateway.port, body).first_delta_s for _ in range(n)]
    return (gateway.cpu() - before) / n * 1e3, statistics.median(firsts) * 1e3


def measure(n: int, rounds: int) -> None:
    async def main() -> None:
        with tempfile.NamedTemporaryFile("wb", suffix=".json") as fixture:
            fixture.write(orjson.dumps(fixtures()))
            fixture.flush()
            async with peer.aimock(fixture.name) as upstream_port:
                await trio.to_thread.run_sync(_measure, upstream_port, n, rounds)

    trio.run(main)


def _measure(upstream_port: int, n: int, rounds: int) -> None:
    upstream = f"http://127.0.0.1:{upstream_port}/v1"
    makers: dict[str, Callable[[], AbstractContextManager[Gateway]]] = {
        "rollout": lambda: rollout_gateway(upstream),
        "floor": lambda: floor_gateway(upstream_port),
    }
    missing = peer_missing()
    if missing is None:
        makers["agentic_api"] = lambda: agentic_gateway(upstream)
    else:
        print(f"# agentic-api not measured: {missing}")
    cpu: dict[str, list[float]] = {name: [] for name in makers}
    first: dict[str, list[float]] = {name: [] for name in makers}
    with _all(makers) as gateways:
        for gateway in gateways.values():
            _round(gateway, n)  # warm-up
        for _ in range(rounds):
            for name, gateway in gateways.items():
                c, f = _round(gateway, n)
                cpu[name].append(c)
                first[name].append(f)
    for name in makers:
        print(f"floor.cpu.short_response.sse.{name} {statistics.median(cpu[name]):.4g} ms")
    for name in makers:
        print(f"floor.first_token.sse.{name} {statistics.median(first[name]):.4g} ms")


@contextmanager
def _all(
    makers: dict[str, Callable[[], AbstractContextManager[Gateway]]],
) -> Iterator[dict[str, Gateway]]:
    with ExitStack() as stack:
        yield {name: stack.enter_context(make()) for name, make in makers.items()}


def main() -> None:
    if sys.argv[1:2] == ["serve"]:
        trio.run(_serve_floor, int(sys.argv[2]), int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("-n", type=int, default=200, help="requests a round (default 200)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = parser.parse_args()
    measure(args.n, args.rounds)


if __name__ == "__main__":
    main()
