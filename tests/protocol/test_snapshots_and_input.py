# Response.snapshot copies every field (a generated copier, not attrs.evolve): a snapshot equals
# its response in every field, whatever values they hold, and later changes to the response,
# its output list included, do not reach it. The short form of input is built as its long form.
from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from protocol import codec
from protocol.errors import ProtocolError
from protocol.input import ECHOED, check_input, new_response, normalize_input
from protocol.items import InputText, ItemReference, Message, OutputText
from protocol.response import Response, Usage


def test_a_snapshot_has_every_field_and_later_changes_do_not_reach_it() -> None:
    values = {a.name: f"value of {a.name}" for a in attrs.fields(Response) if a.name != "output"}
    message = Message(role="assistant", content=(OutputText(text="hi"),), id="msg_1")
    response = Response(**values, output=[message])  # type: ignore[arg-type]
    snapshot = response.snapshot()
    assert type(snapshot) is Response
    assert attrs.asdict(snapshot) == attrs.asdict(response)
    response.output.append(message)
    response.status = "completed"
    response.usage = Usage.of(1, 0, 1)
    assert snapshot.output == [message]
    assert snapshot.status == "value of status" and snapshot.usage == "value of usage"


def test_the_short_form_of_input_is_stored_as_its_long_form() -> None:
    ids = iter(["msg_a", "msg_b"])
    short = normalize_input("hello", lambda prefix: next(ids))
    long = normalize_input([Message(role="user", content="hello")], lambda prefix: "msg_a")
    assert short == long
    assert short[0] == Message(
        role="user", content=(InputText(text="hello"),), id="msg_a", status="completed"
    )


def test_a_new_response_echoes_the_request_and_shares_nothing_with_the_next() -> None:
    plain = new_response(codec.decode_create({"model": "m", "input": "hi"}), "resp_1", 1)
    assert (plain.id, plain.created_at, plain.model, plain.status) == (
        "resp_1",
        1,
        "m",
        "in_progress",
    )
    assert (plain.service_tier, plain.temperature, plain.top_p) == ("default", 1.0, 1.0)
    assert plain.text == {"format": {"type": "text"}, "verbosity": "medium"}
    assert plain.reasoning == {"effort": None, "summary": None} and plain.metadata == {}
    body = {
        "model": "m2",
        "input": "hi",
        "instructions": "be brief",
        "service_tier": "flex",
        "temperature": 0.0,
        "top_p": 0.5,
        "presence_penalty": 0.1,
        "metadata": {"k": "v"},
        "truncation": "auto",
        "user": "u",
    }
    req = codec.decode_create(body)
    set_ = new_response(req, "resp_2", 2, {"effort": "low"})
    assert {name: getattr(set_, name) for name in ECHOED} == {n: getattr(req, n) for n in ECHOED}
    assert (set_.service_tier, set_.temperature, set_.top_p) == ("flex", 0.0, 0.5)
    assert (set_.presence_penalty, set_.truncation, set_.metadata) == (0.1, "auto", {"k": "v"})
    assert set_.reasoning == {"effort": "low", "summary": None}
    for changed in (plain, set_):  # what one response's loop changes, no other response sees
        changed.output.append(Message(role="assistant", content="x"))
        changed.text["verbosity"] = "high"
        changed.reasoning["effort"] = "high"
    after = new_response(codec.decode_create({"model": "m", "input": "hi"}), "resp_3", 3)
    assert after.output == [] and after.text["verbosity"] == "medium"
    assert after.reasoning == {"effort": None, "summary": None}


@given(
    st.lists(st.tuples(st.booleans(), st.sampled_from(["a", "b", "c", "d"])), max_size=8),
    st.sets(st.sampled_from(["a", "b", "c", "d"]), max_size=2),
)
def test_a_reference_resolves_to_an_earlier_item_or_a_known_one(
    rows: list[tuple[bool, str]], known: set[str]
) -> None:
    items = [
        ItemReference(id=name) if ref else Message(role="user", content="hi", id=name)
        for ref, name in rows
    ]
    expected = None
    for i, (ref, name) in enumerate(rows):
        earlier = {n for r, n in rows[:i] if not r}
        if ref and name not in earlier and name not in known:
            expected = f"input[{i}].id"
            break
    try:
        check_input(items, frozenset(), known)
    except ProtocolError as exc:
        assert exc.param == expected
    else:
        assert expected is None
