# `response.inject` with the official SDK's beta WebSocket client
# (`client.beta.responses.connect()`, `conn.response.inject`): a multi-agent response that waits
# for client tool outputs without a pause event (several calls in one response), failures
# (after completion, unknown id, an output already resolved), a malformed inject (error, then
# the connection closes), inject as the append shape's official name, and multi-agent over HTTP.
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from _pause_helpers import BETA, EXEC_TOOL, MODEL, check_beta, events, output, sdk
from websockets.exceptions import ConnectionClosed

from rollout.engine.engine import Engine
from rollout.model.policy import ScriptedPolicy, call, text
from rollout.testing.thread import ServerThread

CALLS = 3


def script() -> ScriptedPolicy:
    return ScriptedPolicy([call("exec", {"cmd": f"step {i}"}) for i in range(CALLS)] + [text("ok")])


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with ServerThread(Engine(policy=script())) as s:
        yield s


def create(conn: Any, **extra: Any) -> None:
    conn.response.create(
        model=MODEL,
        input="Run the three steps.",
        tools=[EXEC_TOOL],
        store=False,
        multi_agent={"enabled": True},
        **extra,
    )


def run(cmd: str) -> str:
    return f"ran {cmd}"


def test_multi_agent_inject_rollout_with_several_calls_in_one_response(
    server: ServerThread,
) -> None:
    client = sdk(server.http_base_url)
    kinds: list[str] = []
    seqs: list[int] = []
    injected = acked = 0
    final: Any = None
    response_id = ""
    with client.beta.responses.connect(extra_headers=BETA) as conn:
        create(conn)
        for event in conn:
            check_beta(event)
            kinds.append(event.type)
            seqs.append(event.sequence_number)
            if event.type == "response.output_item.done" and event.item.type == "function_call":
                cmd = orjson.loads(event.item.arguments)["cmd"]
                conn.response.inject(
                    response_id=response_id, input=[output(event.item.call_id, run(cmd))]
                )
                injected += 1
            elif event.type == "response.created":
                response_id = event.response.id
            elif event.type == "response.inject.created":
                assert event.response_id == response_id
                acked += 1
            elif event.type == "response.completed":
                final = event.response
            if final is not None and acked == injected:
                break
    assert injected == acked == CALLS
    assert "response.done" not in kinds  # no pause event: the response stays in progress
    assert kinds.count("response.created") == 1 and kinds.count("response.completed") == 1
    assert seqs == list(range(len(seqs)))  # one sequence, acknowledgements included
    calls = [i for i in final.output if i.type == "function_call"]
    assert len(calls) == CALLS and final.output[-1].type == "message"
    assert final.parallel_tool_calls is False
    stats = server.engine.stats
    assert stats.totals.counts["routing"].items == 1  # one response: routed once


def test_inject_after_completion_and_to_unknown_id(server: ServerThread) -> None:
    client = sdk(server.http_base_url)
    with client.beta.responses.connect(extra_headers=BETA) as conn:
        create(conn)
        response_id = ""
        for event in events(conn):
            if event.type == "response.created":
                response_id = event.response.id
            if event.type == "response.output_item.done" and event.item.type == "function_call":
                conn.response.inject(
                    response_id=response_id, input=[output(event.item.call_id, "x")]
                )
        body = [output("call_nope", "late")]
        conn.response.inject(response_id=response_id, input=body)
        conn.response.inject(response_id="resp_unknown", input=body)
        failed = frozenset({"response.inject.failed"})
        late = list(events(conn, failed))[-1]
        unknown = list(events(conn, failed))[-1]
    assert late.error.code == "response_already_completed"
    assert late.error.message == f"Response '{response_id}' has already completed."
    assert [i.model_dump(exclude_unset=True) for i in late.input] == body
    assert unknown.error.code == "response_not_found" and unknown.response_id == "resp_unknown"


def test_inject_of_an_output_already_resolved_is_invalid_input(server: ServerThread) -> None:
    client = sdk(server.http_base_url)
    with client.beta.responses.connect(extra_headers=BETA) as conn:
        create(conn)
        first: Any = None
        failed: Any = None
        for event in events(conn):
            if event.type == "response.created":
                response_id = event.response.id
            if event.type == "response.output_item.done" and event.item.type == "function_call":
                body = [output(event.item.call_id, "done")]
                conn.response.inject(response_id=response_id, input=body)
                if first is None:
                    first = body
                    conn.response.inject(response_id=response_id, input=body)  # again
            if event.type == "response.inject.failed":
                failed = event
    assert failed is not None and failed.error.code == "invalid_input"
    assert [i.model_dump(exclude_unset=True) for i in failed.input] == first


def test_malformed_inject_is_an_error_and_closes_the_connection(server: ServerThread) -> None:
    client = sdk(server.http_base_url)
    with client.beta.responses.connect(extra_headers=BETA) as conn:
        conn.send({"type": "response.inject", "response_id": "resp_x", "input": [{"type": 5}]})
        error = conn.recv()
        check_beta(error)
        assert error.type == "error" and error.status == 400
        with pytest.raises(ConnectionClosed) as closed:
            conn.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


def test_inject_is_the_append_shapes_official_name(server: ServerThread) -> None:
    client = sdk(server.http_base_url)
    kinds: list[str] = []
    with client.beta.responses.connect() as conn:
        conn.send(
            {
                "type": "response.create",
                "model": MODEL,
                "input": "go",
                "tools": [EXEC_TOOL],
                "shape": "append",
            }
        )
        for raw in conn:
            kinds.append(raw.type)
            if raw.type == "response.done":
                pause = raw.model_dump()
                outputs = [output(c["call_id"], "ok") for c in pause["pending_calls"]]
                conn.response.inject(response_id=pause["response_id"], input=outputs)
            elif raw.type == "response.inject.created":
                check_beta(raw)
            elif raw.type == "response.completed":
                break
    assert kinds.count("response.done") == CALLS
    assert kinds.count("response.inject.created") == CALLS
    assert kinds.index("response.inject.created") > kinds.index("response.done")


def test_multi_agent_needs_the_beta_header_and_no_parallel_calls(server: ServerThread) -> None:
    client = sdk(server.http_base_url)
    with client.beta.responses.connect() as conn:
        create(conn)
        error = conn.recv()
        check_beta(error)
        assert error.error.param == "multi_agent" and error.error.code == "beta_required"
    with client.beta.responses.connect(extra_headers=BETA) as conn:
        create(conn, parallel_tool_calls=True)
        error = conn.recv()
        assert error.error.param == "multi_agent" and error.error.code == "unsupported_value"


def test_multi_agent_over_http_completes_at_a_client_call_and_chains(
    server: ServerThread,
) -> None:
    client = sdk(server.http_base_url)
    kw: dict[str, Any] = {
        "model": MODEL,
        "tools": [EXEC_TOOL],
        "betas": ["responses_multi_agent=v1"],
    }
    resp = client.beta.responses.create(input="Run the steps.", multi_agent={"enabled": True}, **kw)
    turns = 1
    while resp.output[-1].type == "function_call":
        assert resp.status == "completed"
        resp = client.beta.responses.create(
            previous_response_id=resp.id,
            input=[output(resp.output[-1].call_id, "ok")],
            multi_agent={"enabled": True},
            **kw,
        )
        turns += 1
    assert turns == CALLS + 1 and resp.output[-1].type == "message"
