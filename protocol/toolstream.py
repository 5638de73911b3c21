# The event builders of the client's tools other than functions (protocol.toolitems): a custom
# tool's call streams its input as `response.custom_tool_call_input.delta` events and ends with
# `.done`; a shell call streams each command (`response.shell_call_command.added`, `.delta`,
# `.done`); local shell and apply_patch calls are their `output_item.added` and `.done` alone. A
# mixin of ResponseStream (protocol.stream), which supplies the response and the numbering.
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from protocol.clientitems import ClientCallItem, CustomToolCall, ShellCall
from protocol.deltas import DeltaRun, E, Fields
from protocol.events import (
    CustomInputDeltaEvent,
    CustomInputDoneEvent,
    Event,
    OutputItemEvent,
    ShellCommandDeltaEvent,
    ShellCommandEvent,
)
from protocol.items import Item
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
