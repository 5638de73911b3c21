# Two workers in one process, for the cluster layer's trio tests: two Services, each with its
# own Redis client, cluster layer and listening port, over one redis-server; plus a small SSE
# client (a new connection per request) that returns every event as JSON and the worker's id.
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import httpx2 as httpx
import orjson
import trio

import rollout
from rollout.engine.engine import Engine
from rollout.model.policy import Policy
from rollout.service.cluster import clustered
from rollout.service.config import ServerConfig
from rollout.service.service import Service
from rollout.store.redis import RedisStore

TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete"})


def script(calls: int) -> Policy:
    steps = [rollout.call("exec", {"cmd": f"step {i}"}) for i in range(calls)]
    return rollout.ScriptedPolicy([*steps, rollout.text("done")])


@attrs.define
class Worker:
    name: str
    url: str
    service: Service


@asynccontextmanager
async def two_workers(
    redis_url: str, policy: Any = None, config: ServerConfig | None = None
) -> AsyncIterator[list[Worker]]:
    async with trio.open_nursery() as nursery:
        workers = []
        for name in ("wA", "wB"):
            engine = Engine(policy=policy() if policy else script(3), store=RedisStore(redis_url))
            cfg = attrs.evolve(config or ServerConfig(), worker_id=name)
            service = clustered(Service(engine, cfg), name)
            port = await nursery.start(
                lambda task_status, s=service: rollout.serve(
                    port=0, service=s, task_status=task_status
                )
            )
            workers.append(Worker(name, f"http://127.0.0.1:{port}/v1", service))
        yield workers
        nursery.cancel_scope.cancel()


def append_body(rid: str, frames: list[dict[str, Any]]) -> dict[str, Any]:
    pending = frames[-1]["pending_calls"]
    return {
        "input": [
            {"type": "function_call_output", "call_id": c["call_id"], "output": "ok"}
            for c in pending
        ]
    }


async def sse(
    url: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, str, Any]:
    """One request on a new connection: (status, worker, SSE events as JSON or the body)."""
    async with httpx.AsyncClient(base_url=url, timeout=30, headers=headers) as http:
        r = await http.request(method, path, json=body)
        worker = r.headers.get("x-rollout-worker", "")
        if not r.headers.get("content-type", "").startswith("text/event-stream"):
            return r.status_code, worker, r.json() if r.content else None
        frames = [
            orjson.loads(line[6:])
            for block in r.content.split(b"\n\n")
            for line in block.split(b"\n")
            if line.startswith(b"data: ")
        ]
        return r.status_code, worker, frames
