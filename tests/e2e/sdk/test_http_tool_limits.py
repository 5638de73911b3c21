# A hostile tool schema against a live server (rollout.ServerThread, the default policy, the
# official SDK over HTTP): a pattern asking for a billion repetitions gets a prompt failed
# response naming the limit, and the same server goes on serving other clients. The SDK's
# request timeout is a guard, not an assertion: nothing here measures time.
from __future__ import annotations

import concurrent.futures
from typing import Any

import rollout
from support.sdk import function_calls, sdk_client
from support.tools import EXEC_TOOL, MODEL

HOSTILE_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "repeat",
    "parameters": {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^a{1000000000}$"}},
        "required": ["s"],
    },
}


def test_billion_repetition_pattern_fails_promptly_with_the_limit(
    server: rollout.ServerThread,
) -> None:
    with sdk_client(server) as client:
        resp = client.responses.create(model=MODEL, input="Repeat it.", tools=[HOSTILE_TOOL])
        assert resp.status == "failed"
        assert resp.error is not None
        assert "cannot call 'repeat'" in resp.error.message
        assert "$.s: pattern '^a{1000000000}$'" in resp.error.message
        assert "Limits.max_string_length" in resp.error.message
        # Streamed, the SDK reads the flat `error` event and then `response.failed`.
        events = list(
            client.responses.create(
                model=MODEL, input="Repeat it.", tools=[HOSTILE_TOOL], stream=True
            )
        )
        error, failed = events[-2:]
        assert error.type == "error" and "Limits.max_string_length" in error.message
        assert failed.type == "response.failed"


def test_other_clients_are_served_alongside_hostile_schemas(server: rollout.ServerThread) -> None:
    def hostile() -> str:
        with sdk_client(server) as client:
            resp = client.responses.create(model=MODEL, input="Repeat it.", tools=[HOSTILE_TOOL])
            return resp.status

    def friendly() -> list[Any]:
        with sdk_client(server) as client:
            resp = client.responses.create(model=MODEL, input="List files.", tools=[EXEC_TOOL])
            assert resp.status == "completed"
            return function_calls(resp)

    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        hostile_runs = [pool.submit(hostile) for _ in range(4)]
        friendly_runs = [pool.submit(friendly) for _ in range(2)]
        assert [f.result() for f in hostile_runs] == ["failed"] * 4
        for run in friendly_runs:
            calls = run.result()
            assert calls and calls[0].name == "exec"
