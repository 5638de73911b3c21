# The cluster layer (rollout.service.cluster) with two workers in one process over one Redis:
# an append rollout created on one worker and resumed over HTTP on the other, turn by turn,
# streams one contiguous event sequence; cancels and errors reach the owner and come back; a
# stored response's event log replays from the other worker, also while it is still running.
from __future__ import annotations

from typing import Any

import orjson
import trio
from _inproc import TERMINAL, append_body, sse, two_workers

from rollout.service.config import ServerConfig
from support.frames import streamed_append_body


async def test_append_rollout_resumed_over_http_on_the_other_worker(redis_url: str) -> None:
    async with two_workers(redis_url) as (a, b):
        status, worker, frames = await sse(a.url, "POST", "/responses", streamed_append_body())
        assert status == 200 and worker == "wA"
        assert frames[-1]["type"] == "response.done"
        rid = frames[-1]["response_id"]
        seen = list(frames)
        turns = 0
        while seen[-1]["type"] not in TERMINAL:
            target = (b, a)[turns % 2]  # alternate: the other worker first
            status, worker, more = await sse(
                target.url, "POST", f"/responses/{rid}/append", append_body(rid, seen)
            )
            assert status == 200, more
            assert worker == target.name
            seen += more
            turns += 1
        assert turns == 3
        assert seen[-1]["type"] == "response.completed"
        assert [f["sequence_number"] for f in seen] == list(range(len(seen)))
        for w in (a, b):
            status, _, got = await sse(w.url, "GET", f"/responses/{rid}")
            assert status == 200 and got["status"] == "completed"
            status, _, items = await sse(w.url, "GET", f"/responses/{rid}/input_items")
            assert status == 200 and len(items["data"]) == 1 + 3  # the input and 3 outputs
        # Finished: a late append hears so, on either worker.
        for w in (a, b):
            status, _, body = await sse(w.url, "POST", f"/responses/{rid}/append", {"input": []})
            assert status == 409 and body["error"]["code"] == "response_not_suspended", body
        assert not a.service.live.rollouts and not b.service.live.rollouts
        for w in (a, b):  # nothing left behind for the requests relayed
            assert w.service.cluster is not None
            assert not w.service.cluster.holders and not w.service.cluster.mailboxes


async def test_errors_and_cancel_come_back_from_the_owner(redis_url: str) -> None:
    async with two_workers(redis_url) as (a, b):
        _, _, frames = await sse(a.url, "POST", "/responses", streamed_append_body())
        rid = frames[-1]["response_id"]
        # A bad call_id: the owner's 400, through the other worker.
        bad = {"input": [{"type": "function_call_output", "call_id": "call_x", "output": "?"}]}
        status, worker, body = await sse(b.url, "POST", f"/responses/{rid}/append", bad)
        assert worker == "wB" and status == 400, body
        # Another API key's view: not found (the record's owner is checked).
        status, _, body = await sse(b.url, "POST", "/responses/resp_unknown/append", bad)
        assert status == 404 and body["error"]["code"] == "response_not_found"
        # Cancel from the other worker: the owner stops it; the final response comes back.
        status, worker, body = await sse(b.url, "POST", f"/responses/{rid}/cancel")
        assert status == 200 and worker == "wB", body
        assert body["status"] == "cancelled"
        assert body["incomplete_details"] is None
        status, _, got = await sse(b.url, "GET", f"/responses/{rid}")
        assert status == 200 and got["status"] == "cancelled"


async def test_stream_resumes_from_the_other_worker(redis_url: str) -> None:
    async with two_workers(redis_url) as (a, b):
        _, _, frames = await sse(a.url, "POST", "/responses", streamed_append_body())
        rid = frames[-1]["response_id"]
        # While suspended (not stored yet): the log so far, from the other worker, waits for
        # more; finish the rollout from A meanwhile and the replay reaches the terminal event.
        live: list[Any] = []
        seen = list(frames)
        async with trio.open_nursery() as nursery:

            async def follow() -> None:
                live.append(await sse(b.url, "GET", f"/responses/{rid}?stream=true"))

            nursery.start_soon(follow)
            while b.service.engine.stats.http_in_flight == 0:  # the reader is waiting on B
                await trio.sleep(0.01)
            while seen[-1]["type"] not in TERMINAL:
                _, _, more = await sse(
                    a.url, "POST", f"/responses/{rid}/append", append_body(rid, seen)
                )
                seen += more
        assert live[0][0] == 200 and live[0][2] == seen
        for n in (-1, 0, 5, len(seen) - 2):
            status, worker, replayed = await sse(
                b.url, "GET", f"/responses/{rid}?stream=true&starting_after={n}"
            )
            assert status == 200 and worker == "wB"
            assert replayed == seen[n + 1 :]


async def test_api_keys_isolate_rollouts_and_logs_across_workers(redis_url: str) -> None:
    config = ServerConfig(api_keys=frozenset({"key-a", "key-b"}))
    async with two_workers(redis_url, config=config) as (a, b):
        as_a = {"authorization": "Bearer key-a"}
        as_b = {"authorization": "Bearer key-b"}
        _, _, frames = await sse(a.url, "POST", "/responses", streamed_append_body(), as_a)
        rid = frames[-1]["response_id"]
        for path in (f"/responses/{rid}/append", f"/responses/{rid}/cancel"):
            body = append_body(rid, frames) if path.endswith("append") else None
            status, _, got = await sse(b.url, "POST", path, body, as_b)
            assert status == 404 and got["error"]["code"] == "response_not_found", got
        status, _, got = await sse(b.url, "GET", f"/responses/{rid}?stream=true", None, as_b)
        assert status == 404
        status, _, more = await sse(
            b.url, "POST", f"/responses/{rid}/append", append_body(rid, frames), as_a
        )
        assert status == 200 and more[-1]["type"] == "response.done"


async def test_websocket_cancel_on_the_other_worker_gets_the_terminal_event(
    redis_url: str,
) -> None:
    from trio_websocket import open_websocket_url

    async with two_workers(redis_url) as (a, b):
        ws_a = a.url.replace("http", "ws") + "/responses"
        ws_b = b.url.replace("http", "ws") + "/responses"
        frame = {"type": "response.create", **streamed_append_body()}
        del frame["stream"]
        async with open_websocket_url(ws_a) as ws:
            await ws.send_message(orjson.dumps(frame).decode())
            while (event := orjson.loads(await ws.get_message()))["type"] != "response.done":
                pass
        rid = event["response_id"]
        async with open_websocket_url(ws_b) as ws:
            await ws.send_message(
                orjson.dumps({"type": "response.cancel", "response_id": rid}).decode()
            )
            terminal = orjson.loads(await ws.get_message())
        assert terminal["type"] == "response.incomplete", terminal
        assert terminal["response"]["status"] == "cancelled"
        assert not a.service.live.rollouts


async def test_a_worker_that_shuts_down_leaves_no_live_record(redis_url: str) -> None:
    """Graceful shutdown ends its suspended rollouts (`failed`) and their records go with
    them, so no other worker takes them for lost."""
    from _inproc import script

    import rollout
    from rollout.engine.engine import Engine
    from rollout.service.cluster import clustered
    from rollout.service.service import Service
    from rollout.store.redis import RedisStore

    store = RedisStore(redis_url)
    service = clustered(
        Service(Engine(policy=script(3), store=store), ServerConfig(shutdown_grace_s=0.1)), "wS"
    )
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: rollout.serve(
                port=0, service=service, stop=stop, task_status=task_status
            )
        )
        _, _, frames = await sse(
            f"http://127.0.0.1:{port}/v1", "POST", "/responses", streamed_append_body()
        )
        rid = frames[-1]["response_id"]
        async with store.connect():
            assert await store.client.exists([store.key("live", rid)]) == 1
            stop.set()
    async with store.connect():
        assert await store.client.exists([store.key("live", rid)]) == 0
        got = await store.get(rid)
        assert got is not None and got.response.status == "failed"


async def test_websocket_inject_on_the_other_worker(redis_url: str) -> None:
    """`response.inject` from a new connection on the other worker: a bad one is refused there
    with `response.inject.failed` (nothing committed), a good one resumes the parked rollout
    and its events come to that connection."""
    from trio_websocket import open_websocket_url

    async with two_workers(redis_url) as (a, b):
        frame = {"type": "response.create", **streamed_append_body()}
        del frame["stream"]
        async with open_websocket_url(a.url.replace("http", "ws") + "/responses") as ws:
            await ws.send_message(orjson.dumps(frame).decode())
            seen = [orjson.loads(await ws.get_message())]
            while seen[-1]["type"] != "response.done":
                seen.append(orjson.loads(await ws.get_message()))
        rid = seen[-1]["response_id"]
        async with open_websocket_url(b.url.replace("http", "ws") + "/responses") as ws:
            bad = [{"type": "function_call_output", "call_id": "call_nope", "output": "?"}]
            inject = {"type": "response.inject", "response_id": rid}
            await ws.send_message(orjson.dumps({**inject, "input": bad}).decode())
            failed = orjson.loads(await ws.get_message())
            assert failed["type"] == "response.inject.failed", failed
            assert failed["error"]["code"] == "invalid_input" and failed["input"] == bad
            good = append_body(rid, seen)["input"]
            await ws.send_message(orjson.dumps({**inject, "input": good}).decode())
            more = [orjson.loads(await ws.get_message())]
            while more[-1]["type"] not in TERMINAL | {"response.done"}:
                more.append(orjson.loads(await ws.get_message()))
        assert more[0]["type"] == "response.inject.created", more[0]
        assert more[-1]["type"] == "response.done"  # the next pause, here on B's connection
        numbers = [e["sequence_number"] for e in [*seen, failed, *more]]
        assert numbers == list(range(len(numbers)))
