# `rollout bench first-token`: time to the first token on a warm WebSocket connection, against
# the round trip of a same-size message to two echoes: a trio-websocket echo (the target's
# baseline) and a minimal echo (a raw trio socket that answers each text frame with one
# pre-encoded frame). Servers in their own processes; one trio-websocket client for all three,
# turns interleaved, medians.
from __future__ import annotations

import statistics
import time

import orjson
from trio_websocket import open_websocket_url

from rollout.experiments.figures import Figure, Report
from rollout.experiments.procs import running

TEXT_SERVER = """
import rollout
from rollout.experiments.procs import serve_engine
engine = rollout.Engine(policy=rollout.ScriptedPolicy([rollout.text("ok")]))
serve_engine(engine)
"""

ECHO_SERVER = """
import trio
from trio_websocket import serve_websocket
async def echo(request):
    ws = await request.accept()
    while True:
        await ws.send_message(await ws.get_message())
async def main():
    async with trio.open_nursery() as n:
        server = await n.start(serve_websocket, echo, "127.0.0.1", 0, None)
        print(server.port, flush=True)
trio.run(main)
"""

# The minimal echo: the handshake, then frame headers only; each client text frame is answered
# with the same pre-encoded server frame (argv[1] bytes of payload), a close with a close.
MINIMAL_ECHO_SERVER = """
import base64, hashlib, sys, trio
size = int(sys.argv[1])
HEAD = bytes((0x81, size)) if size < 126 else b"\\x81\\x7e" + size.to_bytes(2, "big")
FRAME = HEAD + b"x" * size
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
async def serve(stream):
    buf = bytearray()
    while b"\\r\\n\\r\\n" not in buf:
        data = await stream.receive_some(65536)
        if not data:
            return
        buf += data
    end = buf.index(b"\\r\\n\\r\\n") + 4
    key = b""
    for line in bytes(buf[:end]).split(b"\\r\\n"):
        if line.lower().startswith(b"sec-websocket-key:"):
            key = line.split(b":", 1)[1].strip()
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    await stream.send_all(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\n"
        b"Connection: Upgrade\\r\\nSec-WebSocket-Accept: " + accept + b"\\r\\n\\r\\n")
    del buf[:end]
    while True:
        while len(buf) >= 2:
            n, at = buf[1] & 0x7F, 2
            if n == 126:
                n, at = int.from_bytes(buf[2:4], "big"), 4
            elif n == 127:
                n, at = int.from_bytes(buf[2:10], "big"), 10
            at += 4 if buf[1] & 0x80 else 0
            if len(buf) < at + n:
                break
            opcode = buf[0] & 0x0F
            del buf[: at + n]
            if opcode == 8:
                await stream.send_all(b"\\x88\\x02\\x03\\xe8")
                return
            if opcode == 1:
                await stream.send_all(FRAME)
        data = await stream.receive_some(65536)
        if not data:
            return
        buf += data
async def handle(stream):
    try:
        await serve(stream)
    except trio.BrokenResourceError:
        pass
    finally:
        await stream.aclose()
async def main():
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    print(listeners[0].socket.getsockname()[1], flush=True)
    await trio.serve_listeners(handle, listeners)
trio.run(main)
"""


async def first_token(report: Report, samples: int = 200, warmup: int = 20) -> None:
    create = orjson.dumps(
        {"type": "response.create", "model": "m", "input": "hi", "store": False}
    ).decode()
    payload = "x" * len(create)
    ours: list[float] = []
    echo_s: list[float] = []
    minimal_s: list[float] = []
    async with (
        running(TEXT_SERVER) as server,
        running(ECHO_SERVER) as echo,
        running(MINIMAL_ECHO_SERVER, [str(len(payload))]) as minimal,
        open_websocket_url(
            f"ws://127.0.0.1:{server.port}/v1/responses", receive_buffer_size=256 * 1024
        ) as ws,
        open_websocket_url(f"ws://127.0.0.1:{echo.port}/") as ews,
        open_websocket_url(f"ws://127.0.0.1:{minimal.port}/") as mws,
    ):
        for i in range(samples + warmup):  # interleaved; the first turns warm all three up
            start = time.perf_counter()
            await ws.send_message(create)
            first = None
            while True:
                message = str(await ws.get_message())
                if first is None and '"response.output_text.delta"' in message[:60]:
                    first = time.perf_counter() - start
                if '"response.completed"' in message[:60]:
                    break
            rounds = []
            for client in (ews, mws):
                start = time.perf_counter()
                await client.send_message(payload)
                await client.get_message()
                rounds.append(time.perf_counter() - start)
            if i >= warmup and first is not None:
                ours.append(first)
                echo_s.append(rounds[0])
                minimal_s.append(rounds[1])
    o, r, m = (statistics.median(v) for v in (ours, echo_s, minimal_s))
    report(Figure("first_token.warm_connection", o * 1000, "ms"))
    report(Figure("first_token.raw_round_trip", r * 1000, "ms"))
    report(Figure("first_token.ratio", o / r, "x", "<=2", o / r <= 2))
    report(Figure("first_token.minimal_echo_round_trip", m * 1000, "ms"))
    report(Figure("first_token.ratio_vs_minimal_echo", o / m, "x"))
