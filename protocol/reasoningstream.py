# The event builders of a reasoning item: its `output_item.added`, each summary part's
# `reasoning_summary_part.added`, its text's `reasoning_summary_text.delta` runs and `.done`,
# the part's `.done`, and the item's `output_item.done` with the finished parts. A mixin of
# ResponseStream (protocol.stream), which supplies the response and the numbering.
from __future__ import annotations

from collections.abc import Sequence

import attrs

from protocol.deltas import DeltaRun, E, Fields
from protocol.events import (
    Event,
    OutputItemEvent,
    ReasoningSummaryDeltaEvent,
    ReasoningSummaryDoneEvent,
    ReasoningSummaryPartEvent,
)
from protocol.items import Item, Reasoning, SummaryText
from protocol.response import Response


@attrs.define
class _OpenReasoning:
    item_id: str
    output_index: int
    summary: list[str] = attrs.field(factory=list)  # finished summary parts
    part: list[str] | None = None  # the summary part being streamed


class ReasoningEvents:
    response: Response
    _reasoning: _OpenReasoning | None

    def _n(self) -> int:
        raise NotImplementedError

    def _item_event(self, type_: str, index: int, item: Item) -> OutputItemEvent:
        raise NotImplementedError

    def _run(self, cls: type[E], fields: Fields, deltas: Sequence[str], plain: bool) -> DeltaRun[E]:
        raise NotImplementedError

    def begin_reasoning(self, item_id: str) -> list[Event]:
        """`output_item.added` of a reasoning item (`summary: []`), before the step's output."""
        index = len(self.response.output)
        item = Reasoning(id=item_id, summary=())
        self.response.output.append(item)
        self._reasoning = _OpenReasoning(item_id=item_id, output_index=index)
        return [self._item_event("response.output_item.added", index, item)]

    def begin_summary_part(self) -> list[Event]:
        r = self._require_reasoning()
        r.part = []
        return [self._summary_part_event("response.reasoning_summary_part.added", r, "")]

    def summary_run(
        self, deltas: Sequence[str], plain: bool = False
    ) -> DeltaRun[ReasoningSummaryDeltaEvent]:
        r = self._require_reasoning()
        assert r.part is not None, "no summary part is open"
        r.part.extend(deltas)
        fields = (
            ("item_id", r.item_id),
            ("output_index", r.output_index),
            ("summary_index", len(r.summary)),
        )
        return self._run(ReasoningSummaryDeltaEvent, fields, deltas, plain)

    def summary_delta(self, delta: str) -> ReasoningSummaryDeltaEvent:
        return self.summary_run((delta,)).events()[0]

    def end_summary_part(self) -> list[Event]:
        r = self._require_reasoning()
        assert r.part is not None, "no summary part is open"
        text = "".join(r.part)
        done = ReasoningSummaryDoneEvent(
            sequence_number=self._n(),
            item_id=r.item_id,
            output_index=r.output_index,
            summary_index=len(r.summary),
            text=text,
        )
        part = self._summary_part_event("response.reasoning_summary_part.done", r, text)
        r.summary.append(text)
        r.part = None
        return [done, part]

    def end_reasoning(self, encrypted_content: str | None = None) -> list[Event]:
        """`output_item.done` with the finished summary parts (and the opaque blob, when the
        request asked for `reasoning.encrypted_content`)."""
        r = self._require_reasoning()
        self._reasoning = None
        item = Reasoning(
            id=r.item_id,
            summary=tuple(SummaryText(text=t) for t in r.summary),
            encrypted_content=encrypted_content,
        )
        self.response.output[r.output_index] = item
        return [self._item_event("response.output_item.done", r.output_index, item)]

    def _require_reasoning(self) -> _OpenReasoning:
        if self._reasoning is None:
            raise RuntimeError("no reasoning item is open")
        return self._reasoning

    def _summary_part_event(
        self, type_: str, r: _OpenReasoning, text: str
    ) -> ReasoningSummaryPartEvent:
        return ReasoningSummaryPartEvent(
            type=type_,  # type: ignore[arg-type]
            sequence_number=self._n(),
            item_id=r.item_id,
            output_index=r.output_index,
            summary_index=len(r.summary),
            part=SummaryText(text=text),
        )
