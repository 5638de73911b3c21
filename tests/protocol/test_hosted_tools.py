# The hosted tools' table (protocol.items.HOSTED_TOOLS) holds together: each row's item is an
# output item of the wire, its events are event types of the wire with the shape the builders
# make, and the builders stream a call of it from its opening to its completion.
from __future__ import annotations

from typing import get_args

import attrs
import pytest

from protocol import codec
from protocol.events import CLASS_BY_TYPE
from protocol.items import (
    HOSTED_BY_CHOICE,
    HOSTED_BY_ITEM,
    HOSTED_BY_TYPE,
    HOSTED_TOOLS,
    HostedTool,
    Item,
)
from protocol.response import Response
from protocol.stream import ResponseStream


def _response() -> Response:
    return Response(id="resp_1", created_at=0, model="m", status="in_progress")


@pytest.mark.parametrize("tool", HOSTED_TOOLS, ids=lambda t: t.name)
def test_a_row_names_the_wire_it_streams(tool: HostedTool) -> None:
    assert tool.item in get_args(Item)
    assert HOSTED_BY_ITEM[tool.item] is tool
    assert all(HOSTED_BY_TYPE[t] is tool for t in tool.types)
    assert tool.types <= tool.choices and all(HOSTED_BY_CHOICE[c] is tool for c in tool.choices)
    for type_ in (*tool.opening, tool.completed):
        fields = set(attrs.fields_dict(CLASS_BY_TYPE[type_]))
        assert fields == {"type", "sequence_number", "output_index", "item_id"}


@pytest.mark.parametrize("tool", HOSTED_TOOLS, ids=lambda t: t.name)
def test_a_call_opens_and_completes_through_the_builders(tool: HostedTool) -> None:
    s = ResponseStream(_response())
    opened = s.begin_hosted(tool, f"{tool.prefix}_1")
    item = s.response.output[0]
    assert isinstance(item, tool.item) and item.status == "in_progress"
    done = attrs.evolve(item, status="completed")
    closed = s.end_hosted(0, done)
    assert [e.type for e in opened] == ["response.output_item.added", *tool.opening]
    assert [e.type for e in closed] == [tool.completed, "response.output_item.done"]
    assert [e.sequence_number for e in [*opened, *closed]] == list(range(len(opened) + 2))
    assert s.response.output == [done]
    wire = codec.to_json(item)
    assert wire["type"] == tool.item_type and not any(k in wire for k in tool.omit_none)
