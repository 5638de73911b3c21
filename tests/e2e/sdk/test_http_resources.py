# Stored responses over HTTP with the official SDK: retrieve, delete, input_items (order and
# cursor pagination), and what store=false means for retrieval and chaining.
from __future__ import annotations

import httpx2 as httpx
import openai
import pytest
from openai import OpenAI

from support.errors import assert_envelope
from support.sdk import assert_api_error, assert_healthy
from support.tools import MODEL

N_ITEMS = 7


def many_inputs() -> list[dict[str, str]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}"}
        for i in range(N_ITEMS)
    ]


def test_retrieve_returns_the_same_response(client: OpenAI) -> None:
    created = client.responses.create(model=MODEL, input="hi", metadata={"run": "1"})
    got = client.responses.retrieve(created.id)
    assert got.id == created.id
    assert got.status == "completed"
    assert got.output_text == created.output_text
    assert [o.model_dump() for o in got.output] == [o.model_dump() for o in created.output]
    assert got.usage == created.usage
    assert got.metadata == {"run": "1"}
    assert got.created_at == created.created_at


def test_retrieve_raw_json_equals_create_raw_json(client: OpenAI, http: httpx.Client) -> None:
    created = client.responses.with_raw_response.create(model=MODEL, input="hi").http_response
    body = created.json()
    got = http.get(f"/responses/{body['id']}")
    assert got.status_code == 200
    assert got.json() == body


def test_retrieve_streamed_response(client: OpenAI) -> None:
    events = list(client.responses.create(model=MODEL, input="hi", stream=True))
    final = events[-1].response
    got = client.responses.retrieve(final.id)
    assert got.output_text == final.output_text
    assert got.status == "completed"


def test_delete_then_retrieve_is_404(client: OpenAI, http: httpx.Client) -> None:
    created = client.responses.create(model=MODEL, input="hi")
    raw = http.delete(f"/responses/{created.id}")
    assert raw.status_code == 200
    assert raw.json() == {"id": created.id, "object": "response", "deleted": True}
    with pytest.raises(openai.NotFoundError) as exc:
        client.responses.retrieve(created.id)
    assert exc.value.status_code == 404
    assert_envelope(exc.value.response.json(), code="response_not_found")
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.input_items.list(created.id)
    # chaining from a deleted response
    with pytest.raises(openai.BadRequestError) as bad:
        client.responses.create(model=MODEL, input="next", previous_response_id=created.id)
    assert bad.value.code == "previous_response_not_found"
    assert_healthy(client)


def test_delete_via_sdk(client: OpenAI) -> None:
    created = client.responses.create(model=MODEL, input="hi")
    assert client.responses.delete(created.id) is None
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)


def test_deleting_a_middle_response_breaks_the_chain(client: OpenAI) -> None:
    first = client.responses.create(model=MODEL, input="one")
    second = client.responses.create(model=MODEL, input="two", previous_response_id=first.id)
    client.responses.delete(first.id)
    assert client.responses.retrieve(second.id).id == second.id
    with pytest.raises(openai.BadRequestError) as exc:
        client.responses.create(model=MODEL, input="three", previous_response_id=second.id)
    assert exc.value.code == "previous_response_not_found"
    assert exc.value.param == "previous_response_id"


def test_input_items_order_and_ids(client: OpenAI) -> None:
    created = client.responses.create(model=MODEL, input=many_inputs())
    asc = client.responses.input_items.list(created.id, order="asc", limit=100)
    assert [i.content[0].text for i in asc.data] == [f"message number {i}" for i in range(N_ITEMS)]
    ids = [i.id for i in asc.data]
    assert all(isinstance(i, str) and i.startswith("msg_") for i in ids)
    assert len(set(ids)) == N_ITEMS
    assert asc.has_more is False
    assert asc.first_id == ids[0] and asc.last_id == ids[-1]
    desc = client.responses.input_items.list(created.id)  # default order: desc
    assert [i.id for i in desc.data] == ids[::-1]
    # the ids are stable across calls
    again = client.responses.input_items.list(created.id, order="asc")
    assert [i.id for i in again.data] == ids


def test_input_items_pagination(client: OpenAI, http: httpx.Client) -> None:
    created = client.responses.create(model=MODEL, input=many_inputs())
    all_ids = [i.id for i in client.responses.input_items.list(created.id, order="asc").data]

    page = client.responses.input_items.list(created.id, order="asc", limit=3)
    assert [i.id for i in page.data] == all_ids[:3]
    assert page.has_more is True
    page2 = client.responses.input_items.list(
        created.id, order="asc", limit=3, after=page.data[-1].id
    )
    assert [i.id for i in page2.data] == all_ids[3:6]
    assert page2.has_more is True
    page3 = client.responses.input_items.list(
        created.id, order="asc", limit=3, after=page2.data[-1].id
    )
    assert [i.id for i in page3.data] == all_ids[6:]
    assert page3.has_more is False

    # the SDK's auto-pagination follows `after` through every page
    walked = [i.id for i in client.responses.input_items.list(created.id, order="asc", limit=2)]
    assert walked == all_ids
    walked_desc = [i.id for i in client.responses.input_items.list(created.id, limit=2)]
    assert walked_desc == all_ids[::-1]

    # exactly `limit` items left: no more
    last = client.responses.input_items.list(created.id, order="asc", limit=1, after=all_ids[-2])
    assert [i.id for i in last.data] == all_ids[-1:] and last.has_more is False
    # after the last item: an empty page
    empty = http.get(
        f"/responses/{created.id}/input_items", params={"order": "asc", "after": all_ids[-1]}
    ).json()
    assert empty == {
        "object": "list",
        "data": [],
        "first_id": None,
        "last_id": None,
        "has_more": False,
    }


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"order": "sideways"}, "order"),
        ({"after": "msg_nope"}, "after"),
    ],
)
def test_input_items_bad_query(client: OpenAI, http: httpx.Client, params, param) -> None:
    created = client.responses.create(model=MODEL, input="hi")
    r = http.get(f"/responses/{created.id}/input_items", params=params)
    assert r.status_code == 400
    assert_envelope(r.json(), code="invalid_value", param=param)
    assert_healthy(client)


def test_input_items_of_a_chained_turn_are_its_own_input(client: OpenAI) -> None:
    first = client.responses.create(model=MODEL, input="one")
    second = client.responses.create(
        model=MODEL, input=[{"role": "user", "content": "two"}], previous_response_id=first.id
    )
    items = client.responses.input_items.list(second.id).data
    assert [i.content[0].text for i in items] == ["two"]


def test_store_false_is_not_retrievable(client: OpenAI, http: httpx.Client) -> None:
    resp = client.responses.create(model=MODEL, input="hi", store=False)
    assert resp.status == "completed" and resp.store is False
    with pytest.raises(openai.NotFoundError) as exc:
        client.responses.retrieve(resp.id)
    assert_envelope(exc.value.response.json(), code="response_not_found")
    r = http.get(f"/responses/{resp.id}/input_items")
    assert r.status_code == 404
    assert http.delete(f"/responses/{resp.id}").status_code == 404


def test_chaining_from_store_false_is_previous_response_not_found(client: OpenAI) -> None:
    resp = client.responses.create(model=MODEL, input="hi", store=False)
    with pytest.raises(openai.BadRequestError) as exc:
        client.responses.create(model=MODEL, input="again", previous_response_id=resp.id)
    body = assert_api_error(
        exc.value, 400, code="previous_response_not_found", param="previous_response_id"
    )
    assert body["message"] == f"Previous response with id '{resp.id}' not found."
    assert_healthy(client)


def test_retrieve_with_stream_replays_events(client: OpenAI) -> None:
    created = client.responses.create(model=MODEL, input="hi")
    events = list(client.responses.retrieve(created.id, stream=True))
    assert events, "no events"
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == created.output_text
