"""Graceful shutdown: stop accepting, let running responses finish within the grace period, end
the rest as failed (server_error), close WebSockets with 1001, and exit cleanly on SIGTERM."""

from __future__ import annotations

import signal
import socket
from typing import Any

import orjson
import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed, open_websocket_url

import rollout
from rollout.client import HttpClient
from rollout.engine.ending import SHUTDOWN
from rollout.model.profiles import InferenceProfile
from support.processes import finish, serve_process
from support.rawhttp import post
from support.servers import Served, serving
from support.tools import BARE_EXEC_TOOL
from support.waits import TIMEOUT, wait_for

SLOW = InferenceProfile(name="slow", decode_tps=100)  # 50 tokens: about half a second


def engine(text: str = "word " * 50) -> rollout.Engine:
    return rollout.Engine(policy=rollout.ScriptedPolicy([rollout.text(text)]), inference=SLOW)


async def stream_types(server: Served, done: list[Any]) -> None:
    async with HttpClient(server.http_base_url) as http:
        body = {"model": "m", "input": "hi", "stream": True}
        done.extend([e async for e in http.events("/responses", body)])


async def test_running_response_finishes_within_the_grace_period() -> None:
    stop = trio.Event()
    done: list[Any] = []
    async with (
        serving(engine(), stop=stop, shutdown_grace_s=5) as server,
        trio.open_nursery() as clients,
    ):
        clients.start_soon(stream_types, server, done)
        await wait_for(lambda: server.engine.running)
        stop.set()
        await trio.testing.wait_all_tasks_blocked()  # the listener has closed by now
        with pytest.raises(OSError):  # no longer accepting
            await trio.open_tcp_stream("127.0.0.1", server.port)
    assert done[-1].type == "response.completed"


async def test_responses_past_the_grace_period_end_failed() -> None:
    stop = trio.Event()
    done: list[Any] = []
    async with (
        serving(engine("word " * 500), stop=stop, shutdown_grace_s=0.1) as server,
        trio.open_nursery() as clients,
    ):
        clients.start_soon(stream_types, server, done)
        await wait_for(lambda: server.engine.running)
        stop.set()
    assert done[-1].type == "response.failed"
    assert done[-1].response.error.code == "server_error"
    assert done[-1].response.error.message == SHUTDOWN


async def test_suspended_append_rollout_ends_and_websocket_closes_1001() -> None:
    stop = trio.Event()
    policy = rollout.ScriptedPolicy([rollout.call("exec", {"cmd": "ls"}), rollout.text("ok")])
    frames: list[dict[str, Any]] = []
    code: list[int | None] = []
    async with (
        serving(policy, stop=stop, shutdown_grace_s=0.1) as server,
        open_websocket_url(server.ws_url) as ws,
    ):
        create = {"type": "response.create", "shape": "append", "model": "m", "input": "go"}
        create["tools"] = [BARE_EXEC_TOOL]
        await ws.send_message(orjson.dumps(create).decode())
        while True:
            frames.append(orjson.loads(await ws.get_message()))
            if frames[-1]["type"] == "response.done":
                break
        stop.set()
        try:
            while True:
                frames.append(orjson.loads(await ws.get_message()))
        except ConnectionClosed as closed:
            code.append(closed.reason.code)
    assert frames[-1]["type"] == "response.failed"
    assert frames[-1]["response"]["error"] == {"code": "server_error", "message": SHUTDOWN}
    assert code == [1001]


def test_sigterm_stops_the_cli_server_cleanly() -> None:
    with serve_process("--log-level", "WARNING") as served:
        err = finish(served.proc, signal.SIGTERM)
        assert served.proc.returncode == 0, err
        assert "Traceback" not in err


async def test_suspended_rollouts_alone_do_not_hold_the_grace_period() -> None:
    """With only append rollouts waiting for tool outputs (one over WebSocket, one suspended
    after an HTTP pause), shutdown ends them at once instead of waiting out the grace."""
    stop = trio.Event()
    policy = rollout.ScriptedPolicy(lambda ctx: rollout.call("exec", {"cmd": "ls"}))
    ws_frames: list[dict[str, Any]] = []
    with trio.fail_after(30):  # "did not wait out the grace": the grace is an hour
        async with serving(policy, stop=stop, shutdown_grace_s=3600) as server:
            async with HttpClient(server.http_base_url) as http:
                body = {"model": "m", "input": "go", "stream": True, "shape": "append"}
                paused = [
                    e async for e in http.events("/responses", {**body, "tools": [BARE_EXEC_TOOL]})
                ]
            assert paused[-1].type == "response.done"
            async with open_websocket_url(server.ws_url) as ws:
                create = {"type": "response.create", "shape": "append", "model": "m"}
                create["tools"] = [BARE_EXEC_TOOL]
                await ws.send_message(orjson.dumps({**create, "input": "go"}).decode())
                while not ws_frames or ws_frames[-1]["type"] != "response.done":
                    ws_frames.append(orjson.loads(await ws.get_message()))
                stop.set()
                with pytest.raises(ConnectionClosed):
                    while True:
                        ws_frames.append(orjson.loads(await ws.get_message()))
    assert ws_frames[-1]["type"] == "response.failed"
    assert ws_frames[-1]["response"]["error"]["message"] == SHUTDOWN


def test_a_second_sigterm_stops_at_once_without_a_traceback() -> None:
    """The first SIGTERM starts the graceful shutdown, which waits for a running response (it
    sits in 60 s of injected latency, the grace is 60 s); the second stops at once: exit
    status 128 + 15, and no traceback."""
    argv = ["--log-level", "WARNING", "--tool-calls", "0"]
    argv += ["--shutdown-grace", "60", "--fault-latency", "60"]
    with (
        serve_process(*argv) as served,
        socket.create_connection(("127.0.0.1", served.port), timeout=TIMEOUT) as client,
    ):
        proc = served.proc
        client.sendall(post({"model": "m", "input": "hi", "stream": True}))
        seen = b""
        while b"response.created" not in seen:  # running now, for 60 s
            chunk = client.recv(65536)
            assert chunk, seen
            seen += chunk
        assert proc.stderr is not None
        proc.send_signal(signal.SIGTERM)
        while "shutting down" not in (line := proc.stderr.readline()):
            assert line, "the server exited after the first signal"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == 128 + signal.SIGTERM
        rest = proc.stderr.read()
        assert "Traceback" not in rest and "ExceptionGroup" not in rest, rest[-2000:]
        assert "second SIGTERM" in rest
