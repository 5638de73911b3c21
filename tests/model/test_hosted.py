# The hosted tools' table of the simulation (rollout.model.hosted.HOSTED) matches the wire's
# (protocol.hosted.HOSTED_TOOLS) row for row, and every part of the server that reads it finds
# each tool: the engine's executors, a script's key, a recording's item.
from __future__ import annotations

import pytest

from protocol.hosted import HOSTED_TOOLS
from protocol.items import ComputerCall, McpApprovalRequest
from rollout.engine.executors import Hosted, client_answered, hosted_tools
from rollout.model.hosted import BY_ITEM_TYPE, BY_NAME, BY_SCRIPT, HOSTED, HostedRow
from rollout.model.hosted.web_search import WebSearchSpec
from rollout.model.policy import CallStep
from rollout.model.profiles import COST_PROFILES
from rollout.model.script import step


def test_the_simulation_runs_every_hosted_tool_of_the_wire() -> None:
    # (An MCP server's tool listing is the server's, made before the model samples.)
    assert [row.spec.tool for row in HOSTED] == [t for t in HOSTED_TOOLS if t.model]
    assert len(BY_NAME) == len(BY_SCRIPT) == len(BY_ITEM_TYPE) == len(HOSTED)
    executors = hosted_tools(COST_PROFILES["service"])
    assert set(executors) == {row.spec for row in HOSTED}
    assert all(isinstance(e, Hosted) for e in executors.values())
    # The calls the client answers go on to the shape's client executor (they pause or end).
    answered = {s.tool.item for s in client_answered()}
    assert answered == {ComputerCall, McpApprovalRequest}
    assert not any(e.scans for e in executors.values())


@pytest.mark.parametrize("row", HOSTED, ids=lambda r: r.name)
def test_a_script_and_a_recording_write_its_calls(row: HostedRow) -> None:
    assert row.script not in {"text", "refusal", "call", "calls", "error", "delay", "name"}
    scripted = step({row.script: "q"})
    assert isinstance(scripted, CallStep) and [type(c) for c in scripted.calls] == [row.spec]
    assert BY_ITEM_TYPE[row.spec.tool.item_type] is row


def test_a_recorded_web_search_is_its_query() -> None:
    item = {"type": "web_search_call", "id": "ws_1", "action": {"type": "search", "query": "q"}}
    assert BY_ITEM_TYPE["web_search_call"].from_item(item) == WebSearchSpec(query="q")
