"""Instructions per request of a `rollout serve` process, counted by valgrind's callgrind: a
figure that does not move with the machine's load (the same count twice, give or take 0.1%), for
comparing two versions of the request path while other work runs. It is not a time: a cache miss
or a system call's kernel work costs no more here than an add. `rollout bench` says what the
times are; this says whether a change made the path shorter.

    python scripts/icount.py [KIND ...] [-n N] [--warm W]

Kinds, each a fresh server (its process's instructions counted from after its W warm-up
requests to after its N measured ones, divided by N):

- behind an aimock upstream (`rollout serve --upstream`, chat completions; the fixtures and
  requests of `rollout bench gateway`): `sse` (a short answer, a fresh connection each), `ws`
  (the same on one WebSocket), `long` (5,000 deltas over SSE), `full` (a 50,000-token history
  resent whole over SSE), `chain` (one turn chained to a stored response over HTTP), `wstrip`
  (a function call and its output's answer, chained on one WebSocket: two responses);
- the simulated model (`rollout serve`, the instant profile): `sim-sse`, `sim-ws`, and
  `get404` (a `GET /nothing` answered 404 on a fresh connection: the HTTP transport's own
  cost, with no engine work).

Needs valgrind, and for the upstream kinds Node and aimock (`npm ci` in tests/upstream).
Prints `icount.KIND VALUE Minstr/request` lines.
"""

from __future__ import annotations

import argparse
import glob
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import orjson
import trio

from rollout.experiments.bench import peer
from rollout.experiments.bench.gateway import (
    LONG,
    NEXT,
    SHORT,
    TOOL,
    TOOLS,
    _user,
    fixtures,
    history,
)
from rollout.experiments.bench.gwclients import Turn, WsSession, sse_turn
from rollout.experiments.bench.gwpeers import Gateway, free_port

UPSTREAM = ("sse", "ws", "long", "full", "chain", "wstrip")
SIMULATED = ("sim-sse", "sim-ws", "get404")


def _turns(kind: str, port: int) -> tuple[Callable[[], object], Callable[[], None]]:
    """One request of `kind` against the server on `port`, and what closes its client."""
    short = {"model": "m", "input": SHORT, "store": False}
    ws = WsSession(port) if kind in ("ws", "wstrip", "sim-ws") else None
    old = history() if kind in ("full", "chain") else []
    head: list[str] = []

    def chained() -> Turn:
        if not head:  # the stored response every measured turn continues (not counted)
            body = {"model": "m", "input": [*old, _user(NEXT)], "store": True}
            head.append(str(sse_turn(port, body, keep=True).response["id"]))
        body = {"model": "m", "previous_response_id": head[0], "input": [_user(NEXT)]}
        return sse_turn(port, {**body, "store": True}, keep=True)

    def trip() -> Turn:
        assert ws is not None
        call = ws.turn({"model": "m", "input": TOOL, "tools": TOOLS, "store": False})
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "a.py b.py"}
        body: dict[str, Any] = {"model": "m", "previous_response_id": call.response["id"]}
        return ws.turn({**body, "input": [output], "tools": TOOLS, "store": False})

    full = {"model": "m", "input": [*old, _user(NEXT)], "store": False}
    one: Callable[[], object] = {
        "sse": lambda: sse_turn(port, short),
        "sim-sse": lambda: sse_turn(port, short),
        "ws": lambda: ws.turn(short),  # type: ignore[union-attr]
        "sim-ws": lambda: ws.turn(short),  # type: ignore[union-attr]
        "long": lambda: sse_turn(port, {"model": "m", "input": LONG, "store": False}),
        "full": lambda: sse_turn(port, full),
        "chain": chained,
        "wstrip": trip,
        "get404": lambda: not_found(port),
    }[kind]
    return one, (ws.close if ws is not None else lambda: None)


def not_found(port: int) -> bytes:
    """`GET /nothing` on a fresh connection, read to the end of its 404 (the server closes
    nothing: the client does, once the body is in)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(b"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            data += _received(sock)
        head, _, body = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 404 "):
            raise RuntimeError(f"expected a 404: {head[:200]!r}")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        while len(body) < length:
            body += _received(sock)
        return body


def _received(sock: socket.socket) -> bytes:
    data = sock.recv(65536)
    if not data:
        raise ConnectionError("the server closed the connection early")
    return data


def count(kind: str, n: int, warm: int, upstream: str | None) -> float:
    """Millions of instructions per request of `kind`."""
    out = tempfile.mkdtemp(prefix="icount-")
    port = free_port()
    serve = ["serve", "--port", str(port), "--log-level", "WARNING"]
    if upstream is not None:
        serve += ["--upstream", upstream]
    else:
        serve += ["--profile", "instant"]
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}/callgrind.%p",
        sys.executable,
        "-m",
        "rollout.cli",
        *serve,
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        Gateway("rollout", proc, port).wait_listening(timeout=600)
        one, close = _turns(kind, port)
        for _ in range(warm):
            one()
        subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], capture_output=True)
        for _ in range(n):
            one()
        subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], capture_output=True)
        close()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait()
    total = 0
    for name in glob.glob(os.path.join(out, "callgrind.*")):
        with open(name) as file:
            for line in file:
                if line.startswith(("summary:", "totals:")):
                    total = max(total, int(line.split()[1]))
    return total / n / 1e6


async def _main(kinds: list[str], n: int, warm: int) -> None:
    needs_upstream = any(kind in UPSTREAM for kind in kinds)
    reason = peer.missing() if needs_upstream else None
    if reason is not None:
        sys.exit(f"icount: {reason}")
    with tempfile.NamedTemporaryFile("wb", suffix=".json") as file:
        file.write(orjson.dumps(fixtures()))
        file.flush()
        if needs_upstream:
            async with peer.aimock(file.name) as port:
                upstream = f"http://127.0.0.1:{port}/v1"
                await _each(kinds, n, warm, upstream)
        else:
            await _each(kinds, n, warm, None)


async def _each(kinds: list[str], n: int, warm: int, upstream: str | None) -> None:
    for kind in kinds:
        behind = upstream if kind in UPSTREAM else None
        value = await trio.to_thread.run_sync(count, kind, n, warm, behind)
        print(f"icount.{kind} {value:.4g} Minstr/request", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kinds", nargs="*", metavar="KIND", help="default: sse ws full")
    parser.add_argument("-n", type=int, default=100, help="measured requests (default 100)")
    parser.add_argument("--warm", type=int, default=30, help="warm-up requests (default 30)")
    args = parser.parse_args()
    unknown = [kind for kind in args.kinds if kind not in (*UPSTREAM, *SIMULATED)]
    if unknown:
        parser.error(f"unknown kind {unknown[0]!r}: one of {', '.join((*UPSTREAM, *SIMULATED))}")
    trio.run(_main, args.kinds or ["sse", "ws", "full"], args.n, args.warm)


if __name__ == "__main__":
    main()
