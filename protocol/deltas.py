# Runs of delta events, encoded from a template. Most of a stream is deltas (message text,
# refusals, function-call arguments, reasoning summaries) whose events differ only in their
# sequence number and delta, so a run of them is one value (no event object per token) and is
# encoded with one string format per event. The template is cut from the codec's own encoding of
# a sample event, so a run's bytes are exactly what `codec.encode_event` gives for its events.
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import attrs
import orjson

from protocol import codec
from protocol.events import (
    ArgumentsDeltaEvent,
    CustomInputDeltaEvent,
    ReasoningSummaryDeltaEvent,
    RefusalDeltaEvent,
    TextDeltaEvent,
)

E = TypeVar(
    "E",
    TextDeltaEvent,
    RefusalDeltaEvent,
    ArgumentsDeltaEvent,
    CustomInputDeltaEvent,
    ReasoningSummaryDeltaEvent,
)

Fields = tuple[tuple[str, Any], ...]  # what a run's events share, in wire order

_SEQ = 918_273_645_546_372_819  # stand-ins cut out of a sample event's encoding
_DELTA = "\x00rollout delta\x00"


@attrs.frozen
class DeltaRun(Generic[E]):
    """`deltas` as consecutive events of class `cls`, numbered from `sequence_number`; `fields`
    are the other fields they share (item id, output index, content or summary index)."""

    cls: type[E]
    sequence_number: int
    fields: Fields
    deltas: Sequence[str]
    plain: bool = False  # known: JSON writes every delta as it is (else `sse_run` checks)

    def __len__(self) -> int:
        return len(self.deltas)

    @property
    def type(self) -> str:
        cls: Any = self.cls  # (hashable: see _fields)
        return _shape(cls)[0]

    def events(self) -> list[E]:
        fields = dict(self.fields)
        n = self.sequence_number
        return [
            self.cls(sequence_number=n + i, delta=d, **fields) for i, d in enumerate(self.deltas)
        ]

    def split(self, k: int) -> tuple[DeltaRun[E], DeltaRun[E]]:
        """The first `k` events and the rest, as two runs."""
        head = attrs.evolve(self, deltas=self.deltas[:k])
        tail = attrs.evolve(self, sequence_number=self.sequence_number + k, deltas=self.deltas[k:])
        return head, tail


@functools.lru_cache(maxsize=4096)
def _parts(cls: Any, fields: Fields, stream_id: str | None) -> list[bytes]:
    """A run's event encoding cut where the sequence number and the delta's JSON go."""
    sample = cls(sequence_number=_SEQ, delta=_DELTA, **dict(fields))
    head, rest = codec.encode_event(sample, stream_id).split(b"%d" % _SEQ)
    return [head, *rest.split(orjson.dumps(_DELTA))]


@functools.lru_cache(maxsize=4096)
def _sse_parts(cls: Any, fields: Fields) -> list[str]:
    """The SSE framing of `_parts`, as text, with the delta's quotes in the template."""
    head, middle, tail = _parts(cls, fields, None)
    kind = str(attrs.fields_dict(cls)["type"].default)
    return [
        f"event: {kind}\ndata: {head.decode()}",
        middle.decode() + '"',
        '"' + tail.decode() + "\n\n",
    ]


def _fields(run: DeltaRun[Any]) -> tuple[Any, Fields]:
    cls: Any = run.cls  # a class is hashable (mypy cannot see it through type[E])
    return cls, run.fields


@functools.cache
def _shape(cls: Any) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """An event class's `type`, and the fields after its delta with their defaults."""
    names = [f.name for f in attrs.fields(cls)]
    after = attrs.fields(cls)[names.index("delta") + 1 :]
    return str(attrs.fields_dict(cls)["type"].default), tuple((f.name, f.default) for f in after)


def _one(run: DeltaRun[Any], stream_id: str | None) -> bytes:
    """A run of one event, encoded as `codec.encode_event` encodes that event (its fields in
    the class's order), without the event."""
    cls: Any = run.cls  # (hashable: see _fields)
    kind, after = _shape(cls)
    data = {"type": kind, "sequence_number": run.sequence_number}
    data.update(run.fields)
    data["delta"] = run.deltas[0]
    data.update(after)
    if stream_id is not None:
        data["stream_id"] = stream_id
    return orjson.dumps(data)


#: A run of at most FEW deltas is encoded event by event: a template costs about as much to
#: make as 12 events do to encode directly, and is made for each item (a call's arguments are
#: one run: its template would serve it alone); past about 16, a template's events cost less.
FEW = 16


def _each(run: DeltaRun[Any], stream_id: str | None) -> list[bytes]:
    """A short run's events, each encoded as `codec.encode_event` encodes it (its fields in the
    class's order), from one dict whose number and delta change."""
    cls: Any = run.cls  # (hashable: see _fields)
    kind, after = _shape(cls)
    n = run.sequence_number
    data = {"type": kind, "sequence_number": n}
    data.update(run.fields)
    data["delta"] = ""
    data.update(after)
    if stream_id is not None:
        data["stream_id"] = stream_id
    out = []
    for delta in run.deltas:
        data["sequence_number"] = n
        data["delta"] = delta
        out.append(orjson.dumps(data))
        n += 1
    return out


def encode_run(run: DeltaRun[Any], stream_id: str | None = None) -> list[bytes]:
    """Each event's JSON, as `codec.encode_event(event, stream_id)` would give it. A run of
    one (a response's first token) or of a few (a call's arguments) is encoded directly: its
    template would be made for it alone (the fields name the response's item)."""
    if len(run.deltas) == 1:
        return [_one(run, stream_id)]
    if len(run.deltas) <= FEW:
        return _each(run, stream_id)
    head, middle, tail = (p.replace(b"%", b"%%") for p in _parts(*_fields(run), stream_id))
    fmt = head + b"%d" + middle + b"%b" + tail
    n = run.sequence_number
    numbers = range(n, n + len(run.deltas))
    return list(map(fmt.__mod__, zip(numbers, map(orjson.dumps, run.deltas), strict=True)))


#: The ASCII characters JSON writes as they are.
_AS_IS = bytes(range(0x20, 0x80)).replace(b'"', b"").replace(b"\\", b"")


def plain(text: str) -> bool:
    """JSON writes `text` as it is (no control character, quote or backslash to escape; a few
    printable-but-not-`isprintable` characters take the general path too, which is exact)."""
    if text.isascii():  # a byte translation is five times faster than `isprintable`
        return not text.encode("ascii").translate(None, _AS_IS)
    return text.isprintable() and '"' not in text and "\\" not in text


@functools.cache
def _numbers() -> list[str]:
    """Sequence numbers as text, for the first events of every response (about 4 MB, once)."""
    return [str(i) for i in range(1 << 16)]


def sse_run(run: DeltaRun[Any]) -> bytes:
    """The run's events as SSE body bytes (`event:` and `data:` lines, a blank line after each).
    Deltas that JSON writes as they are (most text) are joined with the template in one pass;
    a run with a delta to escape is encoded event by event."""
    deltas, n = run.deltas, len(run.deltas)
    if not n:
        return b""
    if not (run.plain or plain("".join(deltas))):
        return b"".join(
            b"event: %s\ndata: %s\n\n" % (run.type.encode(), e) for e in encode_run(run)
        )
    head, middle, tail = _sse_parts(*_fields(run))
    # number, middle, delta, and between events the tail of one and the head of the next
    parts = [tail + head] * (4 * n)
    first, numbers = run.sequence_number, _numbers()
    if first + n <= len(numbers):
        parts[0::4] = numbers[first : first + n]
    else:
        parts[0::4] = map(str, range(first, first + n))
    parts[1::4] = [middle] * n
    parts[2::4] = deltas
    parts[0], parts[-1] = head + parts[0], tail
    return "".join(parts).encode()


__all__ = ["DeltaRun", "Fields", "encode_run", "plain", "sse_run"]
