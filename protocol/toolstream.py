# The event builders of the tools other than functions. The client's (protocol.clientitems): a
# custom tool's call streams its input as `response.custom_tool_call_input.delta` events and
# ends with `.done`; a shell call streams each command (`response.shell_call_command.added`,
# `.delta`, `.done`); local shell and apply_patch calls, and a multi-agent response's own items
# (protocol.agentitems), are their `output_item.added` and `.done` alone. The server's
# (protocol.hosted.HOSTED_TOOLS): the events each row names, around its item. Two mixins of
# ResponseStream (protocol.stream), which supplies the response and the numbering.
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from protocol.clientitems import ClientCallItem, CustomToolCall, ShellCall
from protocol.deltas import DeltaRun, E, Fields
from protocol.events import (
    CLASS_BY_TYPE,
    CustomInputDeltaEvent,
    CustomInputDoneEvent,
    Event,
    OutputItemEvent,
    ShellCommandDeltaEvent,
    ShellCommandEvent,
)
from protocol.hosted import HOSTED_BY_ITEM, WEB_SEARCH_TOOL, HostedTool
from protocol.items import HostedItem, Item, WebSearchAction, WebSearchCall
from protocol.response import Response


class ClientToolEvents:
    response: Response

    def _n(self) -> int:
        raise NotImplementedError

    def _item_event(self, type_: str, index: int, item: Item) -> OutputItemEvent:
        raise NotImplementedError

    def _run(self, cls: type[E], fields: Fields, deltas: Sequence[str], plain: bool) -> DeltaRun[E]:
        raise NotImplementedError

    # -- custom tools ---------------------------------------------------------------------------

    def begin_custom(self, item_id: str, call_id: str, name: str) -> list[Event]:
        index = len(self.response.output)
        item = CustomToolCall(id=item_id, call_id=call_id, name=name, input="")
        self.response.output.append(item)
        return [self._item_event("response.output_item.added", index, item)]

    def input_run(
        self, output_index: int, deltas: Sequence[str], plain: bool = False
    ) -> DeltaRun[CustomInputDeltaEvent]:
        item = self.response.output[output_index]
        assert isinstance(item, CustomToolCall)
        fields = (("item_id", item.id or ""), ("output_index", output_index))
        return self._run(CustomInputDeltaEvent, fields, deltas, plain)

    def input_delta(self, output_index: int, delta: str) -> CustomInputDeltaEvent:
        return self.input_run(output_index, (delta,)).events()[0]

    def end_custom(self, output_index: int, text: str, status: str | None = None) -> list[Event]:
        """`.input.done` and `output_item.done` (`status` only when the budget cut it short:
        the SDK's custom tool call has no status of its own)."""
        item = self.response.output[output_index]
        assert isinstance(item, CustomToolCall)
        done = attrs.evolve(item, input=text, status=status)
        self.response.output[output_index] = done
        return [
            CustomInputDoneEvent(
                sequence_number=self._n(),
                item_id=done.id or "",
                output_index=output_index,
                input=text,
            ),
            self._item_event("response.output_item.done", output_index, done),
        ]

    # -- shell, local shell, apply_patch ----------------------------------------------------------

    def whole_item(self, item: Item) -> list[Event]:
        """An item made whole at once (a multi-agent call or its output, an agent message):
        `output_item.added` and `.done`."""
        index = len(self.response.output)
        self.response.output.append(item)
        return [
            self._item_event("response.output_item.added", index, item),
            self._item_event("response.output_item.done", index, self.response.output[index]),
        ]

    def client_call(self, done: ClientCallItem) -> list[Event]:
        """A whole call of a built-in client tool: added in progress, a shell call's commands,
        then done (`done` is the completed item)."""
        index = len(self.response.output)
        opened: Any = attrs.evolve(done, status="in_progress")
        self.response.output.append(opened)
        events: list[Event] = [self._item_event("response.output_item.added", index, opened)]
        if isinstance(done, ShellCall):
            for i, command in enumerate(done.action.commands):
                events += self._command(index, i, command)
        self.response.output[index] = done
        events.append(self._item_event("response.output_item.done", index, done))
        return events

    def _command(self, index: int, i: int, command: str) -> list[Event]:
        return [
            ShellCommandEvent(
                type="response.shell_call_command.added",
                sequence_number=self._n(),
                output_index=index,
                command_index=i,
                command="",
            ),
            ShellCommandDeltaEvent(
                sequence_number=self._n(), output_index=index, command_index=i, delta=command
            ),
            ShellCommandEvent(
                type="response.shell_call_command.done",
                sequence_number=self._n(),
                output_index=index,
                command_index=i,
                command=command,
            ),
        ]


class HostedToolEvents:
    response: Response

    @property
    def next_output_index(self) -> int:
        raise NotImplementedError

    def _n(self) -> int:
        raise NotImplementedError

    def _item_event(self, type_: str, index: int, item: Item) -> OutputItemEvent:
        raise NotImplementedError

    def begin_hosted(
        self, tool: HostedTool, item_id: str, item: HostedItem | None = None
    ) -> list[Event]:
        """`output_item.added` (in progress, no result yet: `item`, else made from `item_id`),
        then the tool's opening events, its streamed text (one delta, its done) and its
        working events."""
        index = self.next_output_index
        if item is None:
            item = tool.item(id=item_id, status="in_progress")  # type: ignore[call-arg]
        self.response.output.append(item)
        events = [
            self._item_event("response.output_item.added", index, item),
            *[self._hosted_event(type_, index, item_id) for type_ in tool.opening],
        ]
        if tool.streamed is not None:
            text = tool.streamed(item)
            delta: Callable[..., Event] = CLASS_BY_TYPE[tool.delta]
            done: Callable[..., Event] = CLASS_BY_TYPE[tool.done]
            common = {"output_index": index, "item_id": item_id}
            if text:
                events.append(
                    delta(type=tool.delta, sequence_number=self._n(), delta=text, **common)
                )
            events.append(
                done(type=tool.done, sequence_number=self._n(), **{tool.done_key: text}, **common)
            )
        events += [self._hosted_event(type_, index, item_id) for type_ in tool.working]
        return events

    def end_hosted(self, output_index: int, done: HostedItem) -> list[Event]:
        """The completed item replaces the one in progress: `completed` (or `failed`),
        `output_item.done`."""
        assert type(self.response.output[output_index]) is type(done)
        tool = HOSTED_BY_ITEM[type(done)]
        self.response.output[output_index] = done
        failed = getattr(done, "status", None) == "failed" or getattr(done, "error", None)
        closing = tool.failed if failed and tool.failed else tool.completed
        return [
            *([self._hosted_event(closing, output_index, done.id or "")] if closing else []),
            self._item_event("response.output_item.done", output_index, done),
        ]

    def begin_web_search(self, item_id: str) -> list[Event]:
        """A web search call opens (`begin_hosted` of the web-search tool)."""
        return self.begin_hosted(WEB_SEARCH_TOOL, item_id)

    def end_web_search(self, output_index: int, action: WebSearchAction) -> list[Event]:
        """The web search call at `output_index` completes with `action`."""
        item = self.response.output[output_index]
        assert isinstance(item, WebSearchCall)
        return self.end_hosted(output_index, attrs.evolve(item, status="completed", action=action))

    def _hosted_event(self, type_: str, index: int, item_id: str) -> Event:
        make: Callable[..., Event] = CLASS_BY_TYPE[type_]
        return make(type=type_, sequence_number=self._n(), output_index=index, item_id=item_id)
