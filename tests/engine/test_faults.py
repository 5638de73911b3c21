"""Fault injection: deterministic under a seed; errors, disconnects and latency as declared."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
from trio_websocket import ConnectionClosed, open_websocket_url

import rollout
from rollout.client import ClientError, HttpClient
from rollout.engine.executors import EndResponse
from rollout.engine.faults import MESSAGES, FaultPlan, Faults, parse_errors
from rollout.testing.plugin import RolloutServer
from support.drive import prepare, scripted


def test_plans_are_deterministic_under_a_seed() -> None:
    def draws(seed: int) -> list[FaultPlan]:
        f = Faults(errors={"server_error": 0.3, "rate_limit_exceeded": 0.2}, seed=seed)
        return [f.next_plan() for _ in range(200)]

    assert draws(1) == draws(1)
    assert draws(1) != draws(2)
    errors = [p.error for p in draws(1)]
    assert 40 <= errors.count("server_error") <= 80  # about 30% of 200
    assert 20 <= errors.count("rate_limit_exceeded") <= 60
    assert errors.count(None) >= 70


@pytest.mark.parametrize(
    "kwargs",
    [
        {"errors": {"nope": 0.1}},
        {"errors": {"server_error": 1.5}},
        {"errors": {"server_error": 0.6, "model_error": 0.6}},
        {"disconnect_after": -1},
        {"latency_s": -0.1},
    ],
)
def test_bad_fault_settings_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Faults(**kwargs)


def test_parse_errors() -> None:
    assert parse_errors(["server_error=0.1", "model_error=0"]) == {
        "server_error": 0.1,
        "model_error": 0.0,
    }
    with pytest.raises(ValueError, match="CODE=RATE"):
        parse_errors(["server_error"])


ANSWER = [rollout.text("one two three four five")]


async def sse(server: RolloutServer) -> list[Any]:
    async with HttpClient(server.http_base_url) as http:
        body = {"model": "m", "input": "hi", "stream": True}
        seen: list[Any] = []
        try:
            async for event in http.events("/responses", body):
                seen.append(event.type)
        except (ClientError, trio.BrokenResourceError, ConnectionError) as exc:
            seen.append(repr(exc))
        return seen


async def test_injected_model_error_fails_the_response_inside_the_stream(
    rollout_server: RolloutServer,
) -> None:
    rollout_server.script(ANSWER)
    rollout_server.fault(error="model_error", next_only=False)
    async with HttpClient(rollout_server.http_base_url) as http:
        body = {"model": "m", "input": "hi"}
        response = await http.json("POST", "/responses", body)
    assert response["status"] == "failed"
    assert response["error"]["code"] == "model_error"


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("rate_limit_exceeded", 429),
        ("insufficient_quota", 429),
        ("server_error", 500),
        ("server_overloaded", 503),
    ],
)
async def test_injected_refusals_are_http_statuses_before_any_byte(
    rollout_server: RolloutServer, code: str, status: int
) -> None:
    rollout_server.script(ANSWER)
    rollout_server.fault(error=code, next_only=False)
    async with HttpClient(rollout_server.http_base_url) as http:
        body = {"model": "m", "input": "hi", "stream": True}
        got, head, chunks = await http.request("POST", "/responses", body)
        data = b"".join([c async for c in chunks])
    assert got == status
    assert head["content-type"] == "application/json"  # no event stream was started
    assert head["retry-after"] == "1"
    if status == 429:
        assert head["x-ratelimit-remaining-requests"] == "0"
    error = orjson.loads(data)["error"]
    assert error["code"] == code and error["message"] == MESSAGES[code]


async def test_disconnect_after_n_events_over_sse_and_websocket(
    rollout_server: RolloutServer,
) -> None:
    rollout_server.script(ANSWER)
    rollout_server.fault(disconnect_after=3, next_only=False)
    types = await sse(rollout_server)
    assert types[:3] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
    ]
    assert "response.completed" not in types
    frames: list[str] = []
    closed: list[int | None] = []
    async with open_websocket_url(rollout_server.ws_url) as ws:
        create = {"type": "response.create", "model": "m", "input": "hi"}
        await ws.send_message(orjson.dumps(create).decode())
        try:
            while True:
                frames.append(orjson.loads(await ws.get_message())["type"])
        except ConnectionClosed as exc:
            closed.append(exc.reason.code)
    assert len(frames) == 3
    assert closed == [1006]


async def test_a_disconnect_inside_a_run_of_deltas_sends_exactly_n_events(
    rollout_server: RolloutServer,
) -> None:
    """The deltas after the first token leave as one run; a disconnect due inside it cuts the
    run there: created, in_progress, item and part added, then two deltas, and nothing more."""
    rollout_server.script([{"text": "one two three four five six"}])
    rollout_server.fault(disconnect_after=6, next_only=False)
    frames: list[dict[str, object]] = []
    async with open_websocket_url(rollout_server.ws_url) as ws:
        create = {"type": "response.create", "model": "m", "input": "hi"}
        await ws.send_message(orjson.dumps(create).decode())
        with pytest.raises(ConnectionClosed):
            while True:
                frames.append(orjson.loads(await ws.get_message()))
    assert [f["type"] for f in frames[4:]] == ["response.output_text.delta"] * 2
    assert [f["delta"] for f in frames[4:]] == ["one", " two"]
    assert [f["sequence_number"] for f in frames] == list(range(6))


async def test_added_latency_is_counted(autojump_clock: trio.abc.Clock) -> None:
    e = scripted(*ANSWER)
    e.faults = Faults(latency_s=2.0)
    ran = await prepare(e, {"model": "m", "input": "hi"})
    start = trio.current_time()
    await e.run(ran.prepared, EndResponse())
    assert trio.current_time() - start >= 2.0
    assert e.stats.totals.counts["fault"].calls == 1
