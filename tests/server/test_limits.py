# Per-connection and per-server bounds of the service layer: queued creates per WebSocket
# connection (count and bytes), queued work dropped at once when the connection closes, and the
# cap on live append rollouts, each refused with its documented error.
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import orjson
import trio
from trio_websocket import open_websocket_url

import rollout
from rollout.model.profiles import InferenceProfile
from rollout.service.service import Service
from support.servers import serving
from support.waits import TIMEOUT, wait_for

SLOW = InferenceProfile(name="slow", ttft_s=0.2, decode_tps=100)
TOOL = {"type": "function", "name": "exec", "parameters": {"type": "object"}}


@asynccontextmanager
async def server(
    config: rollout.ServerConfig, slow: bool = True
) -> AsyncIterator[tuple[Service, str]]:
    engine = rollout.Engine(
        policy=rollout.ScriptedPolicy([rollout.call("exec", {}), rollout.text("done " * 5)]),
        inference=SLOW if slow else rollout.INFERENCE_PROFILES["instant"],
    )
    async with serving(engine, config=config) as served:
        yield served.service, served.ws_url


def create(**extra: object) -> str:
    body = {"type": "response.create", "model": "m", "input": "go", "tools": [TOOL], **extra}
    return orjson.dumps(body).decode()


async def settle(service: Service) -> None:
    """Wait until the server has nothing left running (a hang fails the test)."""
    engine = service.engine
    await wait_for(lambda: not (engine.running or engine.stats.ws_connections))


async def test_queued_creates_over_the_limit_get_an_error_event() -> None:
    config = rollout.ServerConfig(max_queued=3)
    async with server(config) as (_service, url), open_websocket_url(url) as ws:
        for _ in range(10):
            await ws.send_message(create())
        completed = refused = 0
        with trio.fail_after(3 * TIMEOUT):
            while completed + refused < 10:
                event = orjson.loads(await ws.get_message())
                if event["type"] == "error":
                    assert event["status"] == 429, event
                    assert event["error"]["code"] == "websocket_queue_limit_reached"
                    refused += 1
                elif event["type"] == "response.completed":
                    completed += 1
        assert refused >= 10 - 3 - 1, (completed, refused)  # 3 queued (+1 running) at most
        assert completed >= 3
        # The connection is still usable once the queue drained.
        await ws.send_message(create())
        while orjson.loads(await ws.get_message())["type"] != "response.completed":
            pass


async def test_queued_bytes_over_the_limit_get_an_error_event() -> None:
    config = rollout.ServerConfig(max_queued_bytes=2000)
    async with server(config) as (_service, url), open_websocket_url(url) as ws:
        # The first runs (its 0.2 s to a first token); the second waits in the lane, holding
        # 1,500 of the 2,000 bytes; the third would make 3,000.
        for letter in "xyz":
            await ws.send_message(create(input=letter * 1500))
        codes = []
        with trio.fail_after(3 * TIMEOUT):
            while len(codes) < 3:
                event = orjson.loads(await ws.get_message())
                if event["type"] in ("error", "response.completed"):
                    codes.append(event.get("error", {}).get("code", event["type"]))
        assert "websocket_queue_limit_reached" in codes, codes


async def test_closing_a_connection_drops_its_queued_creates_at_once() -> None:
    async with server(rollout.ServerConfig(max_queued=50)) as (service, url):
        async with open_websocket_url(url) as ws:
            for _ in range(40):
                await ws.send_message(create())
            # The first response has started; the other 39 wait in the lane.
            while orjson.loads(await ws.get_message())["type"] != "response.created":
                pass
        await settle(service)
        # Only what was running (one response, maybe the next) ran; nothing queued was served.
        assert service.engine.stats.responses <= 2, service.engine.stats.responses


async def test_live_append_rollouts_are_capped() -> None:
    config = rollout.ServerConfig(max_live_rollouts=2)
    async with server(config, slow=False) as (_service, url), open_websocket_url(url) as ws:
        for lane in ("a", "b", "c"):
            body = {"shape": "append", "tools": [TOOL], "stream_id": lane}
            await ws.send_message(create(**body))
        paused, refused = [], []
        with trio.fail_after(3 * TIMEOUT):
            while len(paused) + len(refused) < 3:
                event = orjson.loads(await ws.get_message())
                if event["type"] == "response.done":
                    paused.append(event["stream_id"])
                elif event["type"] == "error":
                    assert event["status"] == 503
                    assert event["error"]["code"] == "too_many_live_rollouts"
                    refused.append(event["stream_id"])
        assert len(paused) == 2 and len(refused) == 1, (paused, refused)
