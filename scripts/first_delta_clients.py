"""Time to first delta for checkouts side by side, read by other clients than the bench's.

    python scripts/first_delta_clients.py CHECKOUT [CHECKOUT ...] --client raw|sdk
        --transport ws|sse [--turns 400]

`rollout bench first-token` reads with trio-websocket, which parses each frame in Python: a
server that sends its first events early lets it parse them while the server works. This
script reads the same answer ("ok", each checkout's server in its own process, as
`first_token_ab.py` starts it) with a client that has nothing to overlap (`raw`: a blocking
socket that walks WebSocket frame headers or looks for the delta in an SSE body, on one
keep-alive connection) or with the official SDK (`sdk`: `responses.connect()` over WebSocket,
`responses.create(stream=True)` over SSE, each event parsed into its class). Turns alternate
between the checkouts (the first 30 warm up); prints each checkout's median, in the bench's
format.
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson
from first_token_ab import SERVER, start  # (which puts this checkout on sys.path)
from openai import OpenAI

from rollout.server.wsframes import frame_at

WARMUP = 30
BODY = {"model": "m", "input": "hi", "store": False}
Turn = Callable[[], float]


def raw_socket(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def raw_ws(port: int) -> Turn:
    sock = raw_socket(port)
    key = base64.b64encode(os.urandom(16))
    sock.sendall(
        b"GET /v1/responses HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\n"
        b"sec-websocket-key: " + key + b"\r\nsec-websocket-version: 13\r\n\r\n"
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(65536)
    payload = orjson.dumps({"type": "response.create", **BODY})
    create = bytes((0x81, 0xFE)) + len(payload).to_bytes(2, "big") + bytes(4) + payload

    def turn() -> float:
        start_at, buf, first = time.perf_counter(), bytearray(), 0.0
        sock.sendall(create)
        while True:
            buf += sock.recv(65536)
            while (frame := frame_at(buf)) is not None and len(buf) >= frame[1]:
                start, end = frame[0], frame[1]
                kind = bytes(buf[start : min(end, start + 60)])
                del buf[:end]
                if not first and b'"response.output_text.delta"' in kind:
                    first = time.perf_counter() - start_at
                if b'"response.completed"' in kind:
                    return first

    return turn


def raw_sse(port: int) -> Turn:
    sock = raw_socket(port)
    body = orjson.dumps({**BODY, "stream": True})
    request = (
        b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )

    def turn() -> float:
        start_at, buf, first = time.perf_counter(), b"", 0.0
        sock.sendall(request)
        while True:
            buf += sock.recv(65536)
            if not first and b"response.output_text.delta" in buf:
                first = time.perf_counter() - start_at
            if buf.endswith(b"0\r\n\r\n"):  # the chunked body's end
                return first

    return turn


def sdk_ws(port: int) -> Turn:
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
    conn: Any = client.responses.connect().__enter__()  # (closed with the process)

    def turn() -> float:
        start_at, first = time.perf_counter(), 0.0
        conn.response.create(**BODY)
        for event in conn:
            if not first and event.type == "response.output_text.delta":
                first = time.perf_counter() - start_at
            if event.type == "response.completed":
                return first
        raise RuntimeError("the connection ended")

    return turn


def sdk_sse(port: int) -> Turn:
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x")

    def turn() -> float:
        start_at, first = time.perf_counter(), 0.0
        with client.responses.create(**BODY, stream=True) as stream:  # type: ignore[call-overload]
            for event in stream:
                if not first and event.type == "response.output_text.delta":
                    first = time.perf_counter() - start_at
        return first

    return turn


CLIENTS = {("raw", "ws"): raw_ws, ("raw", "sse"): raw_sse, ("sdk", "ws"): sdk_ws}
CLIENTS[("sdk", "sse")] = sdk_sse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", nargs="+", help="checkouts (each with its rollout package)")
    parser.add_argument("--client", choices=("raw", "sdk"), required=True)
    parser.add_argument("--transport", choices=("ws", "sse"), required=True)
    parser.add_argument("--turns", type=int, default=400, help="rounds timed (after 30 warm-up)")
    args = parser.parse_args()
    servers = [start(SERVER, root) for root in args.checkouts]
    try:
        turns = [CLIENTS[(args.client, args.transport)](port) for _, port in servers]
        times: list[list[float]] = [[] for _ in turns]
        for round_ in range(args.turns + WARMUP):
            for values, turn in zip(times, turns, strict=True):
                value = turn()
                if round_ >= WARMUP:
                    values.append(value)
    finally:
        for proc, _ in servers:
            proc.kill()
    for root, values in zip(args.checkouts, times, strict=True):
        name = os.path.basename(os.path.abspath(root))
        figure = f"first_delta.{args.transport}.{args.client}.{name}"
        print(f"{figure} {statistics.median(values) * 1000:.4g} ms - info")


if __name__ == "__main__":
    main()
