# WebSocket mode with the official SDK (`client.responses.connect()`): a 20-turn tool rollout
# chained with `store: false`, the connection cache measured by the work counters (and compared
# with the same rollout over HTTP with full history), lanes, forks, warm-up, reconnects, and the
# `stream`/`background` fields inside a WebSocket create.
from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from openai import OpenAI

from rollout.conversation.context import Context
from rollout.conversation.work import Work
from rollout.model.policy import Policy
from rollout.testing.thread import ServerThread
from support.accounting import decode_items, decode_tools, header_tokens, item_tokens
from support.events import TERMINAL_OR_ERROR
from support.sdk import assert_sdk_class
from support.servers import Serve
from support.tools import EXEC_TOOL, MODEL, cmd, tool_script
from support.waits import wait_until

TURNS = 20
FINAL = "done"
INSTRUCTIONS = (
    "You are a careful coding agent working in a sandboxed repository. Run one shell command at a "
    "time with the exec tool, read its output, and decide the next step. Keep going until the "
    "task is finished, then answer with a one-word summary."
)
FIRST_INPUT: dict[str, Any] = {"role": "user", "content": "Fix the failing tests in this repo."}


@pytest.fixture
def model() -> Policy:
    """The model of `server` (tests/conftest.py): TURNS exec calls, then FINAL."""
    return tool_script(TURNS, FINAL)


def tool_output(call_id: str, i: int) -> dict[str, Any]:
    return {
        "type": "function_call_output",
        "call_id": call_id,
        "output": f"exit 0: {i + 1} passed in 0.{i:02d}s",
    }


def counts(server: ServerThread) -> dict[str, Any]:
    return server.engine.stats.totals.counts


def create(conn: Any, **fields: Any) -> None:
    """A WebSocket create as an agent sends it: model, tools and instructions every turn."""
    fields.setdefault("tools", [EXEC_TOOL])
    fields.setdefault("instructions", INSTRUCTIONS)
    fields.setdefault("store", False)
    conn.response.create(model=MODEL, **fields)


def events_until_terminal(conn: Any) -> list[Any]:
    """Events of one response (single lane in use), each checked against the SDK's class."""
    events = []
    for event in conn:
        assert_sdk_class(event)
        events.append(event)
        if event.type in TERMINAL_OR_ERROR:
            break
    return events


def turn(conn: Any, **fields: Any) -> list[Any]:
    create(conn, **fields)
    return events_until_terminal(conn)


def completed(events: list[Any]) -> Any:
    """The completed response of a turn, after checking its sequence numbers (0, 1, 2, ...)."""
    assert events[-1].type == "response.completed", events[-1]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created"
    ids = {e.response.id for e in events if hasattr(e, "response")}
    assert len(ids) == 1, ids
    return events[-1].response


def the_call(response: Any) -> Any:
    [item] = response.output
    assert item.type == "function_call" and item.name == "exec", item
    return item


def run_chain(conn: Any, lane: str | None = None) -> tuple[list[str], Any, list[dict[str, Any]]]:
    """The 20-turn rollout on one lane (single lane in use): each turn sends only the tool output
    with previous_response_id. Returns the commands run, the final response and the model items."""
    extra: dict[str, Any] = {} if lane is None else {"stream_id": lane}
    response = completed(turn(conn, input=[FIRST_INPUT], **extra))
    cmds: list[str] = []
    model_items: list[dict[str, Any]] = []
    for i in range(TURNS):
        fc = the_call(response)
        model_items.append(fc.to_dict())
        cmds.append(json.loads(fc.arguments)["cmd"])
        parent = response.id
        events = turn(
            conn, input=[tool_output(fc.call_id, i)], previous_response_id=parent, **extra
        )
        response = completed(events)
        assert response.previous_response_id == parent
        assert response.id != parent
    model_items.extend(item.to_dict() for item in response.output)
    return cmds, response, model_items


# -- the 20-turn rollout and the cache ----------------------------------------------------------


def test_twenty_turn_tool_rollout_chained_without_store(
    server: ServerThread, client: OpenAI
) -> None:
    with client.responses.connect() as conn:
        cmds, final, _ = run_chain(conn)
    assert cmds == [cmd(i) for i in range(TURNS)]
    assert final.status == "completed"
    assert final.output_text == FINAL
    [message] = final.output
    assert message.type == "message" and message.role == "assistant"
    assert final.usage is not None and final.usage.output_tokens > 0


def test_cache_scans_and_tokenizes_each_input_token_once(
    server: ServerThread, client: OpenAI
) -> None:
    stats = server.engine.stats
    outputs: list[dict[str, Any]] = []
    with client.responses.connect() as conn:
        response = completed(turn(conn, input=[FIRST_INPUT]))
        model_items = [the_call(response).to_dict()]
        for i in range(TURNS):
            output = tool_output(the_call(response).call_id, i)
            outputs.append(output)
            response = completed(turn(conn, input=[output], previous_response_id=response.id))
            model_items.extend(item.to_dict() for item in response.output)
    assert response.output_text == FINAL
    # Billing runs in the background; it is complete once the connection has closed.
    wait_until(lambda: stats.ws_connections == 0)
    wait_until(lambda: stats.responses == TURNS + 1)
    assert stats.billed == TURNS + 1

    client_items = [FIRST_INPUT, *outputs]
    header = header_tokens(INSTRUCTIONS, [EXEC_TOOL])
    expected_scan = header + item_tokens(client_items)
    expected_tokenize = expected_scan + item_tokens(model_items)
    c = counts(server)
    assert c["scan"].tokens == expected_scan
    assert c["tokenize"].tokens == expected_tokenize
    assert c["routing"].calls == 1
    # Cross-check: one pass of a fresh context over the final client input scans the same.
    ctx = Context()
    ctx.set_header(INSTRUCTIONS, decode_tools([EXEC_TOOL]), Work())
    ctx.extend(decode_items(client_items), Work())
    assert ctx.scan.tokens_scanned == expected_scan


def test_http_full_history_costs_quadratically_more_than_the_socket(
    server: ServerThread, client: OpenAI, serve: Serve
) -> None:
    """The same rollout over HTTP, `store: false`, the client resending everything each turn."""
    with client.responses.connect() as conn:
        run_chain(conn)
    ws_stats = server.engine.stats
    wait_until(lambda: ws_stats.responses == TURNS + 1)
    ws_scan = counts(server)["scan"].tokens
    ws_tokenize = counts(server)["tokenize"].tokens

    http_server, http = serve(tool_script(TURNS, FINAL))
    history: list[dict[str, Any]] = [FIRST_INPUT]
    for i in range(TURNS + 1):
        resp = http.responses.create(
            model=MODEL,
            input=history,  # type: ignore[arg-type]
            tools=[EXEC_TOOL],  # type: ignore[list-item]
            instructions=INSTRUCTIONS,
            store=False,
        )
        assert resp.status == "completed"
        history.extend(item.to_dict() for item in resp.output)
        if i < TURNS:
            history.append(tool_output(the_call(resp).call_id, i))
    assert resp.output_text == FINAL
    http_counts = counts(http_server)
    assert http_server.engine.stats.billed == TURNS + 1
    assert http_counts["routing"].calls == TURNS + 1
    assert http_counts["scan"].tokens >= 10 * ws_scan, (http_counts["scan"].tokens, ws_scan)
    assert http_counts["tokenize"].tokens >= 10 * ws_tokenize, (
        http_counts["tokenize"].tokens,
        ws_tokenize,
    )


# -- lanes and forks ----------------------------------------------------------------------------


def test_two_lanes_run_the_chain_concurrently(server: ServerThread, client: OpenAI) -> None:
    lanes = ("a", "b")
    cmds: dict[str, list[str]] = {lane: [] for lane in lanes}
    seqs: dict[str, list[int]] = {lane: [] for lane in lanes}
    finals: dict[str, Any] = {}
    order: list[str] = []
    with client.responses.connect() as conn:
        for lane in lanes:
            create(conn, input=[FIRST_INPUT], stream_id=lane)
        for event in conn:
            assert_sdk_class(event)
            lane = event.stream_id
            assert lane in lanes, event
            order.append(lane)
            seqs[lane].append(event.sequence_number)
            if event.type == "error":
                pytest.fail(f"error on lane {lane}: {event.error}")
            if event.type != "response.completed":
                continue
            assert seqs[lane] == list(range(len(seqs[lane])))
            seqs[lane] = []
            response = event.response
            if response.output[0].type == "message":
                finals[lane] = response
                if len(finals) == len(lanes):
                    break
                continue
            fc = the_call(response)
            cmds[lane].append(json.loads(fc.arguments)["cmd"])
            i = len(cmds[lane]) - 1
            create(
                conn,
                input=[tool_output(fc.call_id, i)],
                previous_response_id=response.id,
                stream_id=lane,
            )
    expected = [cmd(i) for i in range(TURNS)]
    assert cmds == {"a": expected, "b": expected}
    assert all(finals[lane].output_text == FINAL for lane in lanes)
    # The lanes really interleaved: events of one lane arrived between events of the other.
    switches = sum(1 for x, y in itertools.pairwise(order) if x != y)
    assert switches > 2, switches
    assert counts(server)["routing"].calls == 1


def lane_events(conn: Any, lane: str, until: frozenset[str] = TERMINAL_OR_ERROR) -> list[Any]:
    """Events of `lane` up to one whose type is in `until` (no other lane is active)."""
    events = []
    for event in conn:
        assert_sdk_class(event)
        assert event.stream_id == lane, event
        events.append(event)
        if event.type in until:
            break
    return events


def test_fork_from_another_lane_keeps_the_parent(server: ServerThread, client: OpenAI) -> None:
    with client.responses.connect() as conn:
        create(conn, input=[FIRST_INPUT], stream_id="a")
        parent = completed(lane_events(conn, "a"))
        call_id = the_call(parent).call_id

        # Lane b forks from a's response; wait for its in_progress before advancing lane a.
        create(conn, input=[tool_output(call_id, 0)], previous_response_id=parent.id, stream_id="b")
        head = lane_events(conn, "b", until=frozenset({"response.in_progress", "error"}))
        assert [e.type for e in head] == ["response.created", "response.in_progress"]
        fork = completed(head + lane_events(conn, "b"))

        # Lane a continues from the same parent: it was kept for the fork.
        create(conn, input=[tool_output(call_id, 0)], previous_response_id=parent.id, stream_id="a")
        cont = completed(lane_events(conn, "a"))
    for response in (fork, cont):
        assert response.previous_response_id == parent.id
        assert json.loads(the_call(response).arguments) == {"cmd": cmd(1)}
    assert fork.id != cont.id


# -- warm-up ------------------------------------------------------------------------------------


def test_warm_up_then_chain_without_rescanning_the_header(
    server: ServerThread, client: OpenAI
) -> None:
    stats = server.engine.stats
    with client.responses.connect() as conn:
        events = turn(conn, input=[], generate=False)
        assert [e.type for e in events] == ["response.created", "response.completed"]
        warm = completed(events)
        assert warm.output == []
        assert warm.status == "completed"
        assert warm.usage is not None and warm.usage.output_tokens == 0
        wait_until(lambda: stats.responses == 1)
        header = header_tokens(INSTRUCTIONS, [EXEC_TOOL])
        assert counts(server)["scan"].tokens == header

        # Tools and instructions resent unchanged: only the new message is scanned.
        response = completed(turn(conn, input=[FIRST_INPUT], previous_response_id=warm.id))
        assert response.previous_response_id == warm.id
        assert json.loads(the_call(response).arguments) == {"cmd": cmd(0)}
    wait_until(lambda: stats.responses == 2)
    assert counts(server)["scan"].tokens == header + item_tokens([FIRST_INPUT])
    assert counts(server)["routing"].calls == 1


# -- reconnects ---------------------------------------------------------------------------------


def test_reconnect_store_false_parent_is_gone(client: OpenAI) -> None:
    with client.responses.connect() as conn:
        parent = completed(turn(conn, input=[FIRST_INPUT]))
    with client.responses.connect() as conn:
        events = turn(
            conn,
            input=[tool_output(the_call(parent).call_id, 0)],
            previous_response_id=parent.id,
        )
        [error] = events
        assert error.type == "error"
        assert error.status == 400
        assert error.error.code == "previous_response_not_found"
        assert error.error.param == "previous_response_id"
        assert error.error.type == "invalid_request_error"
        assert parent.id in error.error.message
        assert error.stream_id is None
        # The connection stays usable.
        fresh = completed(turn(conn, input=[FIRST_INPUT]))
        assert json.loads(the_call(fresh).arguments) == {"cmd": cmd(0)}


def test_reconnect_store_true_restores_from_the_store(server: ServerThread, client: OpenAI) -> None:
    stats = server.engine.stats
    with client.responses.connect() as conn:
        parent = completed(turn(conn, input=[FIRST_INPUT], store=True))
    wait_until(lambda: stats.responses == 1)
    store_before = counts(server)["store"].calls
    assert store_before == 1  # the write of the parent
    with client.responses.connect() as conn:
        events = turn(
            conn,
            input=[tool_output(the_call(parent).call_id, 0)],
            previous_response_id=parent.id,
            store=True,
        )
        response = completed(events)
    assert response.previous_response_id == parent.id
    assert json.loads(the_call(response).arguments) == {"cmd": cmd(1)}
    wait_until(lambda: stats.responses == 2)
    # One restore of the chain (a cache miss on the new connection) plus one write.
    assert counts(server)["store"].calls == store_before + 2


# -- fields inside a WebSocket create -----------------------------------------------------------


def test_stream_true_is_tolerated(client: OpenAI) -> None:
    with client.responses.connect() as conn:
        response = completed(turn(conn, input=[FIRST_INPUT], stream=True))
        assert the_call(response).name == "exec"


def test_background_true_is_an_error_event(client: OpenAI) -> None:
    with client.responses.connect() as conn:
        [error] = turn(conn, input=[FIRST_INPUT], background=True, stream_id="bg")
        assert error.type == "error"
        assert error.status == 400
        assert error.error.param == "background"
        assert error.error.type == "invalid_request_error"
        assert "background" in error.error.message.lower()
        assert error.stream_id == "bg"
        # Still usable afterwards, on the same lane.
        completed(turn(conn, input=[FIRST_INPUT], stream_id="bg"))
