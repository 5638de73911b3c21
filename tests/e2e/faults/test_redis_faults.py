# A lost Redis under `rollout serve --workers 2 --store redis://...`, as clients see it: the
# test's own redis-server (no persistence) is killed with SIGKILL and started again on the same
# port while SSE streams, a WebSocket stream and suspended append rollouts are live, or frozen
# with SIGSTOP/SIGCONT, or absent when the server starts. During an outage a request that needs
# Redis is a 503 `store_unavailable` with Retry-After (a WebSocket `error` event, the connection
# kept), one that does not (store: false, nothing suspended) is served; streams in flight end
# with their terminal event; no worker exits (their pids stay) and each logs the outage once;
# afterwards suspended rollouts resume from either worker and none is declared lost.
from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx2 as httpx
import orjson
import pytest
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
from _workers import ROOT, Workers, free_port, workers

from rollout.store.redis_binary import HOW, redis_server_binary
from support.frames import streamed_append_body
from support.sse import data_events

REDIS = redis_server_binary()
TERMINAL = {"response.completed", "response.failed", "response.incomplete"}
DELAY_S = 3.0  # the model's second step waits this long: a stream in flight during an outage
OUTAGE_S = 6.0  # longer than a lease (ALIVE_MS, 5 s): every lease lapses
WAIT_S = 30.0  # the longest any poll below waits (2 shared cores: generous)
T = TypeVar("T")

pytestmark = pytest.mark.skipif(REDIS is None, reason=f"no redis-server: {HOW}")


class RedisServer:
    """A redis-server of this test's own on `port` (no persistence: a restart loses its data),
    to kill, start again on the same port, freeze and thaw."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert REDIS is not None
        command = [REDIS, "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        poll(lambda: _accepts(self.port), "redis-server to accept connections")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)

    def signal(self, signum: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.kill()


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def poll(check: Callable[[], T | None], what: str, timeout: float = WAIT_S) -> T:
    """`check()` until it returns something (not None or False); bounded by `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result is not None and result is not False:
            return result
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    server = RedisServer(free_port())
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def script(tmp_path: Path) -> Path:
    """The model: a call of `exec`, then (waiting DELAY_S first) the answer."""
    path = tmp_path / "script.json"
    steps = [
        {"call": "exec", "arguments": {"cmd": "step 0"}},
        {"text": "done", "delay": DELAY_S},
    ]
    path.write_text(json.dumps({"steps": steps, "final": "done"}))
    return path


def outputs(pause: dict[str, Any]) -> dict[str, Any]:
    calls = pause["pending_calls"]
    return {
        "input": [
            {"type": "function_call_output", "call_id": c["call_id"], "output": "ok"} for c in calls
        ]
    }


def answered_body(**extra: Any) -> dict[str, Any]:
    """A plain create whose input already holds the model's call and its output: the model's
    second step (DELAY_S, then its answer). store: false, so it needs no Redis."""
    items = [
        {"role": "user", "content": "run the steps"},
        {"type": "function_call", "call_id": "call_a", "name": "exec", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_a", "output": "ok"},
    ]
    return {"model": "m", "input": items, "store": False, **extra}


def store_unavailable(r: httpx.Response) -> None:
    assert r.status_code == 503, r.text
    assert r.headers.get("retry-after"), r.headers
    error = r.json()["error"]
    assert error["code"] == "store_unavailable" and error["type"] == "server_error", error


def suspend(w: Workers, store: bool = True) -> tuple[str, str, dict[str, Any]]:
    """An append rollout, suspended at its first call: its id, owner, last event."""
    with w.http() as http:
        r = http.post("/responses", json=streamed_append_body(store=store))
    seen = data_events(r.content)
    assert r.status_code == 200 and seen[-1]["type"] == "response.done", r.text
    return seen[-1]["response_id"], r.headers["x-rollout-worker"], seen[-1]


def worker_ids(w: Workers) -> set[str]:
    """Every worker's id (each names its pid), from new connections (bounded)."""
    seen = w.until_workers(
        lambda: w.http().get("/models"), lambda r: r.headers["x-rollout-worker"], resets=True
    )
    return set(seen)


def outage_lines(w: Workers) -> list[str]:
    return [
        line for line in w.log.read_text().splitlines() if "shared store is unreachable" in line
    ]


def test_a_killed_redis_is_ridden_out(redis: RedisServer, script: Path, tmp_path: Path) -> None:
    with (
        workers(redis.url, tmp_path, "--script", str(script)) as w,
        concurrent.futures.ThreadPoolExecutor(4) as pool,
    ):
        before = worker_ids(w)
        parked, owner, pause = suspend(w)  # resumed after the outage
        live, runs, live_pause = suspend(w, store=False)  # in flight during the outage

        def stream(http: httpx.Client, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
            try:
                r = http.post(path, json=body)
            finally:
                http.close()
            assert r.status_code == 200, r.text
            return data_events(r.content)

        # The append on its owner (relayed through Redis from the other worker, it would need
        # Redis: a 503 when its relay is cut before its first event).
        in_flight = [
            pool.submit(
                stream, client_of(w, runs), f"/responses/{live}/append", outputs(live_pause)
            ),
            pool.submit(stream, w.http(), "/responses", answered_body(stream=True)),
        ]
        time.sleep(0.5)  # both streams started (each waits DELAY_S for its answer)
        redis.kill()
        down = time.monotonic()
        with w.http() as http:
            store_unavailable(http.get(f"/responses/{parked}"))
            r = http.post("/responses", json={**answered_body(), "input": "hi", "model": "m"})
            assert r.status_code == 200 and r.json()["status"] == "completed", r.text
            store_unavailable(http.post("/responses", json=streamed_append_body()))
            store_unavailable(http.post("/responses", json={"model": "m", "input": "hi"}))
        other = w.client_on(other_than=owner)  # (its owner would run it, without Redis)
        try:
            store_unavailable(other.post(f"/responses/{parked}/append", json=outputs(pause)))
        finally:
            other.close()
        appended, plain = (f.result(timeout=WAIT_S) for f in in_flight)
        assert plain[-1]["type"] == "response.completed", plain[-1]
        assert appended[-1]["type"] == "response.completed", appended[-1]
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down)))
        redis.start()

        def resumed() -> list[dict[str, Any]] | None:
            if not _answers(w):
                return None
            http = w.client_on(other_than=owner)
            try:
                r = http.post(f"/responses/{parked}/append", json=outputs(pause))
            finally:
                http.close()
            if r.status_code == 503:
                store_unavailable(r)  # the owner is not back yet: retried
                return None
            assert r.status_code == 200, r.text
            return data_events(r.content)

        seen = poll(resumed, "the parked rollout to resume on the other worker")
        assert seen[-1]["type"] == "response.completed", seen[-1]
        assert "rollout_owner_lost" not in w.log.read_text()
        assert worker_ids(w) == before
        assert "Traceback" not in w.log.read_text()
        assert len(outage_lines(w)) == 2, outage_lines(w)  # once per worker


def _answers(w: Workers) -> bool:
    """Whether Redis answers the worker that serves a new connection (not a 503)."""
    with w.http() as http:
        return http.get("/responses/resp_probe").status_code == 404


def test_a_websocket_keeps_its_connection_through_an_outage(
    redis: RedisServer, script: Path, tmp_path: Path
) -> None:
    with workers(redis.url, tmp_path, "--script", str(script)) as w:
        before = worker_ids(w)
        with connect(f"ws://127.0.0.1:{w.port}/v1/responses") as ws:

            def until(kinds: set[str]) -> list[dict[str, Any]]:
                got: list[dict[str, Any]] = []
                while not got or got[-1]["type"] not in kinds:
                    got.append(orjson.loads(ws.recv(timeout=WAIT_S)))
                return got

            create = {"type": "response.create", **streamed_append_body(store=False)}
            ws.send(orjson.dumps(create).decode())
            pause = until({"response.done"})[-1]
            rid = pause["response_id"]
            append = {"type": "response.append", "response_id": rid, **outputs(pause)}
            ws.send(orjson.dumps(append).decode())
            time.sleep(0.5)  # in flight: the answer waits DELAY_S
            redis.kill()
            assert until(TERMINAL)[-1]["type"] == "response.completed"
            ws.send(orjson.dumps(create).decode())  # needs Redis (its live record)
            error = until({"error"})[-1]
            assert error["error"]["code"] == "store_unavailable", error
            plain = {"type": "response.create", **answered_body()}
            ws.send(orjson.dumps(plain).decode())  # does not
            assert until(TERMINAL)[-1]["type"] == "response.completed"
            redis.start()
            poll(lambda: _answers(w), "Redis to answer again")
            ws.send(orjson.dumps(create).decode())
            assert until({"response.done", "error"})[-1]["type"] == "response.done"
        assert worker_ids(w) == before
        assert "Traceback" not in w.log.read_text()


def test_a_frozen_redis_is_waited_for(redis: RedisServer, script: Path, tmp_path: Path) -> None:
    with (
        workers(redis.url, tmp_path, "--script", str(script)) as w,
        concurrent.futures.ThreadPoolExecutor(2) as pool,
    ):
        before = worker_ids(w)
        parked, owner, pause = suspend(w)
        with w.http() as http:
            stored = http.post("/responses", json={"model": "m", "input": "hi"}).json()["id"]
        other = w.client_on(other_than=owner)

        def get() -> int:
            with w.http() as http:
                return http.get(f"/responses/{stored}").status_code

        def append() -> httpx.Response:
            return other.post(f"/responses/{parked}/append", json=outputs(pause))

        redis.signal(signal.SIGSTOP)  # for longer than a lease
        try:
            got, appended = pool.submit(get), pool.submit(append)
            time.sleep(OUTAGE_S)
            assert not got.done() and not appended.done()  # they wait for Redis, no error
        finally:
            redis.signal(signal.SIGCONT)
        try:
            status, r = got.result(timeout=WAIT_S), appended.result(timeout=WAIT_S)
        finally:
            other.close()
        assert status == 200
        assert r.status_code == 200 and data_events(r.content)[-1]["type"] == "response.completed"
        assert "rollout_owner_lost" not in w.log.read_text()
        assert worker_ids(w) == before
        assert not outage_lines(w)


def client_of(w: Workers, worker: str) -> httpx.Client:
    """A keep-alive client whose connection `worker` serves (new connections until one lands
    there; bounded)."""
    for _ in range(200):
        http = httpx.Client(base_url=w.url, timeout=WAIT_S)
        if http.get("/responses/resp_probe").headers["x-rollout-worker"] == worker:
            return http
        http.close()
    pytest.fail(f"no connection landed on {worker}")


def test_a_stored_stream_in_flight_ends_failed(
    redis: RedisServer, script: Path, tmp_path: Path
) -> None:
    with (
        workers(redis.url, tmp_path, "--script", str(script)) as w,
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        before = worker_ids(w)
        rid, owner, pause = suspend(w)  # store: true
        http = client_of(w, owner)  # the owner runs it: it needs Redis only at its end

        def append() -> httpx.Response:
            return http.post(f"/responses/{rid}/append", json=outputs(pause))

        try:
            appended = pool.submit(append)
            time.sleep(0.5)  # in flight: the answer waits DELAY_S
            redis.kill()
            r = appended.result(timeout=WAIT_S)
        finally:
            http.close()
        assert r.status_code == 200, r.text
        end = data_events(r.content)[-1]
        assert end["type"] == "response.failed", end
        assert end["response"]["error"]["code"] == "store_unavailable", end
        redis.start()
        poll(lambda: _answers(w), "Redis to answer again")
        assert worker_ids(w) == before


def test_no_redis_at_the_start_is_one_line_and_an_exit(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    command = [sys.executable, "-m", "rollout.cli", "serve", "--workers", "4", "--port", "0"]
    command += ["--store", f"redis://127.0.0.1:{port}/0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "cannot connect to Redis" in lines[0], lines
