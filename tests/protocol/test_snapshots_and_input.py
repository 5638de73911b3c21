# Response.snapshot copies every field (a generated copier, not attrs.evolve): a snapshot equals
# its response in every field, whatever values they hold, and later changes to the response,
# its output list included, do not reach it. The short form of input is built as its long form.
from __future__ import annotations

import attrs

from protocol.input import normalize_input
from protocol.items import InputText, Message, OutputText
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
