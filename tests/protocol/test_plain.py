# Plain messages remembered by role and text (protocol.plain): what the converter makes of one,
# and the content it is stored with, shared between requests that send the same message, within
# bounds; and a stored message built without the constructor, as the constructor builds it.
from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import plain
from protocol.convert import converter
from protocol.items import InputText, Message, OutputText
from support.strategies import messages

ROLES = st.sampled_from(["user", "assistant", "system", "developer"])


@given(ROLES, st.text())
def test_a_kept_message_is_what_the_converter_makes(role: str, text: str) -> None:
    made = plain.decoded(role, text)
    assert made == converter.structure({"type": "message", "role": role, "content": text}, Message)
    assert plain.decoded(role, text) is made  # (shared)
    part = OutputText(text=text) if role == "assistant" else InputText(text=text)
    assert plain.stored_content(role, text) == (part,)
    assert plain.stored_content(role, text) is plain.stored_content(role, text)


def test_the_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    plain.forget()
    monkeypatch.setattr(plain, "MAX_ENTRIES", 3)
    monkeypatch.setattr(plain, "MAX_CHARS", 64 * 10)
    first = plain.decoded("user", "a")
    for text in ("b", "c"):
        plain.decoded("user", text)
    assert plain.decoded("user", "a") is first and len(plain._kept) == 3
    plain.decoded("user", "d")  # full: everything is forgotten first
    assert len(plain._kept) == 1 and plain.decoded("user", "a") is not first
    long = "x" * 11  # over a 64th of the characters: made, never kept
    assert plain.decoded("user", long) == Message(role="user", content=long)
    assert ("user", long) not in plain._kept
    plain.forget()
    monkeypatch.setattr(plain, "MAX_ENTRIES", 1000)
    for i in range(64):  # 640 characters: all kept
        plain.decoded("user", f"{i:010d}")
    assert len(plain._kept) == 64
    plain.decoded("user", "y" * 10)  # over MAX_CHARS in all: everything forgotten first
    assert list(plain._kept) == [("user", "y" * 10)]
    plain.forget()


def test_message_sets_every_field_of_a_message() -> None:
    assert tuple(f.name for f in attrs.fields(Message)) == plain.MESSAGE_FIELDS


@given(messages)
def test_message_makes_what_the_constructor_makes(item: Message) -> None:
    fields = attrs.asdict(item, recurse=False)
    assert fields.pop("type") == "message"
    made = plain.message(**fields)
    assert made == item and type(made) is Message
    assert all(getattr(made, name) is getattr(item, name) for name in plain.MESSAGE_FIELDS[1:])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.id = "other"  # type: ignore[misc]


@given(messages.filter(lambda m: type(m.content) is str), st.text(min_size=1))
def test_stored_makes_what_message_and_stored_content_make(item: Message, id: str) -> None:
    made = plain.stored(item, id)
    assert type(made) is Message
    assert made == plain.message(
        id=id,
        role=item.role,
        content=plain.stored_content(item.role, item.content),  # type: ignore[arg-type]
        status=item.status or "completed",
        phase=item.phase,
        agent=item.agent,
    )
    assert made.content is plain.stored_content(item.role, item.content)  # type: ignore[arg-type]


@given(ROLES, st.lists(st.text(alphabet="ab", min_size=1, max_size=4), min_size=1, max_size=8))
def test_long_texts_of_the_same_ends_are_told_apart(role: str, middles: list[str]) -> None:
    # A long text is looked up by its length and ends, and compared whole: texts that share
    # them (a middle of the same length) each get their own message and content.
    ends = "e" * plain.ENDS
    for middle in middles:
        text = ends + middle.ljust(4, "a") + ends  # (all of one length)
        made = plain.decoded(role, text)
        assert made == Message(role=role, content=text)  # type: ignore[arg-type]
        assert made is plain.decoded(role, "".join(text))  # (an equal text: shared)
        part = OutputText(text=text) if role == "assistant" else InputText(text=text)
        assert plain.stored_content(role, text) == (part,)
    plain.forget()


def test_a_long_texts_ends_find_the_newest_of_them() -> None:
    plain.forget()
    ends = "e" * plain.ENDS
    for middle in ("ab", "ba", "ab"):
        plain.decoded("user", ends + middle + ends)
    assert len(plain._ends) == 1 and len(plain._kept) == 2
    plain.forget()


@given(st.lists(st.tuples(ROLES, st.text(alphabet="ab", max_size=4), st.booleans()), max_size=8))
def test_decoded_all_makes_what_decoded_makes(rows: list[tuple[str, str, bool]]) -> None:
    # Long texts of the same ends and length among them: each found whole, as `decoded` finds it.
    ends = "e" * plain.ENDS
    values = [
        {"role": role, "content": ends + middle.ljust(4, "a") + ends if long else middle}
        for role, middle, long in rows
    ]
    made = plain.decoded_all(values, {"user", "assistant", "system", "developer"})
    assert made == tuple(plain.decoded(v["role"], v["content"]) for v in values)
    assert made is not None
    assert all(
        a is plain.decoded(v["role"], v["content"]) for a, v in zip(made, values, strict=True)
    )
    plain.forget()
