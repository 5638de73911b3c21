# `rollout bench first-token`: time to the first token on a warm WebSocket connection, against
# the round trip of a same-size message to two echoes: a trio-websocket echo (the target's
# baseline) and a minimal echo (a raw trio socket that answers each text frame with one
# pre-encoded frame); and against a server that replays rollout's own frames of the same
# response, pre-encoded (the protocol's floor for this client: the client's share of the time).
# Servers in their own processes; one trio-websocket client for all, turns interleaved, medians.
from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Mapping
from typing import IO

import orjson
import trio
from trio_websocket import WebSocketConnection, open_websocket_url

from rollout.experiments.bench.figure import Figure, Report
from rollout.experiments.bench.streams import ws_frames
from rollout.experiments.harness.procs import SERVE_HANDLE, running

TEXT_SERVER = """
import rollout
from rollout.experiments.harness.procs import serve_engine
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

# The minimal servers: the handshake, then frame headers only. Each client text frame is answered
# with pre-encoded server frames, a close with a close. argv[1] says which: "echo:N", one frame
# of N bytes of payload (the minimal echo); "replay:FILE", rollout's own frames of one response
# (a JSON list), those up to its first delta in one write and the rest in another (the floor of
# the protocol for this client: what no server work at all would give).
MINIMAL_SERVER = (
    """
import base64, hashlib, json, sys, trio
def frame(payload):
    n = len(payload)
    if n < 126:
        return bytes((0x81, n)) + payload
    if n < 65536:
        return b"\\x81\\x7e" + n.to_bytes(2, "big") + payload
    return b"\\x81\\x7f" + n.to_bytes(8, "big") + payload
mode, arg = sys.argv[1].split(":", 1)
if mode == "echo":
    ANSWER = [frame(b"x" * int(arg))]
else:
    frames = [f.encode() for f in json.load(open(arg))]
    cut = next(i for i, f in enumerate(frames) if b'"response.output_text.delta"' in f[:60]) + 1
    ANSWER = [b"".join(map(frame, frames[:cut])), b"".join(map(frame, frames[cut:]))]
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
                for chunk in ANSWER:
                    await stream.send_all(chunk)
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
"""
    + SERVE_HANDLE
)


#: The create every first-token turn sends (a same-size message goes to the echoes).
CREATE = orjson.dumps(
    {"type": "response.create", "model": "m", "input": "hi", "store": False}
).decode()


async def first_delta(ws: WebSocketConnection, create: str = CREATE) -> float | None:
    """Send a create; seconds to its first text delta (read on to the completed event)."""
    start = time.perf_counter()
    await ws.send_message(create)
    first = None
    while True:
        message = str(await ws.get_message())
        if first is None and '"response.output_text.delta"' in message[:60]:
            first = time.perf_counter() - start
        if '"response.completed"' in message[:60]:
            return first


async def round_trip(ws: WebSocketConnection, payload: str) -> float:
    """Send `payload` to an echo; seconds to its answer."""
    start = time.perf_counter()
    await ws.send_message(payload)
    await ws.get_message()
    return time.perf_counter() - start


async def interleaved(
    creates: Mapping[str, WebSocketConnection],
    echoes: Mapping[str, WebSocketConnection],
    samples: int,
    warmup: int,
) -> dict[str, float]:
    """Median seconds per connection, by name, over `samples` turns after `warmup` (which warm
    every server up): each turn sends CREATE on each of `creates`, in order, timed to its first
    delta, then a message of its size to each of `echoes`, timed to the answer."""
    payload = "x" * len(CREATE)
    times: dict[str, list[float]] = {name: [] for name in [*creates, *echoes]}
    for i in range(samples + warmup):
        got = {name: await first_delta(ws) for name, ws in creates.items()}
        for name, ws in echoes.items():
            got[name] = await round_trip(ws, payload)
        if i >= warmup:
            for name, value in got.items():
                if value is not None:
                    times[name].append(value)
    return {name: statistics.median(values) for name, values in times.items()}


async def recorded_frames(port: int) -> IO[bytes]:
    """The frames of one response from the server on `port`, as a JSON list in a temporary
    file (closed, and so removed, by the caller: use it as a context manager)."""
    frames: list[str] = []

    def collect(data: bytes) -> bool:
        frames.append(data.decode())
        return b'"response.completed"' in data[:40]

    await trio.to_thread.run_sync(ws_frames, port, collect)
    recorded = tempfile.NamedTemporaryFile(suffix=".json")  # noqa: SIM115 (the caller closes it)
    recorded.write(orjson.dumps(frames))
    recorded.flush()
    return recorded


async def first_token(report: Report, samples: int = 200, warmup: int = 20) -> None:
    async with running(TEXT_SERVER) as server:
        with await recorded_frames(server.port) as replayed:
            async with (
                running(ECHO_SERVER) as echo,
                running(MINIMAL_SERVER, [f"echo:{len(CREATE)}"]) as minimal,
                running(MINIMAL_SERVER, [f"replay:{replayed.name}"]) as replay,
                open_websocket_url(
                    f"ws://127.0.0.1:{server.port}/v1/responses", receive_buffer_size=256 * 1024
                ) as ws,
                open_websocket_url(f"ws://127.0.0.1:{replay.port}/") as rws,
                open_websocket_url(f"ws://127.0.0.1:{echo.port}/") as ews,
                open_websocket_url(f"ws://127.0.0.1:{minimal.port}/") as mws,
            ):
                median = await interleaved(
                    {"ours": ws, "replay": rws}, {"echo": ews, "minimal": mws}, samples, warmup
                )
    o, r, m, f = (median[k] for k in ("ours", "echo", "minimal", "replay"))
    report(Figure("first_token.warm_connection", o * 1000, "ms"))
    report(Figure("first_token.raw_round_trip", r * 1000, "ms"))
    report(Figure("first_token.ratio", o / r, "x", "<=1.5", o / r <= 1.5))
    report(Figure("first_token.minimal_echo_round_trip", m * 1000, "ms"))
    report(Figure("first_token.ratio_vs_minimal_echo", o / m, "x"))
    report(Figure("first_token.replayed_frames", f * 1000, "ms"))
    report(Figure("first_token.replayed_ratio", f / r, "x"))
