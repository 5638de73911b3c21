"""Graceful shutdown: stop accepting, let running responses finish within the grace period, end
the rest as incomplete, close WebSockets with 1001, and exit cleanly on SIGTERM."""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import orjson
import pytest
import trio
from trio_websocket import ConnectionClosed, open_websocket_url

import rollout
from rollout.client import HttpClient
from rollout.model.profiles import InferenceProfile
from rollout.service.config import ServerConfig

SLOW = InferenceProfile(name="slow", decode_tps=100)  # 50 tokens: about half a second


def engine(text: str = "word " * 50) -> rollout.Engine:
    return rollout.Engine(policy=rollout.ScriptedPolicy([rollout.text(text)]), inference=SLOW)


async def stream_types(port: int) -> list[Any]:
    async with HttpClient(f"http://127.0.0.1:{port}/v1") as http:
        return [
            e
            async for e in http.events("/responses", {"model": "m", "input": "hi", "stream": True})
        ]


async def test_running_response_finishes_within_the_grace_period() -> None:
    stop = trio.Event()
    done: list[Any] = []
    async with trio.open_nursery() as nursery:
        config = ServerConfig(shutdown_grace_s=5)
        port = await nursery.start(
            functools.partial(rollout.serve, engine(), config=config, stop=stop)
        )

        async def client() -> None:
            done.extend(await stream_types(port))

        nursery.start_soon(client)
        await trio.sleep(0.1)
        stop.set()
        await trio.sleep(0.05)
        with pytest.raises(OSError):  # no longer accepting
            await trio.open_tcp_stream("127.0.0.1", port)
    assert done[-1].type == "response.completed"


async def test_responses_past_the_grace_period_end_incomplete() -> None:
    stop = trio.Event()
    done: list[Any] = []
    async with trio.open_nursery() as nursery:
        config = ServerConfig(shutdown_grace_s=0.1)
        port = await nursery.start(
            functools.partial(rollout.serve, engine("word " * 500), config=config, stop=stop)
        )

        async def client() -> None:
            done.extend(await stream_types(port))

        nursery.start_soon(client)
        await trio.sleep(0.1)
        stop.set()
    assert done[-1].type == "response.incomplete"
    assert done[-1].response.incomplete_details.reason == "shutdown"


async def test_suspended_append_rollout_ends_and_websocket_closes_1001() -> None:
    stop = trio.Event()
    policy = rollout.ScriptedPolicy([rollout.call("exec", {"cmd": "ls"}), rollout.text("ok")])
    frames: list[dict[str, Any]] = []
    code: list[int | None] = []
    async with trio.open_nursery() as nursery:
        config = ServerConfig(shutdown_grace_s=0.1)
        port = await nursery.start(
            functools.partial(
                rollout.serve, rollout.Engine(policy=policy), config=config, stop=stop
            )
        )
        async with open_websocket_url(f"ws://127.0.0.1:{port}/v1/responses") as ws:
            create = {"type": "response.create", "shape": "append", "model": "m", "input": "go"}
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
    assert frames[-1]["type"] == "response.incomplete"
    assert frames[-1]["response"]["incomplete_details"]["reason"] == "shutdown"
    assert code == [1001]


def test_sigterm_stops_the_cli_server_cleanly(tmp_path: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rollout.cli",
            "serve",
            "--port",
            str(port),
            "--log-level",
            "WARNING",
        ],
        env=env,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert b"Traceback" not in (proc.stderr.read() if proc.stderr else b"")
    finally:
        proc.kill()
        proc.wait()


async def test_suspended_rollouts_alone_do_not_hold_the_grace_period() -> None:
    """With only append rollouts waiting for tool outputs (one over WebSocket, one suspended
    after an HTTP pause), shutdown ends them at once instead of waiting out the grace."""
    stop = trio.Event()
    policy = rollout.ScriptedPolicy(lambda ctx: rollout.call("exec", {"cmd": "ls"}))
    tool = {"type": "function", "name": "exec", "parameters": {"type": "object"}}
    ws_frames: list[dict[str, Any]] = []
    with trio.fail_after(30):  # the grace is an hour
        async with trio.open_nursery() as nursery:
            config = ServerConfig(shutdown_grace_s=3600)
            port = await nursery.start(
                functools.partial(
                    rollout.serve, rollout.Engine(policy=policy), config=config, stop=stop
                )
            )
            async with HttpClient(f"http://127.0.0.1:{port}/v1") as http:
                body = {"model": "m", "input": "go", "stream": True, "shape": "append"}
                paused = [e async for e in http.events("/responses", {**body, "tools": [tool]})]
            assert paused[-1].type == "response.done"
            async with open_websocket_url(f"ws://127.0.0.1:{port}/v1/responses") as ws:
                create = {"type": "response.create", "shape": "append", "model": "m"}
                await ws.send_message(orjson.dumps({**create, "input": "go"}).decode())
                while not ws_frames or ws_frames[-1]["type"] != "response.done":
                    ws_frames.append(orjson.loads(await ws.get_message()))
                stop.set()
                with pytest.raises(ConnectionClosed):
                    while True:
                        ws_frames.append(orjson.loads(await ws.get_message()))
    assert ws_frames[-1]["type"] == "response.incomplete"
    assert ws_frames[-1]["response"]["incomplete_details"]["reason"] == "shutdown"


def test_a_second_sigterm_stops_at_once_without_a_traceback() -> None:
    """The first SIGTERM starts the graceful shutdown, which waits for a running response (it
    sits in 60 s of injected latency, the grace is 60 s); the second stops at once: exit
    status 128 + 15, and no traceback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = ["serve", "--port", str(port), "--log-level", "WARNING", "--tool-calls", "0"]
    argv += ["--shutdown-grace", "60", "--fault-latency", "60"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollout.cli", *argv], env=env, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                client = socket.create_connection(("127.0.0.1", port), timeout=0.2)
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
        body = b'{"model": "m", "input": "hi", "stream": true}'
        client.sendall(
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        client.settimeout(20)
        seen = b""
        while b"response.created" not in seen:  # running now, for 60 s
            chunk = client.recv(65536)
            assert chunk, seen
            seen += chunk
        assert proc.stderr is not None
        proc.send_signal(signal.SIGTERM)
        while b"shutting down" not in (line := proc.stderr.readline()):
            assert line, "the server exited after the first signal"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 128 + signal.SIGTERM
        rest = proc.stderr.read()
        assert b"Traceback" not in rest and b"ExceptionGroup" not in rest, rest[-2000:]
        assert b"second SIGTERM" in rest
        client.close()
    finally:
        proc.kill()
        proc.wait()
