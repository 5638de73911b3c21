# `rollout bench aimock`: rollout beside a peer, aimock (npm `@copilotkit/aimock`, the version
# pinned by tests/upstream/package.json, installed there by `npm ci`), each in its own process:
# the same 20,000-token answer over SSE and over the Responses WebSocket mode, and the same short
# answer's first delta, read by raw-socket clients that parse framing only (the long stream by
# the events bench's, streams.py), repeats interleaved, medians. Skipped, with the reason, when
# Node or aimock is absent.
from __future__ import annotations

import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import orjson
import trio

import rollout
from rollout.experiments.bench.figure import Figure, Report
from rollout.experiments.bench.streams import (
    CREATE,
    _ws_frame,
    _ws_open,
    next_frame,
    sse_seconds,
    ws_counter,
    ws_frames,
)
from rollout.experiments.harness.procs import running


def _aimock_dir() -> Path:
    """tests/upstream of the checkout (its package.json pins aimock): beside the package when it
    runs from a checkout, else under the working directory (an installed package run from one)."""
    for root in (Path(rollout.__file__).resolve().parent.parent, Path.cwd()):
        if (root / "tests" / "upstream" / "package.json").exists():
            return root / "tests" / "upstream"
    return Path.cwd() / "tests" / "upstream"


AIMOCK_DIR = _aimock_dir()
AIMOCK_CLI = AIMOCK_DIR / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")
# The two prompts, the same for both servers: the long one is the events bench's (streams.py),
# so its clients (sse_seconds, ws_frames) time the long stream.
LONG, SHORT = str(CREATE["input"]), "short answer"

# rollout: the long answer (argv[1] tokens, one delta each) for argv[2], "ok" for anything else.
ROLLOUT_SERVER = """
import sys, rollout
from rollout.experiments.harness.procs import serve_engine
from rollout.model.policy import TextStep
long = TextStep(text=" ".join(["word"] * int(sys.argv[1])))
short = TextStep(text="ok")
engine = rollout.Engine(policy=rollout.ScriptedPolicy(
    lambda ctx: long if ctx.last_user_text == sys.argv[2] else short))
serve_engine(engine)
"""


def missing() -> str | None:
    """Why aimock cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (aimock runs on Node.js)"
    if not AIMOCK_CLI.exists():
        return f"aimock is not installed: run `npm ci` in {AIMOCK_DIR}"
    return None


def fixtures(tokens: int) -> dict[str, object]:
    """aimock's fixtures: the long answer in 5-character chunks ("word "), one delta per word
    as rollout streams it, and the short one."""
    text = " ".join(["word"] * tokens)
    return {
        "fixtures": [
            {"match": {"userMessage": SHORT}, "response": {"content": "ok"}},
            {"match": {"userMessage": LONG}, "response": {"content": text}, "chunkSize": 5},
        ]
    }


@asynccontextmanager
async def aimock(fixture_file: str, timeout: float = 30.0) -> AsyncIterator[int]:
    """A running aimock on a free loopback port (its port), stopped at the end of the block."""
    command = ["node", str(AIMOCK_CLI), "--host", "127.0.0.1", "--port", "0"]
    proc = subprocess.Popen(
        [*command, "--fixtures", fixture_file],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    found = threading.Event()
    port: list[int] = []
    log: list[str] = []

    def read() -> None:  # drained to the end, so aimock never blocks on its own output
        assert proc.stdout is not None
        for line in proc.stdout:
            log.append(line)
            match = LISTENING.search(line)
            if match and not found.is_set():
                port.append(int(match.group(1)))
                found.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        await trio.to_thread.run_sync(found.wait, timeout)
        if not port:
            raise RuntimeError("aimock did not start: " + "".join(log)[-2000:])
        yield port[0]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- raw-socket clients (framing only) ------------------------------------------------------------

DELTA = b'"response.output_text.delta"'
DONE = b'"response.completed"'


def sse_request(prompt: str) -> bytes:
    body = orjson.dumps({"model": "m", "input": prompt, "stream": True, "store": False})
    return (
        b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )


def sse(port: int, prompt: str, count: bool = False) -> tuple[float, float, int]:
    """One SSE response on a fresh connection, read to its chunked body's end: seconds to the
    first delta, seconds to the end, and (with `count`) its events: its `data:` lines, one per
    event from either server."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        start = time.perf_counter()
        sock.sendall(sse_request(prompt))
        first = float("nan")
        tail = b""
        body = bytearray()
        while True:
            data = sock.recv(1 << 20)
            if not data:
                raise ConnectionError("the SSE stream ended early")
            if first != first and DELTA[1:-1] in tail + data:
                first = time.perf_counter() - start
            if count:
                body += data
            tail = (tail + data)[-64:]
            if tail.endswith(b"\r\n0\r\n\r\n"):
                return first, time.perf_counter() - start, body.count(b"data: ")


class RawWs:
    """A WebSocket client that finds frames by their headers and looks only at the start of
    each payload (for its event type)."""

    def __init__(self, port: int) -> None:
        self.sock, self.buf = _ws_open(port)

    def close(self) -> None:
        self.sock.close()

    def frame(self) -> bytes:
        """The first 64 bytes of the next frame's payload."""
        while True:
            head = next_frame(self.buf)
            if head is not None:
                return head
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("the WebSocket stream ended early")
            self.buf += data

    def turn(self, prompt: str) -> tuple[float, float, int]:
        """A response.create: seconds to the first delta, to response.completed, and frames."""
        create = orjson.dumps(
            {"type": "response.create", "model": "m", "input": prompt, "store": False}
        )
        start = time.perf_counter()
        self.sock.sendall(_ws_frame(create))
        first = float("nan")
        frames = 0
        while True:
            head = self.frame()
            frames += 1
            if first != first and DELTA in head:
                first = time.perf_counter() - start
            if DONE in head:
                return first, time.perf_counter() - start, frames


# -- the bench --------------------------------------------------------------------------------


async def side_by_side(
    report: Report, tokens: int = 20_000, repeats: int = 9, shorts: int = 90
) -> None:
    reason = missing()
    if reason is not None:
        print(f"rollout bench aimock: skipped: {reason}", file=sys.stderr, flush=True)
        return
    run = trio.to_thread.run_sync
    with tempfile.NamedTemporaryFile("wb", suffix=".json") as file:
        file.write(orjson.dumps(fixtures(tokens)))
        file.flush()
        async with (
            running(ROLLOUT_SERVER, [str(tokens), LONG]) as server,
            aimock(file.name) as peer,
        ):
            ports = {"rollout": server.port, "aimock": peer}
            ws = {name: RawWs(port) for name, port in ports.items()}
            try:
                got = await run(_measure, ports, ws, repeats, shorts)
            finally:
                for client in ws.values():
                    client.close()
    for figure in figures(got):
        report(figure)


Samples = dict[str, dict[str, list[float]]]  # what -> server -> seconds


def _measure(ports: dict[str, int], ws: dict[str, RawWs], repeats: int, shorts: int) -> Samples:
    """Every measurement, the servers alternating, the first round unmeasured (warm-up)."""
    got: Samples = {}
    names = list(ports)

    def note(what: str, name: str, value: float) -> None:
        got.setdefault(what, {}).setdefault(name, []).append(value)

    for i in range(repeats + 1):
        order = names if i % 2 else names[::-1]
        for name in order:
            if i:
                note("sse.long_stream", name, sse_seconds(ports[name]))
                count = ws_counter(int(got["ws.events"][name][0]))
                note("ws.long_stream", name, ws_frames(ports[name], count))
            else:  # the warm-up round reads every event, to count them
                note("sse.events", name, sse(ports[name], LONG, count=True)[2])
                note("ws.events", name, ws[name].turn(LONG)[2])
        for _ in range(max(1, shorts // repeats) if i else 5):
            for name in order:
                first, _, _ = sse(ports[name], SHORT)
                ws_first, _, _ = ws[name].turn(SHORT)
                if i:
                    note("sse.first_delta", name, first)
                    note("ws.first_delta", name, ws_first)
    return got


TARGETS: dict[str, tuple[str, Callable[[float], bool]] | None] = {
    "sse.long_stream": ("<=1", lambda r: r <= 1),  # no slower than aimock
    "ws.long_stream": ("<=0.5", lambda r: r <= 0.5),  # at most half its time
    "sse.first_delta": None,
    "ws.first_delta": None,
}


def figures(got: Samples) -> list[Figure]:
    """The lines from the samples: for each stream and transport, each server's median time,
    rollout's as a ratio of aimock's (judged against its target, if it has one), and the events
    each server sent for the long stream."""
    out = []
    for what, target in TARGETS.items():
        ours = statistics.median(got[what]["rollout"])
        theirs = statistics.median(got[what]["aimock"])
        out.append(Figure(f"aimock.{what}.rollout", ours * 1000, "ms"))
        out.append(Figure(f"aimock.{what}.aimock", theirs * 1000, "ms"))
        ratio = ours / theirs
        if target is None:
            out.append(Figure(f"aimock.{what}.ratio", ratio, "x"))
        else:
            out.append(Figure(f"aimock.{what}.ratio", ratio, "x", target[0], target[1](ratio)))
    for transport in ("sse", "ws"):
        for name in ("rollout", "aimock"):
            events = max(got[f"{transport}.events"][name])
            out.append(Figure(f"aimock.{transport}.long_stream.events.{name}", events, "events"))
    return out
