# The Conversations API with the official SDK over HTTP, on each store (memory, SQLite, Redis):
# every route of client.conversations and its items (pagination by after/limit/order, the
# errors of unknown ids and bad bodies), responses.create(conversation=...) over several turns
# (the model sees the earlier turns; each turn's input and output join the conversation),
# `conversation` with previous_response_id refused, item_reference to any stored item of the
# key without a chain, and isolation between two API keys.
from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest
import trio
from openai import OpenAI

from rollout.engine.engine import Engine
from rollout.service.config import ServerConfig
from rollout.store.base import Store
from rollout.store.memory import MemoryStore
from rollout.store.sqlite import SqliteStore
from rollout.testing.thread import ServerThread
from support.errors import assert_envelope
from support.sdk import TIMEOUT
from support.tools import MODEL

KEYS = ("sk-alice", "sk-bob")


def _store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SqliteStore(tmp_path / "conversations.sqlite")
    from rollout.store.redis import RedisStore  # (only with the redis extra)

    return RedisStore(request.getfixturevalue("redis_url"))


@pytest.fixture(params=["memory", "sqlite", "redis"])
def keyed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[OpenAI, OpenAI]]:
    """Two SDK clients of one server (one per API key), on each store in turn."""
    store = _store(request.param, request, tmp_path)
    engine = Engine(store=store)
    with ServerThread(engine, config=ServerConfig(api_keys=frozenset(KEYS))) as server:
        clients = [
            OpenAI(api_key=k, base_url=server.http_base_url, max_retries=0, timeout=TIMEOUT)
            for k in KEYS
        ]
        try:
            yield clients[0], clients[1]
        finally:
            for c in clients:
                c.close()
    if isinstance(store, SqliteStore):
        trio.run(store.aclose)


@pytest.fixture
def client(keyed: tuple[OpenAI, OpenAI]) -> OpenAI:
    return keyed[0]


def user(text: str) -> dict[str, object]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def texts(items: object) -> list[str]:
    out = []
    for item in items:  # type: ignore[attr-defined]
        out.append(" ".join(getattr(p, "text", "") for p in item.content))
    return out


# -- the conversation routes ------------------------------------------------------------------


def test_create_retrieve_update_delete(client: OpenAI) -> None:
    conv = client.conversations.create(items=[user("hello")], metadata={"topic": "greeting"})
    assert conv.id.startswith("conv_") and conv.object == "conversation"
    assert conv.metadata == {"topic": "greeting"} and conv.created_at > 0
    assert client.conversations.retrieve(conv.id) == conv
    updated = client.conversations.update(conv.id, metadata={"topic": "other", "n": "2"})
    assert updated.id == conv.id and updated.metadata == {"topic": "other", "n": "2"}
    assert client.conversations.retrieve(conv.id).metadata == {"topic": "other", "n": "2"}
    deleted = client.conversations.delete(conv.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (conv.id, True, "conversation.deleted")
    with pytest.raises(openai.NotFoundError) as exc:
        client.conversations.retrieve(conv.id)
    error = assert_envelope(exc.value.response.json(), code="conversation_not_found")
    assert error["message"] == f"Conversation with id '{conv.id}' not found."
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.list(conv.id)
    with pytest.raises(openai.NotFoundError):
        client.conversations.delete(conv.id)


def test_an_empty_conversation(client: OpenAI) -> None:
    conv = client.conversations.create()
    assert conv.metadata == {}
    page = client.conversations.items.list(conv.id)
    assert page.data == [] and page.has_more is False


def test_items_add_list_retrieve_delete_and_pages(client: OpenAI) -> None:
    conv = client.conversations.create(items=[user(f"m{i}") for i in range(3)])
    added = client.conversations.items.create(conv.id, items=[user("m3"), user("m4")])
    assert added.object == "list" and texts(added.data) == ["m3", "m4"]
    assert added.first_id == added.data[0].id and added.last_id == added.data[1].id
    assert all(i.id.startswith("msg_") and i.status == "completed" for i in added.data)
    assert added.has_more is False
    # Listing: newest first by default, `asc` oldest first, pages by `after` and `limit`.
    assert texts(client.conversations.items.list(conv.id).data) == [
        f"m{i}" for i in (4, 3, 2, 1, 0)
    ]
    asc = client.conversations.items.list(conv.id, order="asc", limit=2)
    assert texts(asc.data) == ["m0", "m1"] and asc.has_more is True
    rest = client.conversations.items.list(conv.id, order="asc", after=asc.last_id, limit=2)
    assert texts(rest.data) == ["m2", "m3"] and rest.has_more is True
    last = client.conversations.items.list(conv.id, order="asc", after=rest.last_id, limit=2)
    assert texts(last.data) == ["m4"] and last.has_more is False
    # The SDK's auto-pagination follows the cursor to the end.
    every = list(client.conversations.items.list(conv.id, order="asc", limit=2))
    assert texts(every) == [f"m{i}" for i in range(5)]
    one = client.conversations.items.retrieve(asc.data[1].id, conversation_id=conv.id)
    assert one.id == asc.data[1].id and texts([one]) == ["m1"]
    after_delete = client.conversations.items.delete(asc.data[1].id, conversation_id=conv.id)
    assert after_delete.id == conv.id and after_delete.object == "conversation"
    remaining = texts(client.conversations.items.list(conv.id, order="asc"))
    assert remaining == ["m0", "m2", "m3", "m4"]
    with pytest.raises(openai.NotFoundError) as exc:
        client.conversations.items.retrieve(asc.data[1].id, conversation_id=conv.id)
    error = assert_envelope(exc.value.response.json(), code="item_not_found")
    assert error["message"] == f"Item with id '{asc.data[1].id}' not found."
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.delete(asc.data[1].id, conversation_id=conv.id)


@pytest.mark.parametrize(
    ("kwargs", "param", "code"),
    [
        ({"metadata": {str(i): "v" for i in range(17)}}, "metadata", "object_above_max_properties"),
        ({"metadata": {"k" * 65: "v"}}, "metadata", "invalid_value"),
        ({"metadata": {"k": "v" * 513}}, "metadata.k", "string_above_max_length"),
        ({"items": [user(str(i)) for i in range(21)]}, "items", "array_above_max_length"),
        ({"items": [{"type": "item_reference", "id": "msg_x"}]}, "items[0]", "invalid_value"),
    ],
)
def test_bad_bodies_are_refused(
    client: OpenAI, kwargs: dict[str, object], param: str, code: str
) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        client.conversations.create(**kwargs)  # type: ignore[arg-type]
    assert_envelope(exc.value.response.json(), param=param, code=code)


def test_metadata_at_the_limits_is_kept(client: OpenAI) -> None:
    metadata = {f"{i:02d}" + "k" * 62: "v" * 512 for i in range(16)}
    conv = client.conversations.create(metadata=metadata)
    assert client.conversations.retrieve(conv.id).metadata == metadata
    with pytest.raises(openai.BadRequestError):
        client.conversations.update(conv.id, metadata={**metadata, "one": "more"})
    assert client.conversations.retrieve(conv.id).metadata == metadata


def test_bad_list_queries(client: OpenAI) -> None:
    conv = client.conversations.create(items=[user("a")])
    for query, param in (
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"after": "msg_no"}, "after"),
    ):
        with pytest.raises(openai.BadRequestError) as exc:
            client.conversations.items.list(conv.id, **query)  # type: ignore[arg-type]
        assert_envelope(exc.value.response.json(), param=param, code="invalid_value")
    with pytest.raises(openai.BadRequestError) as exc:
        client.conversations.items.list(conv.id, order="up")  # type: ignore[arg-type]
    assert_envelope(exc.value.response.json(), param="order", code="invalid_value")


# -- responses.create(conversation=...) -------------------------------------------------------


def test_turns_of_a_conversation_see_the_earlier_ones(client: OpenAI) -> None:
    conv = client.conversations.create(items=[user("my name is Ada")])
    inputs: list[int] = []
    for turn, form in enumerate([conv.id, {"id": conv.id}, conv.id]):
        response = client.responses.create(model=MODEL, input=f"turn {turn}", conversation=form)
        assert response.status == "completed"
        assert response.conversation is not None and response.conversation.id == conv.id
        assert response.previous_response_id is None
        assert response.usage is not None
        inputs.append(response.usage.input_tokens)
    assert inputs[0] < inputs[1] < inputs[2], inputs  # each turn's context holds the earlier
    items = client.conversations.items.list(conv.id, order="asc").data
    kinds = [(i.type, getattr(i, "role", None)) for i in items]
    assert kinds == [("message", "user")] + [("message", "user"), ("message", "assistant")] * 3
    assert texts([items[0], items[1], items[3], items[5]]) == [
        "my name is Ada",
        "turn 0",
        "turn 1",
        "turn 2",
    ]
    # The response's own items are the conversation's (same ids).
    assert items[-1].id == response.output[-1].id
    listed = client.responses.input_items.list(response.id)
    assert [i.id for i in listed.data] == [items[-2].id]


def test_a_response_without_conversation_has_none(client: OpenAI) -> None:
    response = client.responses.create(model=MODEL, input="hi")
    assert response.conversation is None
    raw = client.responses.with_raw_response.create(model=MODEL, input="hi").http_response
    assert "conversation" not in raw.json()


def test_conversation_with_previous_response_id_is_refused(client: OpenAI) -> None:
    conv = client.conversations.create()
    first = client.responses.create(model=MODEL, input="hi")
    with pytest.raises(openai.BadRequestError) as exc:
        client.responses.create(
            model=MODEL, input="x", conversation=conv.id, previous_response_id=first.id
        )
    error = assert_envelope(exc.value.response.json(), code="mutually_exclusive_parameters")
    assert error["message"] == (
        "Mutually exclusive parameters: Ensure you are only providing one of: "
        "'previous_response_id' or 'conversation'."
    )
    assert client.conversations.items.list(conv.id).data == []  # nothing joined it


def test_an_unknown_conversation_on_create(client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as exc:
        client.responses.create(model=MODEL, input="x", conversation="conv_nope")
    error = assert_envelope(
        exc.value.response.json(), code="conversation_not_found", param="conversation"
    )
    assert error["message"] == "Conversation with id 'conv_nope' not found."
    with pytest.raises(openai.BadRequestError) as bad:
        client.responses.create(model=MODEL, input="x", conversation={"id": ""})
    assert_envelope(bad.value.response.json(), param="conversation", code="invalid_value")


def test_a_streamed_turn_joins_the_conversation(client: OpenAI) -> None:
    conv = client.conversations.create()
    with client.responses.stream(model=MODEL, input="streamed", conversation=conv.id) as stream:
        final = stream.get_final_response()
    assert final.conversation is not None and final.conversation.id == conv.id
    items = client.conversations.items.list(conv.id, order="asc").data
    assert [i.id for i in items][1:] == [o.id for o in final.output]


def test_racing_responses_on_one_conversation_lose_no_items(client: OpenAI) -> None:
    conv = client.conversations.create()

    def turns(name: str) -> list[str]:
        out = []
        for k in range(4):
            r = client.responses.create(model=MODEL, input=f"{name}{k}", conversation=conv.id)
            out.append(r.output[-1].id)
        return out

    with ThreadPoolExecutor(3) as pool:
        answers = [a for got in pool.map(turns, "xyz") for a in got]
    items = client.conversations.items.list(conv.id, order="asc", limit=100).data
    assert len(items) == 2 * 12 and {i.id for i in items[1::2]} == set(answers)
    for asked, said in zip(items[::2], items[1::2], strict=True):  # each turn whole
        assert (asked.role, said.role) == ("user", "assistant")


# -- item_reference to any stored item of the key ---------------------------------------------


def test_item_reference_without_a_chain(client: OpenAI) -> None:
    first = client.responses.create(model=MODEL, input="remember the number 7")
    said = first.output[-1].id
    asked = client.responses.input_items.list(first.id).data[0].id
    plain = client.responses.create(model=MODEL, input="and?")
    both = client.responses.create(
        model=MODEL,
        input=[
            {"type": "item_reference", "id": asked},
            {"type": "item_reference", "id": said},
            user("and?"),
        ],
    )
    assert both.status == "completed" and both.previous_response_id is None
    assert plain.usage is not None and both.usage is not None
    assert both.usage.input_tokens > plain.usage.input_tokens  # the referenced items are in
    listed = client.responses.input_items.list(both.id, order="asc").data
    assert [i.id for i in listed][:2] == [asked, said]
    # An item of a conversation, too.
    conv = client.conversations.create(items=[user("from a conversation")])
    item = client.conversations.items.list(conv.id).data[0].id
    ref = client.responses.create(model=MODEL, input=[{"type": "item_reference", "id": item}])
    assert ref.status == "completed"


def test_a_reference_to_a_deleted_or_unknown_item_is_not_found(client: OpenAI) -> None:
    first = client.responses.create(model=MODEL, input="soon gone")
    said = first.output[-1].id
    client.responses.delete(first.id)
    conv = client.conversations.create(items=[user("also gone")])
    item = client.conversations.items.list(conv.id).data[0].id
    client.conversations.delete(conv.id)
    for missing in (said, item, "msg_never"):
        with pytest.raises(openai.BadRequestError) as exc:
            client.responses.create(
                model=MODEL, input=[{"type": "item_reference", "id": missing}, user("x")]
            )
        error = assert_envelope(
            exc.value.response.json(), param="input[0].id", code="invalid_value"
        )
        assert error["message"] == f"Item with id '{missing}' not found."


# -- isolation by API key ---------------------------------------------------------------------


def test_another_key_sees_neither_conversations_nor_items(keyed: tuple[OpenAI, OpenAI]) -> None:
    alice, bob = keyed
    conv = alice.conversations.create(items=[user("alice's secret")], metadata={"o": "a"})
    item = alice.conversations.items.list(conv.id).data[0].id
    calls = [
        lambda: bob.conversations.retrieve(conv.id),
        lambda: bob.conversations.update(conv.id, metadata={"o": "b"}),
        lambda: bob.conversations.delete(conv.id),
        lambda: bob.conversations.items.list(conv.id),
        lambda: bob.conversations.items.create(conv.id, items=[user("bob")]),
        lambda: bob.conversations.items.retrieve(item, conversation_id=conv.id),
        lambda: bob.conversations.items.delete(item, conversation_id=conv.id),
        lambda: bob.responses.create(model=MODEL, input="x", conversation=conv.id),
    ]
    for call in calls:
        with pytest.raises(openai.NotFoundError) as exc:
            call()
        assert exc.value.response.json()["error"]["code"] == "conversation_not_found"
    # Nor can bob reference alice's stored items.
    said = alice.responses.create(model=MODEL, input="alice asks").output[-1].id
    for other in (said, item):
        with pytest.raises(openai.BadRequestError) as bad:
            bob.responses.create(model=MODEL, input=[{"type": "item_reference", "id": other}])
        assert bad.value.response.json()["error"]["message"] == f"Item with id '{other}' not found."
    # Alice's conversation is as she left it.
    assert alice.conversations.retrieve(conv.id).metadata == {"o": "a"}
    assert texts(alice.conversations.items.list(conv.id).data) == ["alice's secret"]
    assert alice.responses.create(model=MODEL, input=[{"type": "item_reference", "id": said}])
