# Event builders: a small state machine per response that turns "what happened" into the exact
# event sequences of spec §2.5 (text, function calls, hosted web search) and the append shape's
# pause. It numbers events (`sequence_number` from 0, contiguous, never restarting inside one
# response, pauses included) and output items (`output_index` keeps counting across pauses).
# Sans-IO: ids and timestamps are passed in; nothing here reads a clock or sends anything.
from collections.abc import Sequence

import attrs

from protocol.events import (
    AnnotationAddedEvent,
    ArgumentsDeltaEvent,
    ArgumentsDoneEvent,
    ContentPartEvent,
    ErrorEvent,
    ErrorPayload,
    Event,
    OutputItemEvent,
    PauseEvent,
    PendingCall,
    ResponseEvent,
    TextDeltaEvent,
    TextDoneEvent,
    WebSearchCallEvent,
)
from protocol.items import (
    FunctionCall,
    Message,
    OutputText,
    UrlCitation,
    WebSearchAction,
    WebSearchCall,
)
from protocol.response import IncompleteDetails, Response, ResponseError, Usage


@attrs.define
class _OpenText:
    item_id: str
    output_index: int
    text: list[str] = attrs.field(factory=list)
    annotations: list[UrlCitation] = attrs.field(factory=list)


class ResponseStream:
    """Builds the events of one response. Each method returns the events it produced, in order."""

    def __init__(self, response: Response) -> None:
        self.response = response
        self._seq = 0
        self._text: _OpenText | None = None
        self.terminal: ResponseEvent | None = None

    @property
    def next_sequence_number(self) -> int:
        return self._seq

    @property
    def next_output_index(self) -> int:
        return len(self.response.output)

    def _n(self) -> int:
        n = self._seq
        self._seq += 1
        return n

    def _lifecycle(self, type_: str, snapshot: Response | None = None) -> ResponseEvent:
        return ResponseEvent(
            type=type_,  # type: ignore[arg-type]
            sequence_number=self._n(),
            response=snapshot or self.response.snapshot(),
        )

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> list[Event]:
        """`response.created` then `response.in_progress` (one snapshot: nothing changes between
        the two)."""
        snapshot = self.response.snapshot()
        return [
            self._lifecycle("response.created", snapshot),
            self._lifecycle("response.in_progress", snapshot),
        ]

    def created_only(self) -> list[Event]:
        return [self._lifecycle("response.created")]

    def complete(self, usage: Usage, completed_at: int) -> list[Event]:
        self._check_open()
        self.response.status = "completed"
        self.response.completed_at = completed_at
        self.response.usage = usage
        return self._end("response.completed")

    def incomplete(self, reason: str, usage: Usage) -> list[Event]:
        self._check_open()
        self.response.status = "incomplete"
        self.response.incomplete_details = IncompleteDetails(reason=reason)
        self.response.usage = usage
        return self._end("response.incomplete")

    def fail(self, code: str, message: str, usage: Usage | None = None) -> list[Event]:
        """An `error` event (nested, spec §5.4) followed by `response.failed`."""
        self._check_open()
        self._close_open_text()
        self.response.status = "failed"
        self.response.error = ResponseError(code=code, message=message)
        self.response.usage = usage
        error = ErrorEvent(
            error=ErrorPayload(type="server_error", code=code, message=message, param=None),
            sequence_number=self._n(),
        )
        return [error, *self._end("response.failed")]

    def _check_open(self) -> None:
        if self.terminal is not None:
            raise RuntimeError("a response has exactly one terminal event")

    def _end(self, type_: str) -> list[Event]:
        event = self._lifecycle(type_)
        self.terminal = event
        return [event]

    def _close_open_text(self) -> None:
        self._text = None

    # -- text -----------------------------------------------------------------------------------

    def begin_text(self, item_id: str) -> list[Event]:
        index = self.next_output_index
        item = Message(id=item_id, role="assistant", content=(), status="in_progress")
        self.response.output.append(item)
        self._text = _OpenText(item_id=item_id, output_index=index)
        part = OutputText(text="")
        return [
            OutputItemEvent(
                type="response.output_item.added",
                sequence_number=self._n(),
                output_index=index,
                item=item,
            ),
            ContentPartEvent(
                type="response.content_part.added",
                sequence_number=self._n(),
                item_id=item_id,
                output_index=index,
                content_index=0,
                part=part,
            ),
        ]

    def text_delta(self, delta: str) -> TextDeltaEvent:
        t = self._require_text()
        t.text.append(delta)
        return TextDeltaEvent(
            sequence_number=self._n(),
            item_id=t.item_id,
            output_index=t.output_index,
            content_index=0,
            delta=delta,
        )

    def annotate(self, annotation: UrlCitation) -> AnnotationAddedEvent:
        t = self._require_text()
        t.annotations.append(annotation)
        return AnnotationAddedEvent(
            sequence_number=self._n(),
            item_id=t.item_id,
            output_index=t.output_index,
            content_index=0,
            annotation_index=len(t.annotations) - 1,
            annotation=annotation,
        )

    def end_text(self, status: str = "completed") -> list[Event]:
        """Close the open message (`status` "incomplete" when the output budget cut it)."""
        t = self._require_text()
        self._text = None
        text = "".join(t.text)
        part = OutputText(text=text, annotations=tuple(t.annotations))
        item = Message(id=t.item_id, role="assistant", content=(part,), status=status)
        self.response.output[t.output_index] = item
        return [
            TextDoneEvent(
                sequence_number=self._n(),
                item_id=t.item_id,
                output_index=t.output_index,
                content_index=0,
                text=text,
            ),
            ContentPartEvent(
                type="response.content_part.done",
                sequence_number=self._n(),
                item_id=t.item_id,
                output_index=t.output_index,
                content_index=0,
                part=part,
            ),
            OutputItemEvent(
                type="response.output_item.done",
                sequence_number=self._n(),
                output_index=t.output_index,
                item=item,
            ),
        ]

    def _require_text(self) -> _OpenText:
        if self._text is None:
            raise RuntimeError("no text item is open")
        return self._text

    # -- function calls -------------------------------------------------------------------------

    def begin_call(self, item_id: str, call_id: str, name: str) -> list[Event]:
        index = self.next_output_index
        item = FunctionCall(
            id=item_id, call_id=call_id, name=name, arguments="", status="in_progress"
        )
        self.response.output.append(item)
        return [
            OutputItemEvent(
                type="response.output_item.added",
                sequence_number=self._n(),
                output_index=index,
                item=item,
            )
        ]

    def arguments_delta(self, output_index: int, delta: str) -> ArgumentsDeltaEvent:
        item = self.response.output[output_index]
        assert isinstance(item, FunctionCall)
        return ArgumentsDeltaEvent(
            sequence_number=self._n(), item_id=item.id or "", output_index=output_index, delta=delta
        )

    def end_call(self, output_index: int, arguments: str, status: str = "completed") -> list[Event]:
        item = self.response.output[output_index]
        assert isinstance(item, FunctionCall)
        done = attrs.evolve(item, arguments=arguments, status=status)
        self.response.output[output_index] = done
        return [
            ArgumentsDoneEvent(
                sequence_number=self._n(),
                item_id=done.id or "",
                output_index=output_index,
                name=done.name,
                arguments=arguments,
            ),
            OutputItemEvent(
                type="response.output_item.done",
                sequence_number=self._n(),
                output_index=output_index,
                item=done,
            ),
        ]

    # -- hosted web search ----------------------------------------------------------------------

    def begin_web_search(self, item_id: str) -> list[Event]:
        """`output_item.added` (no action yet), then `.in_progress` and `.searching`."""
        index = self.next_output_index
        item = WebSearchCall(id=item_id, status="in_progress")
        self.response.output.append(item)
        return [
            OutputItemEvent(
                type="response.output_item.added",
                sequence_number=self._n(),
                output_index=index,
                item=item,
            ),
            self._search_event("response.web_search_call.in_progress", index, item_id),
            self._search_event("response.web_search_call.searching", index, item_id),
        ]

    def end_web_search(self, output_index: int, action: WebSearchAction) -> list[Event]:
        item = self.response.output[output_index]
        assert isinstance(item, WebSearchCall)
        done = attrs.evolve(item, status="completed", action=action)
        self.response.output[output_index] = done
        return [
            self._search_event("response.web_search_call.completed", output_index, item.id),
            OutputItemEvent(
                type="response.output_item.done",
                sequence_number=self._n(),
                output_index=output_index,
                item=done,
            ),
        ]

    def _search_event(self, type_: str, index: int, item_id: str) -> WebSearchCallEvent:
        return WebSearchCallEvent(
            type=type_,  # type: ignore[arg-type]
            sequence_number=self._n(),
            output_index=index,
            item_id=item_id,
        )

    # -- the append shape -----------------------------------------------------------------------

    def pause(self, calls: Sequence[FunctionCall], usage: Usage) -> PauseEvent:
        """`response.done`: small on purpose, it does not repeat the response snapshot."""
        return PauseEvent(
            sequence_number=self._n(),
            response_id=self.response.id,
            pending_calls=tuple(
                PendingCall(call_id=c.call_id, name=c.name, item_id=c.id or "") for c in calls
            ),
            usage=usage,
        )


def replay(final: Response) -> list[Event]:
    """The event stream of a finished response, rebuilt from its final state (for `GET
    /v1/responses/{id}?stream=true`): each text part and argument string as one delta."""
    start = attrs.evolve(final, status="in_progress", output=[], usage=None, completed_at=None)
    start.error = None
    start.incomplete_details = None
    s = ResponseStream(start)
    events: list[Event] = s.start()
    for item in final.output:
        index = s.next_output_index
        if isinstance(item, Message):
            events += s.begin_text(item.id or "")
            for part in item.content if not isinstance(item.content, str) else ():
                if isinstance(part, OutputText):
                    events.append(s.text_delta(part.text))
                    events += [s.annotate(a) for a in part.annotations]
            events += s.end_text(item.status or "completed")
        elif isinstance(item, FunctionCall):
            events += s.begin_call(item.id or "", item.call_id, item.name)
            events.append(s.arguments_delta(index, item.arguments))
            events += s.end_call(index, item.arguments, item.status or "completed")
        elif isinstance(item, WebSearchCall) and item.action is not None:
            events += s.begin_web_search(item.id)
            events += s.end_web_search(index, item.action)
        else:
            s.response.output.append(item)
            events.append(
                OutputItemEvent(
                    type="response.output_item.added",
                    sequence_number=s._n(),
                    output_index=index,
                    item=item,
                )
            )
            events.append(
                OutputItemEvent(
                    type="response.output_item.done",
                    sequence_number=s._n(),
                    output_index=index,
                    item=item,
                )
            )
    usage = final.usage or Usage()
    if final.status == "completed":
        events += s.complete(usage, final.completed_at or final.created_at)
    elif final.status == "incomplete":
        reason = final.incomplete_details.reason if final.incomplete_details else "unknown"
        events += s.incomplete(reason, usage)
    else:
        error = final.error or ResponseError(code="server_error", message="")
        events += s.fail(error.code, error.message, usage)
    return events
