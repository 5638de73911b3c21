# Live rollouts and streams across `rollout serve --workers 2` processes over Redis, each
# request on a new connection: a suspended append rollout resumed over HTTP from the other
# worker; a WebSocket reconnect that lands on the other worker; SIGKILL of a worker that holds
# suspended rollouts (each ends with a clear error, in the store, from every worker: none is
# lost); a stored stream resumed from the other worker.
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from _workers import STARTUP_S, Workers, worker_pid, workers
from websockets.sync.client import connect

from support.frames import streamed_append_body
from support.sse import data_events

TERMINAL = {"response.completed", "response.failed", "response.incomplete"}


def outputs(pause: dict[str, Any]) -> dict[str, Any]:
    calls = pause["pending_calls"]
    return {
        "input": [
            {"type": "function_call_output", "call_id": c["call_id"], "output": "ok"} for c in calls
        ]
    }


def post(w: Workers, path: str, body: Any) -> tuple[int, str, Any]:
    with w.http() as http:
        r = http.post(path, json=body)
    content = (
        data_events(r.content) if r.status_code == 200 and b"data: " in r.content else r.json()
    )
    return r.status_code, r.headers["x-rollout-worker"], content


def test_suspended_rollout_resumed_over_http_from_the_other_worker(
    redis_url: str, tmp_path: Path
) -> None:
    with workers(redis_url, tmp_path) as w:
        status, owner, seen = post(w, "/responses", streamed_append_body())
        assert status == 200 and seen[-1]["type"] == "response.done"
        rid = seen[-1]["response_id"]
        landed: set[str] = set()
        while seen[-1]["type"] not in TERMINAL:
            # Every append on a connection that the other worker serves.
            http = w.client_on(other_than=owner)
            try:
                r = http.post(f"/responses/{rid}/append", json=outputs(seen[-1]))
            finally:
                http.close()
            assert r.status_code == 200, r.text
            landed.add(r.headers["x-rollout-worker"])
            seen += data_events(r.content)
        assert owner not in landed
        assert seen[-1]["type"] == "response.completed"
        assert [e["sequence_number"] for e in seen] == list(range(len(seen)))


def test_websocket_reconnect_lands_on_the_other_worker(redis_url: str, tmp_path: Path) -> None:
    url = None
    with workers(redis_url, tmp_path) as w:
        url = f"ws://127.0.0.1:{w.port}/v1/responses"
        with connect(url) as ws:
            assert ws.response is not None
            owner = ws.response.headers["x-rollout-worker"]
            ws.send(orjson.dumps({"type": "response.create", **streamed_append_body()}).decode())
            first = [orjson.loads(ws.recv(timeout=30))]
            while first[-1]["type"] != "response.done":
                first.append(orjson.loads(ws.recv(timeout=30)))
        # The connection is gone; the rollout is parked on its owner. Reconnect until a new
        # connection lands on the other worker, and resume there.
        for _ in range(200):
            ws = connect(url)
            assert ws.response is not None
            if ws.response.headers["x-rollout-worker"] != owner:
                break
            ws.close()
        else:
            pytest.fail("no connection landed on the other worker")
        with ws:
            seen = list(first)
            while seen[-1]["type"] not in TERMINAL:
                frame = {"type": "response.append", "response_id": first[-1]["response_id"]}
                ws.send(orjson.dumps({**frame, **outputs(seen[-1])}).decode())
                seen.append(orjson.loads(ws.recv(timeout=30)))
                while seen[-1]["type"] not in TERMINAL | {"response.done", "error"}:
                    seen.append(orjson.loads(ws.recv(timeout=30)))
                assert seen[-1]["type"] != "error", seen[-1]
        assert seen[-1]["type"] == "response.completed"
        assert [e["sequence_number"] for e in seen] == list(range(len(seen)))


def test_kill_9_of_an_owner_ends_its_rollouts_with_a_clear_error(
    redis_url: str, tmp_path: Path
) -> None:
    with workers(redis_url, tmp_path) as w:
        by_worker: dict[str, list[dict[str, Any]]] = {}
        for _ in range(200):  # suspended rollouts on both workers, a few each
            status, worker, seen = post(w, "/responses", streamed_append_body())
            assert status == 200
            by_worker.setdefault(worker, []).append(seen[-1])
            if len(by_worker) == 2 and min(len(v) for v in by_worker.values()) >= 3:
                break
        victim, survivor = sorted(by_worker)
        os.kill(worker_pid(victim), signal.SIGKILL)
        # Appended to: a clear error at once, whichever worker the request reaches.
        touched = by_worker[victim][0]
        status, _, body = post(w, f"/responses/{touched['response_id']}/append", outputs(touched))
        assert status == 500 and body["error"]["code"] == "rollout_owner_lost", body
        # Not touched: the sweep ends them too. Each is stored as failed, seen from every worker.
        deadline = time.monotonic() + STARTUP_S
        with w.http() as http:
            for pause in by_worker[victim]:
                path = f"/responses/{pause['response_id']}"
                while (r := http.get(path)).status_code == 404:
                    assert time.monotonic() < deadline, "a lost rollout was never ended"
                    time.sleep(0.1)
                got = w.until_workers(
                    lambda path=path: http.get(path),
                    lambda r: r.headers["x-rollout-worker"],
                    resets=True,
                )
                for r in got.values():
                    assert r.json()["status"] == "failed"
                    assert r.json()["error"]["code"] == "rollout_owner_lost"
        # The survivor's rollouts go on to their end, whichever worker each append reaches.
        for pause in by_worker[survivor]:
            seen = [pause]
            while seen[-1]["type"] not in TERMINAL:
                status, _, more = post(
                    w, f"/responses/{pause['response_id']}/append", outputs(seen[-1])
                )
                assert status == 200, more
                seen += more
            assert seen[-1]["type"] == "response.completed"


def test_stream_resumes_from_the_other_worker(redis_url: str, tmp_path: Path) -> None:
    with workers(redis_url, tmp_path, "--profile", "65tps", "--tool-calls", "0") as w:
        import httpx2 as httpx

        # A background stream: the one a dropped client can resume (a plain one stops).
        body = {"model": "m", "input": "tell me a story", "stream": True, "background": True}
        with (
            httpx.Client(base_url=w.url, timeout=60) as first,
            first.stream("POST", "/responses", json=body) as r,
        ):
            owner = r.headers["x-rollout-worker"]
            head: list[dict[str, Any]] = []
            for line in r.iter_lines():
                if line.startswith("data: "):
                    head.append(orjson.loads(line[6:]))
                    if len(head) == 6:
                        break
        rid = head[0]["response"]["id"]
        n = head[-1]["sequence_number"]
        # Resume on connections that land on the other worker, while the response still runs.
        with w.http() as http:
            resumed = w.until_workers(
                lambda: http.get(
                    f"/responses/{rid}", params={"stream": "true", "starting_after": n}
                ),
                lambda r: r.headers["x-rollout-worker"],
            )
        other = next(r for worker, r in resumed.items() if worker != owner)
        rest = data_events(other.content)
        assert [e["sequence_number"] for e in rest] == list(range(n + 1, n + 1 + len(rest)))
        assert rest[-1]["type"] == "response.completed"
