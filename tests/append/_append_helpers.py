# Shared helpers of the append-shape tests: the scripted tool rollout, an in-process server for
# trio tests, a raw WebSocket reader of JSON frames with a timeout, event checks and polling.
from __future__ import annotations

import functools
import math
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import orjson
import trio
from trio_websocket import WebSocketConnection, open_websocket_url

import rollout
from protocol import codec
from protocol.items import Item, Tool
from rollout.engine.engine import Engine
from rollout.model.policy import CallStep, FunctionCallSpec, Policy, ScriptedPolicy, call, text
from rollout.model.profiles import InferenceProfile
from rollout.service.config import ServerConfig
from rollout.service.live import LiveRollouts
from rollout.service.service import Service
from rollout.testing.thread import ServerThread

MODEL = "gpt-test"
FINAL = "All done: the suite is green."
INSTRUCTIONS = "You are a careful coding agent. Run one command at a time with exec."
TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete"})
SLOW = InferenceProfile(name="slow", decode_tps=50)
TIMEOUT = 5.0

EXEC_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "exec",
    "description": "Run a shell command in the sandbox and return its output.",
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
}


def cmd(i: int) -> str:
    return f"pytest -q tests/test_step_{i}.py"


def tool_script(turns: int, final: str = FINAL) -> ScriptedPolicy:
    """`turns` exec calls (one per model turn), then the text answer `final`."""
    return ScriptedPolicy([call("exec", {"cmd": cmd(i)}) for i in range(turns)] + [text(final)])


def parallel(*cmds: str) -> CallStep:
    """One step with a parallel exec call per command."""
    return CallStep(
        calls=tuple(
            FunctionCallSpec(name="exec", arguments=orjson.dumps({"cmd": c}).decode()) for c in cmds
        )
    )


def body(**extra: Any) -> dict[str, Any]:
    """An append-shape create body (no `type`)."""
    out: dict[str, Any] = {
        "model": MODEL,
        "input": "Fix the failing tests.",
        "instructions": INSTRUCTIONS,
        "tools": [EXEC_TOOL],
        "shape": "append",
        "store": False,
    }
    out.update(extra)
    return out


def create_frame(**extra: Any) -> dict[str, Any]:
    return {"type": "response.create", **body(**extra)}


def output(call_id: str, out: str = "exit 0") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": out}


def append_frame(response_id: str, items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "response.append", "response_id": response_id, "input": list(items)}


def decode_items(items: Sequence[dict[str, Any]]) -> list[Item]:
    """Wire items as the server's item types (for building a reference Context)."""
    return list(codec.decode_create({"model": MODEL, "input": list(items)}).input)


def decode_tools(tools: Sequence[dict[str, Any]]) -> list[Tool]:
    return list(codec.decode_create({"model": MODEL, "input": "x", "tools": list(tools)}).tools)


# -- servers ------------------------------------------------------------------------------------


@attrs.define
class Server:
    engine: Engine
    port: int
    rollouts: Service

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/responses"


@asynccontextmanager
async def running(
    policy: Policy,
    *,
    inference: InferenceProfile | None = None,
    config: ServerConfig | None = None,
) -> AsyncIterator[Server]:
    """A fresh in-process server for the block (`rollout.serve` in a nursery)."""
    engine = Engine(policy=policy)
    if inference is not None:
        engine.inference = inference
    host = Service(engine, config or ServerConfig())
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, service=host))
        yield Server(engine, port, host)
        nursery.cancel_scope.cancel()


async def wait_for(check: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    """Poll `check` (background billing, parking, ...) until true, or fail."""
    with trio.move_on_after(timeout):
        while not check():
            await trio.sleep(0.01)
    assert check(), "timed out waiting for the server"


# -- raw WebSocket frames -----------------------------------------------------------------------


@attrs.define
class Raw:
    """A raw WebSocket connection: JSON frames out, every received frame kept in order."""

    ws: WebSocketConnection
    received: list[dict[str, Any]] = attrs.field(factory=list)

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send_message(orjson.dumps(frame).decode())

    async def recv(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        with trio.fail_after(timeout):
            frame = orjson.loads(await self.ws.get_message())
        self.received.append(frame)
        return frame

    async def until(
        self, stop: Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT
    ) -> list[dict[str, Any]]:
        """Frames up to and including the first one `stop` accepts."""
        out: list[dict[str, Any]] = []
        with trio.fail_after(timeout):
            while True:
                frame = await self.recv(math.inf)
                out.append(frame)
                if stop(frame):
                    return out

    async def to_pause_or_end(self, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
        return await self.until(lambda f: f["type"] in TERMINAL | {"response.done"}, timeout)

    async def error(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next frame, which must be an `error` event; returns its `error` payload."""
        frame = await self.recv(timeout)
        assert frame["type"] == "error", frame
        return frame["error"]

    async def nothing(self, seconds: float = 0.2) -> None:
        """No frame arrives within `seconds`."""
        with trio.move_on_after(seconds):
            frame = await self.recv(math.inf)
            raise AssertionError(f"unexpected frame {frame}")

    async def aclose(self) -> None:
        await self.ws.aclose()


@asynccontextmanager
async def raw_ws(url: str, api_key: str | None = None) -> AsyncIterator[Raw]:
    headers = [(b"authorization", f"Bearer {api_key}".encode())] if api_key else []
    async with open_websocket_url(url, extra_headers=headers) as ws:
        yield Raw(ws)


# -- event checks -------------------------------------------------------------------------------


def types(frames: Sequence[dict[str, Any]]) -> list[str]:
    return [f["type"] for f in frames]


def pending_ids(pause: dict[str, Any]) -> list[str]:
    assert pause["type"] == "response.done", pause
    return [p["call_id"] for p in pause["pending_calls"]]


def assert_contiguous(frames: Sequence[dict[str, Any]], start: int = 0) -> None:
    """`sequence_number` runs start, start+1, ... over the response's events."""
    seqs = [f["sequence_number"] for f in frames if f["type"] != "error"]
    assert seqs == list(range(start, start + len(seqs))), seqs


def append_host(server: Server | ServerThread) -> LiveRollouts:
    """The server's live append rollouts."""
    if isinstance(server, ServerThread):
        return server.service.live
    return server.rollouts.live
