# One huge but valid request (megabytes of tiny messages) must not stall the event loop for other
# clients: its decode, scan and tokenization run off the loop. The check is an ordering, not a
# timing: a small request sent once the server holds the whole huge body completes first.
from __future__ import annotations

import http.client
import threading

import orjson

import rollout
from rollout.service.capture import Captured
from support.waits import TIMEOUT, wait_until


def post(port: int, body: bytes, done: list[str], name: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/v1/responses", body, {"content-type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200, response.read()
    assert orjson.loads(response.read())["status"] == "completed"
    done.append(name)
    conn.close()


def test_a_small_request_is_served_while_a_huge_one_is_processed() -> None:
    # A model whose window holds the million-token input (the default window is 128k tokens).
    big_window = {"m": rollout.ModelProfile(name="m", context_window=2_000_000)}
    engine = rollout.Engine(policy=rollout.ScriptedPolicy([rollout.text("ok")]), models=big_window)
    messages = [{"role": "user", "content": f"m{i}"} for i in range(60_000)]
    huge = orjson.dumps({"model": "m", "input": messages, "store": False})
    small = orjson.dumps({"model": "m", "input": "hi", "store": False})
    captured: list[Captured] = []
    done: list[str] = []
    with rollout.ServerThread(engine, capture=captured) as server:
        big = threading.Thread(target=post, args=(server.port, huge, done, "huge"))
        big.start()
        # The server has read the whole huge body once it is captured; it is decoding it now.
        wait_until(lambda: captured, 6 * TIMEOUT)
        post(server.port, small, done, "small")
        big.join(timeout=60)
    assert done == ["small", "huge"]
