# `rollout bench events`: events per second on one long stream, over SSE and over WebSocket,
# each against a baseline fed the same bytes and measured side by side (interleaved repeats,
# medians). Servers run in child processes; the client is a raw socket that parses framing only
# (chunked-body end for SSE, frame headers for WebSocket), so it is not the bottleneck.
from __future__ import annotations

import socket
import statistics
import tempfile
import time
from collections.abc import Callable

import h11
import orjson
import trio

from rollout.experiments.bench.figure import Figure, Report
from rollout.experiments.harness.procs import SERVE_HANDLE, running

# A rollout server streaming one long answer (argv[1] tokens), unpaced.
ROLLOUT_SERVER = """
import sys, rollout
from rollout.experiments.harness.procs import serve_engine
from rollout.model.policy import TextStep
text = " ".join(["word"] * int(sys.argv[1]))
engine = rollout.Engine(policy=rollout.ScriptedPolicy(lambda ctx: TextStep(text=text)))
serve_engine(engine)
"""

# The minimal coalescing h11 SSE sender: each event (already encoded, from the file argv[1]) is
# appended to an outbox; a writer task sends what gathered as one chunk in one write.
SSE_BASELINE = (
    """
import sys, orjson, h11, trio
events = [e.encode() for e in orjson.loads(open(sys.argv[1], "rb").read())]
async def handle(stream):
    conn = h11.Connection(h11.SERVER)
    while True:
        ev = conn.next_event()
        if ev is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(65536))
        elif isinstance(ev, h11.EndOfMessage):
            break
    head = conn.send(h11.Response(status_code=200, headers=[
        ("content-type", "text/event-stream"), ("transfer-encoding", "chunked")]))
    out = bytearray()
    wake, drained, done = trio.Event(), trio.Event(), trio.Event()
    ending = False
    async def writer():
        nonlocal out, wake, head
        while True:
            await wake.wait()
            wake = trio.Event()
            data, head = head, b""
            if out:
                body, out = out, bytearray()
                data += conn.send(h11.Data(data=bytes(body)))
            if data:
                await stream.send_all(data)
            drained.set()
            if ending and not out:
                return
    async with trio.open_nursery() as n:
        n.start_soon(writer)
        for e in events:
            out += e
            wake.set()
            if len(out) > 256 * 1024:
                drained = trio.Event()
                await drained.wait()
        ending = True
        wake.set()
    await stream.send_all(conn.send(h11.EndOfMessage()))
    await stream.aclose()
"""
    + SERVE_HANDLE
)

# Rollout's own WebSocket transport fed the pre-encoded frames of the file argv[1].
WS_BASELINE = (
    """
import sys, orjson, trio
from rollout.server.wsconn import WsConnection
frames = [f.encode() for f in orjson.loads(open(sys.argv[1], "rb").read())]
async def handle(stream):
    try:
        await serve(stream)
    except Exception as exc:
        print(repr(exc), file=sys.stderr)
async def serve(stream):
    head = bytearray()
    while b"\\r\\n\\r\\n" not in head:
        head += await stream.receive_some(65536)
    end = head.index(b"\\r\\n\\r\\n") + 4
    async with trio.open_nursery() as n:
        ws = WsConnection(stream, 1 << 24)
        await ws.accept(bytes(head[:end]), n, trailing=bytes(head[end:]))
        await ws.get_message()
        for f in frames:
            await ws.send_message(f)
        await ws.flush()
        await ws.aclose()
"""
    + SERVE_HANDLE
)

CREATE = {"model": "m", "input": "go", "store": False}
WS_KEY = b"dGhlIHNhbXBsZSBub25jZQ=="


def _sse_request() -> bytes:
    body = orjson.dumps({**CREATE, "stream": True})
    return (
        b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )


def sse_events(port: int) -> list[str]:
    """One stream read with h11 (not timed): its events, each as framed on the wire."""
    client = h11.Connection(h11.CLIENT)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_sse_request())
        body = bytearray()
        while True:
            event = client.next_event()
            if event is h11.NEED_DATA:
                client.receive_data(sock.recv(1 << 20))
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
    return [block.decode() + "\n\n" for block in bytes(body).split(b"\n\n") if block]


def sse_seconds(port: int) -> float:
    """Send the create, read until the chunked body's last chunk (framing only)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        start = time.perf_counter()
        sock.sendall(_sse_request())
        tail = b""
        while True:
            data = sock.recv(1 << 20)
            if not data:
                raise ConnectionError("the SSE stream ended early")
            tail = (tail + data)[-16:]
            if tail.endswith(b"\r\n0\r\n\r\n"):
                return time.perf_counter() - start


def _ws_frame(payload: bytes) -> bytes:
    """A masked client text frame (mask 0: the payload goes as is)."""
    n = len(payload)
    if n < 126:
        head = bytes((0x81, 0x80 | n))
    elif n < 1 << 16:
        head = bytes((0x81, 0xFE)) + n.to_bytes(2, "big")
    else:
        head = bytes((0x81, 0xFF)) + n.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


def _ws_open(port: int) -> tuple[socket.socket, bytearray]:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        b"GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: " + WS_KEY + b"\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    return sock, buf[buf.index(b"\r\n\r\n") + 4 :]


def next_frame(buf: bytearray, keep: int = 64) -> bytes | None:
    """The first `keep` bytes of the payload of the first frame in `buf`, which is removed
    from it; None while that frame is incomplete (read more)."""
    if len(buf) < 2:
        return None
    n, at = buf[1] & 0x7F, 2
    if n == 126:
        n, at = (int.from_bytes(buf[2:4], "big"), 4) if len(buf) >= 4 else (-1, 0)
    elif n == 127:
        n, at = (int.from_bytes(buf[2:10], "big"), 10) if len(buf) >= 10 else (-1, 0)
    if n < 0 or len(buf) < at + n:
        return None
    head = bytes(buf[at : at + min(n, keep)])
    del buf[: at + n]
    return head


def ws_frames(port: int, on: Callable[[bytes], bool]) -> float:
    """Send a create, then read frames (headers parsed, payloads skipped unless `on` wants
    them: it gets each payload and says whether it was the last); the seconds it took."""
    sock, buf = _ws_open(port)
    with sock:
        create = orjson.dumps({"type": "response.create", **CREATE})
        start = time.perf_counter()
        sock.sendall(_ws_frame(create))
        pos = 0
        while True:
            while True:  # every complete frame in the buffer
                if len(buf) - pos < 2:
                    break
                n = buf[pos + 1] & 0x7F
                at = pos + 2
                if n == 126:
                    if len(buf) - pos < 4:
                        break
                    n, at = int.from_bytes(buf[pos + 2 : pos + 4], "big"), pos + 4
                elif n == 127:
                    if len(buf) - pos < 10:
                        break
                    n, at = int.from_bytes(buf[pos + 2 : pos + 10], "big"), pos + 10
                if len(buf) < at + n:
                    break
                pos = at + n
                if on(bytes(buf[at : at + n])):
                    return time.perf_counter() - start
            del buf[:pos]
            pos = 0
            data = sock.recv(1 << 20)
            if not data:
                raise ConnectionError("the WebSocket stream ended early")
            buf += data


def ws_counter(count: int) -> Callable[[bytes], bool]:
    seen = 0

    def last(_: bytes) -> bool:
        nonlocal seen
        seen += 1
        return seen >= count

    return last


async def events_per_second(report: Report, tokens: int = 20_000, repeats: int = 80) -> None:
    run = trio.to_thread.run_sync
    async with running(ROLLOUT_SERVER, [str(tokens)]) as server:
        events = await run(sse_events, server.port)
        frames: list[str] = []

        def collect(payload: bytes) -> bool:
            frames.append(payload.decode())
            return b'"response.completed"' in payload[:40]

        await run(ws_frames, server.port, collect)
        with (
            tempfile.NamedTemporaryFile(suffix=".json") as sse_file,
            tempfile.NamedTemporaryFile(suffix=".json") as ws_file,
        ):
            sse_file.write(orjson.dumps(events))
            sse_file.flush()
            ws_file.write(orjson.dumps(frames))
            ws_file.flush()
            async with (
                running(SSE_BASELINE, [sse_file.name]) as sse_base,
                running(WS_BASELINE, [ws_file.name]) as ws_base,
            ):
                times: dict[str, list[float]] = {k: [] for k in ("sse", "sse0", "ws", "ws0")}
                for i in range(repeats + 1):  # interleaved; the first round warms up
                    got = {
                        "sse": await run(sse_seconds, server.port),
                        "sse0": await run(sse_seconds, sse_base.port),
                        "ws": await run(ws_frames, server.port, ws_counter(len(frames))),
                        "ws0": await run(ws_frames, ws_base.port, ws_counter(len(frames))),
                    }
                    if i:
                        for k, v in got.items():
                            times[k].append(v)
    rate = {
        k: (len(events) if k.startswith("sse") else len(frames)) / statistics.median(v)
        for k, v in times.items()
    }
    report(Figure("events_per_second.sse.ours", rate["sse"], "ev/s"))
    report(Figure("events_per_second.sse.coalescing_h11_baseline", rate["sse0"], "ev/s"))
    ratio = rate["sse"] / rate["sse0"]
    report(Figure("events_per_second.sse.ratio", ratio, "x", ">=0.95", ratio >= 0.95))
    report(Figure("events_per_second.ws.ours", rate["ws"], "ev/s"))
    report(Figure("events_per_second.ws.own_transport_baseline", rate["ws0"], "ev/s"))
    ratio = rate["ws"] / rate["ws0"]
    report(Figure("events_per_second.ws.ratio", ratio, "x", ">=0.7", ratio >= 0.7))
