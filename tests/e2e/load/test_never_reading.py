# A client that never reads, against `rollout serve` in its own process: it floods pings and
# creates on one WebSocket and reads nothing back. The server must stop reading from it
# (backpressure) instead of queueing pongs and events: its resident memory stays within
# MEMORY_BOUND of what it was before the flood, the flooding client's writes stall long before
# FLOOD_BUDGET bytes, and another client is served meanwhile (HTTP and WebSocket).
from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path

import httpx2 as httpx
import orjson
import pytest
import trio
from trio_websocket import open_websocket_url

from support.processes import serve_on_any_port

MEMORY_BOUND = 48 * 1024 * 1024  # growth of the server's resident memory allowed by the flood
FLOOD_BUDGET = 256 * 1024 * 1024  # bytes the client tries to send (a server reading it all fails)
STALL_S = 1.0  # a write blocked this long: the server has stopped reading

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")

HANDSHAKE = (
    b"GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def frame(opcode: int, payload: bytes) -> bytes:
    """One masked client frame (zero mask key: the payload goes as is)."""
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, 0x80 | n])
    else:
        head = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    return head + b"\0\0\0\0" + payload


def rss(pid: int) -> int:
    """Resident memory of process `pid`, in bytes (VmRSS in /proc/PID/status)."""
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    assert match, status
    return int(match.group(1)) * 1024


async def served(port: int) -> None:
    """Another client gets its answers: one HTTP create and one WebSocket create."""
    async with httpx.AsyncClient(timeout=30) as http:
        reply = await http.post(
            f"http://127.0.0.1:{port}/v1/responses", json={"model": "m", "input": "hi"}
        )
    assert reply.status_code == 200 and reply.json()["status"] == "completed"
    with trio.fail_after(30):
        async with open_websocket_url(f"ws://127.0.0.1:{port}/v1/responses") as ws:
            create = {"type": "response.create", "model": "m", "input": "hi", "store": False}
            await ws.send_message(orjson.dumps(create).decode())
            while orjson.loads(await ws.get_message())["type"] != "response.completed":
                pass


async def flood(sock: trio.socket.SocketType, chunk: bytes, proc: subprocess.Popen[str]) -> int:
    """Send `chunk` over and over until a write stalls (or FLOOD_BUDGET is sent); returns the
    bytes sent, and checks the server's memory after each write. Frames are never cut: a
    partial write is continued where it stopped."""
    sent = 0
    view = memoryview(chunk)
    at = 0
    while sent < FLOOD_BUDGET:
        with trio.move_on_after(STALL_S) as stalled:
            n = await sock.send(view[at:])
            sent += n
            at = (at + n) % len(chunk)
        PEAK[0] = max(PEAK[0], rss(proc.pid))
        if stalled.cancelled_caught:
            break
    while at:  # finish the last chunk's frames (the server may not read them: give up then)
        with trio.move_on_after(STALL_S) as stalled:
            at = (at + await sock.send(view[at:])) % len(chunk)
        if stalled.cancelled_caught:
            break
    return sent


PEAK = [0]


async def never_reading(port: int) -> trio.socket.SocketType:
    """A WebSocket whose client reads nothing (not even the handshake's answer)."""
    sock = trio.socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    await sock.connect(("127.0.0.1", port))
    await sock.send(HANDSHAKE)
    return sock


async def test_clients_that_flood_and_never_read_leave_memory_bounded() -> None:
    with serve_on_any_port("--tool-calls", "0", "--log-level", "WARNING") as server:
        proc, port = server.proc, server.port
        await served(port)  # warm: what serving costs is in the baseline
        baseline = PEAK[0] = rss(proc.pid)
        ping = frame(0x9, b"p" * 125)
        create = frame(0x1, orjson.dumps({"type": "response.create", "model": "m", "input": "x"}))
        pinger, creator = await never_reading(port), await never_reading(port)
        pings = await flood(pinger, ping * 4000, proc)  # pings alone: only pongs to queue
        both = await flood(creator, (ping * 40 + create) * 100, proc)  # creates and pings
        await served(port)  # while both floods hold their connections open, unread
        PEAK[0] = max(PEAK[0], rss(proc.pid))
        pinger.close()
        creator.close()
        assert proc.poll() is None, "the server died"
    assert pings < FLOOD_BUDGET and both < FLOOD_BUDGET, "the server read a whole flood"
    assert PEAK[0] - baseline < MEMORY_BOUND, (PEAK[0] - baseline) / 2**20
