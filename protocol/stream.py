# Event builders: a small state machine per response that turns "what happened" into the exact
# event sequences of spec §2.5 (reasoning with summary parts, in protocol.reasoningstream; text
# and refusals, function calls; the other tools' calls, in protocol.toolstream) and the append
# shape's pause. It numbers events (`sequence_number` from 0, contiguous, never restarting
# inside one response, pauses included) and output items (`output_index` keeps counting across
# pauses).
# Sans-IO: ids and timestamps are passed in; nothing here reads a clock or sends anything.

from collections.abc import Sequence
from typing import Any

import attrs

from protocol.agentitems import AGENT_ITEMS, AgentRef
from protocol.control import ControlEvents
from protocol.deltas import DeltaRun, E, Fields
from protocol.events import (
    AnnotationAddedEvent,
    ArgumentsDeltaEvent,
    ArgumentsDoneEvent,
    ContentPartEvent,
    ErrorEvent,
    ErrorPayload,
    Event,
    OutputItemEvent,
    RefusalDeltaEvent,
    RefusalDoneEvent,
    ResponseEvent,
    TextDeltaEvent,
    TextDoneEvent,
)
from protocol.items import (
    Annotation,
    FunctionCall,
    Item,
    Message,
    OutputText,
    Reasoning,
    Refusal,
    WebSearchCall,
)
from protocol.reasoningstream import ReasoningEvents
from protocol.response import IncompleteDetails, Response, ResponseError, Usage
from protocol.toolstream import ClientToolEvents, HostedToolEvents

#: The items that say which agent made them (the SDK's beta types give more; these are the ones
#: this server makes).
AGENT_STAMPED = frozenset({Message, FunctionCall, Reasoning, WebSearchCall, *AGENT_ITEMS})
_EMPTY_TEXT = OutputText(text="")  # the part a message opens with (frozen: one for all)
_EMPTY_REFUSAL = Refusal(refusal="")


def reopen(response: Response) -> None:
    """`response` as it was before its end: `in_progress`, without the fields an end sets."""
    response.status = "in_progress"
    response.completed_at = None
    response.incomplete_details = None
    response.error = None
    response.usage = None


def _replacing(cls: type, names: tuple[str, ...]) -> Any:
    """`attrs.evolve(item, **dict(zip(names, values)))` for an item of `cls`, as a function of
    the item and the values: generated from the class's fields (evolve looks them up at each
    call, and a call's end is on every step of calls)."""
    args = ", ".join(f"{name}=v{i}" for i, name in enumerate(names))
    kept = ", ".join(
        f"{f.alias}=item.{f.name}" for f in attrs.fields(cls) if f.init and f.name not in names
    )
    values = ", ".join(f"v{i}" for i in range(len(names)))
    source = f"def replaced(item, {values}):\n    return cls({args}, {kept})"
    namespace: dict[str, Any] = {"cls": cls}
    exec(source, namespace)  # the source is built from the class's own field names
    return namespace["replaced"]


#: A function call's item at its end: its arguments and status set.
_ended_call = _replacing(FunctionCall, ("arguments", "status"))


@attrs.define
class _OpenText:
    item_id: str
    output_index: int
    refusal: bool = False  # a `refusal` content part instead of `output_text`
    text: list[str] = attrs.field(factory=list)
    annotations: list[Annotation] = attrs.field(factory=list)


class ResponseStream(ControlEvents, ReasoningEvents, ClientToolEvents, HostedToolEvents):
    """Builds the events of one response. Each method returns the events it produced, in order."""

    def __init__(self, response: Response, agent: AgentRef | None = None) -> None:
        self.response = response
        self._seq = 0
        self._text: _OpenText | None = None
        self._reasoning = None
        self.terminal: ResponseEvent | None = None
        #: In a multi-agent response, the agent whose items this stream builds: each item that
        #: can say so carries it (`agent`). Each agent has its own stream over the one Response
        #: (output indexes are shared); the response's sink numbers events as they are sent.
        self.agent = agent

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

    def queued(self) -> list[Event]:
        """A background response's first events: `response.created` and `response.queued`
        (status `queued`); `start_queued` follows when it leaves the queue."""
        self.response.status = "queued"
        snapshot = self.response.snapshot()
        return [
            self._lifecycle("response.created", snapshot),
            self._lifecycle("response.queued", snapshot),
        ]

    def start_queued(self) -> list[Event]:
        """`response.in_progress`: a queued (background) response starts."""
        self.response.status = "in_progress"
        return [self._lifecycle("response.in_progress")]

    def opening(self) -> list[Event]:
        """What a response's loop sends first: `start`, or `start_queued` once `queued`."""
        return self.start_queued() if self.response.status == "queued" else self.start()

    def created_only(self) -> list[Event]:
        return [self._lifecycle("response.created")]

    def complete(self, usage: Usage, completed_at: int) -> list[Event]:
        self._check_open()
        self.response.completed_at = completed_at
        return self._end("completed", usage)

    def incomplete(self, reason: str, usage: Usage) -> list[Event]:
        self._check_open()
        self.response.incomplete_details = IncompleteDetails(reason=reason)
        return self._end("incomplete", usage)

    def cancelled(self, usage: Usage) -> list[Event]:
        """Status `cancelled` (a cancel, or a streaming client gone): no event type of its own
        exists, so the terminal event is `response.incomplete` carrying that status."""
        self._check_open()
        self._close_open_text()
        self.response.status = "cancelled"
        self.response.usage = usage
        event = self._lifecycle("response.incomplete")
        self.terminal = event
        return [event]

    def fail(self, code: str, message: str, usage: Usage | None = None) -> list[Event]:
        """An `error` event followed by `response.failed` (the error framed per transport:
        protocol.codec)."""
        self._check_open()
        self._close_open_text()
        self.response.error = ResponseError(code=code, message=message)
        error = ErrorEvent(
            error=ErrorPayload(type="server_error", code=code, message=message, param=None),
            sequence_number=self._n(),
        )
        return [error, *self._end("failed", usage)]

    def retract(self, events: Sequence[Event]) -> None:
        """Take back the end just made (`events`, its terminal events) before any of them was
        sent: the stream is open again, numbered from the first of them, and the response is
        `in_progress` as before, so that another end follows (the engine's, when storing the
        response failed in between: it ends `failed` instead)."""
        first = events[0].sequence_number if events else None
        if self.terminal is None or first is None:
            raise RuntimeError("only an end not yet sent can be taken back")
        self._seq = first
        self.terminal = None
        reopen(self.response)

    def _check_open(self) -> None:
        if self.terminal is not None:
            raise RuntimeError("a response has exactly one terminal event")

    def _end(self, status: str, usage: Usage | None) -> list[Event]:
        self.response.status = status
        self.response.usage = usage
        event = self._lifecycle(f"response.{status}")
        self.terminal = event
        return [event]

    def _close_open_text(self) -> None:
        self._text = None
        self._reasoning = None

    # -- text -----------------------------------------------------------------------------------

    def begin_text(self, item_id: str, *, refusal: bool = False) -> list[Event]:
        """Open an assistant message with one content part: `output_text`, or a `refusal`
        (then deltas are `response.refusal.delta` and the part ends with `.refusal.done`)."""
        output = self.response.output
        index = len(output)
        item = Message(id=item_id, role="assistant", content=(), status="in_progress")
        output.append(item)
        self._text = _OpenText(item_id=item_id, output_index=index, refusal=refusal)
        part: OutputText | Refusal = _EMPTY_REFUSAL if refusal else _EMPTY_TEXT
        added = self._item_event("response.output_item.added", index, item)
        n = self._seq
        self._seq = n + 1
        return [
            added,
            ContentPartEvent(
                type="response.content_part.added",
                sequence_number=n,
                item_id=item_id,
                output_index=index,
                content_index=0,
                part=part,
            ),
        ]

    def text_run(
        self, deltas: Sequence[str], plain: bool = False
    ) -> DeltaRun[TextDeltaEvent] | DeltaRun[RefusalDeltaEvent]:
        """Deltas of the open message's text (or refusal), as one run of events (`plain`: known
        to need no escape in JSON)."""
        t = self._require_text()
        t.text.extend(deltas)
        fields = (("item_id", t.item_id), ("output_index", t.output_index), ("content_index", 0))
        if t.refusal:
            return self._run(RefusalDeltaEvent, fields, deltas, plain)
        return self._run(TextDeltaEvent, fields, deltas, plain)

    def text_delta(self, delta: str) -> TextDeltaEvent | RefusalDeltaEvent:
        return self.text_run((delta,)).events()[0]

    def _run(self, cls: type[E], fields: Fields, deltas: Sequence[str], plain: bool) -> DeltaRun[E]:
        n = self._seq
        self._seq += len(deltas)
        return DeltaRun(cls, n, fields, deltas, plain)

    def annotate(self, annotation: Annotation) -> AnnotationAddedEvent:
        t = self._require_text()
        t.annotations.append(annotation)
        return AnnotationAddedEvent(
            **self._in_part(t),
            annotation_index=len(t.annotations) - 1,
            annotation=annotation,
        )

    def end_text(self, status: str = "completed") -> list[Event]:
        """Close the open message (`status` "incomplete" when the output budget cut it)."""
        t = self._require_text()
        self._text = None
        text = "".join(t.text)
        item_id, index, n = t.item_id, t.output_index, self._seq
        self._seq = n + 2  # (the done event and the part's; the item's numbers itself)
        part: OutputText | Refusal
        done: TextDoneEvent | RefusalDoneEvent
        if t.refusal:
            part = Refusal(refusal=text)
            done = RefusalDoneEvent(
                sequence_number=n,
                item_id=item_id,
                output_index=index,
                content_index=0,
                refusal=text,
            )
        else:
            part = OutputText(text=text, annotations=tuple(t.annotations))
            done = TextDoneEvent(
                sequence_number=n, item_id=item_id, output_index=index, content_index=0, text=text
            )
        item = Message(id=item_id, role="assistant", content=(part,), status=status)
        self.response.output[index] = item
        part_done = ContentPartEvent(
            type="response.content_part.done",
            sequence_number=n + 1,
            item_id=item_id,
            output_index=index,
            content_index=0,
            part=part,
        )
        return [done, part_done, self._item_event("response.output_item.done", index, item)]

    def _in_part(self, t: _OpenText) -> dict[str, Any]:
        """The next event's sequence number and where it stands: the open message's one
        content part."""
        at = {"item_id": t.item_id, "output_index": t.output_index, "content_index": 0}
        return {"sequence_number": self._n(), **at}

    def _require_text(self) -> _OpenText:
        if self._text is None:
            raise RuntimeError("no text item is open")
        return self._text

    def _item_event(self, type_: str, index: int, item: Item) -> OutputItemEvent:
        if self.agent is not None and type(item) in AGENT_STAMPED:
            item = attrs.evolve(item, agent=self.agent)  # type: ignore[arg-type]
            self.response.output[index] = item
        n = self._seq
        self._seq = n + 1
        return OutputItemEvent(
            type=type_,  # type: ignore[arg-type]
            sequence_number=n,
            output_index=index,
            item=item,
        )

    # -- function calls -------------------------------------------------------------------------

    def begin_call(
        self, item_id: str, call_id: str, name: str, async_: bool | None = None
    ) -> list[Event]:
        index = self.next_output_index
        item = FunctionCall(
            id=item_id,
            call_id=call_id,
            name=name,
            arguments="",
            status="in_progress",
            async_=async_,
        )
        self.response.output.append(item)
        return [self._item_event("response.output_item.added", index, item)]

    def arguments_run(
        self, output_index: int, deltas: Sequence[str], plain: bool = False
    ) -> DeltaRun[ArgumentsDeltaEvent]:
        item = self.response.output[output_index]
        assert isinstance(item, FunctionCall)
        fields = (("item_id", item.id or ""), ("output_index", output_index))
        return self._run(ArgumentsDeltaEvent, fields, deltas, plain)

    def arguments_delta(self, output_index: int, delta: str) -> ArgumentsDeltaEvent:
        return self.arguments_run(output_index, (delta,)).events()[0]

    def end_call(self, output_index: int, arguments: str, status: str = "completed") -> list[Event]:
        item = self.response.output[output_index]
        assert isinstance(item, FunctionCall)
        done = _ended_call(item, arguments, status)
        self.response.output[output_index] = done
        return [
            ArgumentsDoneEvent(
                sequence_number=self._n(),
                item_id=done.id or "",
                output_index=output_index,
                name=done.name,
                arguments=arguments,
            ),
            self._item_event("response.output_item.done", output_index, done),
        ]
