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
