"""A batch of an engine's chunks (one network read) read through the plain-text fast path gives
the pieces the per-chunk path gives, whatever the chunks are: each chunk's own translation,
merged as a batch is."""

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from rollout.model import pieces as p
from rollout.upstream import chat
from rollout.upstream.model import _batch, _Chat

texts = st.text(min_size=0, max_size=4)


def _choice(delta: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, **extra}]}


chunks = st.one_of(
    texts.map(lambda t: _choice({"content": t})),
    texts.map(lambda t: _choice({"content": t, "role": "assistant"})),
    texts.map(lambda t: _choice({"reasoning_content": t})),
    texts.map(lambda t: _choice({"refusal": t})),
    texts.map(lambda t: _choice({"content": t}, finish_reason="stop")),
    texts.map(lambda t: {**_choice({"content": t}), "usage": {"prompt_tokens": 3}}),
    texts.map(lambda t: {"choices": [{"index": 1, "delta": {"content": t}}]}),
    texts.map(lambda t: {"choices": [_choice({"content": t})["choices"][0]] * 2}),
    st.just(_choice({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f"}}]})),
    st.just(_choice({"content": 5})),
    st.just({"choices": []}),
)


class _Plain(_Chat):
    """The translator of a chat engine without the fast path (every chunk by `chunk`)."""

    def __init__(self) -> None:
        self.stream = chat.ChatStream()
        self.prompt = 0

    def text(self, data: dict[str, Any]) -> str | None:
        del data
        return None


class _Fast(_Plain):
    def text(self, data: dict[str, Any]) -> str | None:
        return self.stream.plain_text(data)


def _texts(pieces: list[p.Piece]) -> list[object]:
    """Pieces compared by what they carry (a Text's deltas as lists)."""
    out: list[object] = []
    for piece in pieces:
        if isinstance(piece, p.Text):
            counts = piece.deltas.counts
            out.append(("text", list(piece.deltas.texts), None if counts is None else list(counts)))
        else:
            out.append(piece)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(chunks, max_size=8), max_size=5))
def test_the_fast_path_reads_every_batch_as_the_per_chunk_path_does(
    batches: list[list[dict[str, Any]]],
) -> None:
    plain, fast = _Plain(), _Fast()
    for batch in batches:
        data = [orjson.dumps(c) for c in batch]
        slow_pieces, slow_end = _batch(plain, data, whole=False)
        fast_pieces, fast_end = _batch(fast, data, whole=False)
        assert _texts(p.merged(fast_pieces)) == _texts(p.merged(slow_pieces))
        assert fast_end == slow_end
    assert fast.stream.produced == plain.stream.produced
    assert fast.stream.usage == plain.stream.usage
    assert fast.stream.finish == plain.stream.finish


def test_a_long_plain_answer_becomes_one_text_piece_a_batch() -> None:
    fast = _Fast()
    first = [orjson.dumps(_choice({"role": "assistant", "content": "a"}))]
    rest = [orjson.dumps(_choice({"content": str(i % 10)})) for i in range(1000)]
    opened, _ = _batch(fast, first, whole=False)
    assert [type(x) for x in opened] == [p.MessageStart, p.Text]
    pieces, ended = _batch(fast, [*rest, b"[DONE]"], whole=False)
    assert ended and len(pieces) == 1
    (text,) = pieces
    assert isinstance(text, p.Text) and len(text.deltas) == 1000 and text.deltas.tokens == 0


def test_an_event_that_is_not_json_fails_the_step_after_the_text_before_it() -> None:
    fast = _Fast()
    _batch(fast, [orjson.dumps(_choice({"content": "a"}))], whole=False)
    pieces, _ = _batch(fast, [orjson.dumps(_choice({"content": "b"})), b"{nope"], whole=False)
    assert isinstance(pieces[0], p.Text) and list(pieces[0].deltas.texts) == ["b"]
    assert isinstance(pieces[1], p.Failed) and "not JSON" in pieces[1].message
