# The hosted tools' table (protocol.hosted.HOSTED_TOOLS) holds together: each row's item is an
# output item of the wire, its events are event types of the wire with the shape the builders
# make, and the builders stream a call of it from its opening to its completion.
from __future__ import annotations

from typing import Any, get_args

import attrs
import pytest

from protocol import codec
from protocol.events import CLASS_BY_TYPE
from protocol.hosted import (
    HOSTED_BY_CHOICE,
    HOSTED_BY_ITEM,
    HOSTED_BY_TYPE,
    HOSTED_TOOLS,
    HostedTool,
)
from protocol.items import (
    CodeInterpreterCall,
    ComputerCall,
    FileSearchCall,
    ImageGenerationCall,
    Item,
    McpApprovalRequest,
    McpCall,
    McpListTools,
    WebSearchCall,
)
from protocol.response import Response
from protocol.stream import ResponseStream


def _response() -> Response:
    return Response(id="resp_1", created_at=0, model="m", status="in_progress")


#: A completed call of each hosted tool.
DONE: dict[type, Any] = {
    WebSearchCall: WebSearchCall(id="ws_1", status="completed"),
    McpListTools: McpListTools(id="mcpl_1", server_label="s", tools=({"name": "t"},)),
    McpCall: McpCall(
        id="mcp_1", server_label="s", name="t", arguments='{"a": 1}', output="1", status="completed"
    ),
    McpApprovalRequest: McpApprovalRequest(id="mcpr_1", server_label="s", name="t", arguments="{}"),
    CodeInterpreterCall: CodeInterpreterCall(
        id="ci_1",
        status="completed",
        container_id="cntr_1",
        code="print(1)",
        outputs=({"type": "logs", "logs": "1"},),
    ),
    FileSearchCall: FileSearchCall(id="fs_1", status="completed", queries=("q",), results=()),
    ImageGenerationCall: ImageGenerationCall(id="ig_1", status="completed", result="iVBO"),
    ComputerCall: ComputerCall(
        id="cu_1", call_id="call_1", action={"type": "screenshot"}, status="completed"
    ),
}


@pytest.mark.parametrize("tool", HOSTED_TOOLS, ids=lambda t: t.name)
def test_a_row_names_the_wire_it_streams(tool: HostedTool) -> None:
    assert tool.item in get_args(Item)
    assert HOSTED_BY_ITEM[tool.item] is tool
    assert all(HOSTED_BY_TYPE[t] is tool for t in tool.types)
    assert tool.types <= tool.choices and all(HOSTED_BY_CHOICE[c] is tool for c in tool.choices)
    closing = [t for t in (tool.completed, tool.failed) if t]
    for type_ in (*tool.opening, *tool.working, *closing):
        fields = set(attrs.fields_dict(CLASS_BY_TYPE[type_]))
        assert fields == {"type", "sequence_number", "output_index", "item_id"}
    if tool.streamed is not None:
        assert set(attrs.fields_dict(CLASS_BY_TYPE[tool.delta])) >= {"delta", "item_id"}
        assert tool.done_key in attrs.fields_dict(CLASS_BY_TYPE[tool.done])


@pytest.mark.parametrize("tool", HOSTED_TOOLS, ids=lambda t: t.name)
def test_a_call_opens_and_completes_through_the_builders(tool: HostedTool) -> None:
    s = ResponseStream(_response())
    done = DONE[tool.item]
    opened = s.begin_hosted(tool, done.id, tool.opened(done))
    item = s.response.output[0]
    assert isinstance(item, tool.item) and getattr(item, "status", "in_progress") == "in_progress"
    closed = s.end_hosted(0, done)
    streamed = []
    if tool.streamed is not None:
        streamed = [tool.delta, tool.done] if tool.streamed(item) else [tool.done]
    assert [e.type for e in opened] == [
        "response.output_item.added",
        *tool.opening,
        *streamed,
        *tool.working,
    ]
    closing = [tool.completed] if tool.completed else []
    assert [e.type for e in closed] == [*closing, "response.output_item.done"]
    assert [e.sequence_number for e in [*opened, *closed]] == list(range(len(opened) + len(closed)))
    assert s.response.output == [done]
    wire = codec.to_json(item)
    assert wire["type"] == tool.item_type and not any(k in wire for k in tool.omit_none)
    if tool.streamed is not None:
        text = tool.streamed(item)
        assert getattr(opened[-1 - len(tool.working)], tool.done_key) == text


def test_a_failed_call_closes_with_its_failed_event() -> None:
    s = ResponseStream(_response())
    done = attrs.evolve(DONE[McpCall], status="failed", output=None, error={"type": "http_error"})
    tool = HOSTED_BY_ITEM[McpCall]
    s.begin_hosted(tool, done.id, tool.opened(done))
    closed = s.end_hosted(0, done)
    assert [e.type for e in closed] == ["response.mcp_call.failed", "response.output_item.done"]
