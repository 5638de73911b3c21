# The event stream of a finished response, rebuilt from its final state (for `GET
# /v1/responses/{id}?stream=true`) with the same builders a live response uses: each text part,
# refusal, summary part and argument string comes back as one delta.
import attrs

from protocol.clientitems import CLIENT_CALLS, CustomToolCall
from protocol.events import Event
from protocol.hosted import HOSTED_BY_ITEM, HOSTED_ITEMS
from protocol.items import FunctionCall, Message, OutputText, Reasoning, Refusal
from protocol.response import Response, ResponseError, Usage
from protocol.stream import ResponseStream


def _one_part(item: Message) -> bool:
    """An assistant message the builders can rebuild: one output_text or refusal part."""
    content = item.content
    return (
        not isinstance(content, str)
        and len(content) == 1
        and isinstance(content[0], OutputText | Refusal)
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
        if isinstance(item, Message) and _one_part(item):
            part = item.content[0]
            events += s.begin_text(item.id or "", refusal=isinstance(part, Refusal))
            if isinstance(part, Refusal):
                events.append(s.text_delta(part.refusal))
            elif isinstance(part, OutputText):
                events.append(s.text_delta(part.text))
                events += [s.annotate(a) for a in part.annotations]
            events += s.end_text(item.status or "completed")
        elif isinstance(item, Reasoning) and item.id is not None:
            events += s.begin_reasoning(item.id)
            for summary in item.summary:
                events += s.begin_summary_part()
                events.append(s.summary_delta(summary.text))
                events += s.end_summary_part()
            events += s.end_reasoning(item.encrypted_content)
        elif isinstance(item, FunctionCall):
            events += s.begin_call(item.id or "", item.call_id, item.name, item.async_)
            events.append(s.arguments_delta(index, item.arguments))
            events += s.end_call(index, item.arguments, item.status or "completed")
        elif isinstance(item, CustomToolCall):
            events += s.begin_custom(item.id or "", item.call_id, item.name)
            events.append(s.input_delta(index, item.input))
            events += s.end_custom(index, item.input, item.status)
        elif isinstance(item, CLIENT_CALLS):
            events += s.client_call(item)
        elif isinstance(item, HOSTED_ITEMS) and getattr(item, "status", "completed") in (
            "completed",
            "failed",
        ):
            tool = HOSTED_BY_ITEM[type(item)]
            events += s.begin_hosted(tool, item.id or "", tool.opened(item))
            events += s.end_hosted(index, item)
        else:
            s.response.output.append(item)
            for kind in ("response.output_item.added", "response.output_item.done"):
                events.append(s._item_event(kind, index, item))
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
