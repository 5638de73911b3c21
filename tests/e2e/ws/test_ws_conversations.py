# `response.create` with `conversation` over WebSocket mode (`client.responses.connect()`): each
# turn continues the conversation's items and appends its own, over one connection and across
# connections, the conversation readable over HTTP between turns; `conversation` with
# previous_response_id, or an unknown conversation, is an `error` event and the connection
# stays usable.
from __future__ import annotations

from typing import Any

from openai import OpenAI

from support.events import TERMINAL_OR_ERROR
from support.sdk import assert_sdk_class
from support.tools import MODEL


def turn(conn: Any, **fields: Any) -> list[Any]:
    conn.response.create(model=MODEL, **fields)
    events = []
    for event in conn:
        assert_sdk_class(event)
        events.append(event)
        if event.type in TERMINAL_OR_ERROR:
            break
    return events


def test_turns_over_websocket_continue_the_conversation(client: OpenAI) -> None:
    conv = client.conversations.create(items=[{"role": "user", "content": "I like green."}])
    inputs: list[int] = []
    with client.responses.connect() as conn:
        for k in range(2):
            events = turn(conn, input=f"ws turn {k}", conversation=conv.id)
            final = events[-1].response
            assert events[-1].type == "response.completed"
            assert final.conversation.id == conv.id
            inputs.append(final.usage.input_tokens)
    with client.responses.connect() as conn:  # another connection: the store has it all
        final = turn(conn, input="ws turn 2", conversation={"id": conv.id})[-1].response
        inputs.append(final.usage.input_tokens)
    assert inputs[0] < inputs[1] < inputs[2], inputs
    items = client.conversations.items.list(conv.id, order="asc").data
    assert len(items) == 1 + 2 * 3
    assert items[-1].id == final.output[-1].id
    users = [i.content[0].text for i in items if i.role == "user"]
    assert users == ["I like green.", "ws turn 0", "ws turn 1", "ws turn 2"]


def test_websocket_refusals_leave_the_connection_usable(client: OpenAI) -> None:
    conv = client.conversations.create()
    with client.responses.connect() as conn:
        first = turn(conn, input="hi")[-1].response
        [error] = turn(conn, input="x", conversation=conv.id, previous_response_id=first.id)
        assert error.type == "error" and error.error.code == "mutually_exclusive_parameters"
        [error] = turn(conn, input="x", conversation="conv_nope")
        assert error.type == "error" and error.error.code == "conversation_not_found"
        assert error.error.message == "Conversation with id 'conv_nope' not found."
        done = turn(conn, input="fine", conversation=conv.id)[-1]
        assert done.type == "response.completed"
    assert len(client.conversations.items.list(conv.id).data) == 2
