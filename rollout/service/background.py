# Background responses (`background: true`, over HTTP): the create returns at once with the
# response `queued`, its run goes on in the service's nursery whatever its client does, and it
# is found again by id: polled (GET: its state now), streamed from any event (its event log,
# rollout.service.eventlog) and cancelled (its loop stops; the response ends `cancelled`). A
# background response is stored as it starts and again at its end, so a server that stops
# before then leaves a record that says so: a durable store settles it as failed when it is
# opened again (store/sqlite.py), another worker once the lease of the one that ran it lapses
# (rollout.service.cluster's sweep, as for a live rollout).
from __future__ import annotations

import logging
from collections.abc import Callable

import attrs
import trio

from protocol import errors
from protocol.response import Response, ResponseError
from protocol.stream import reopen
from rollout.engine.engine import Engine, Prepared
from rollout.engine.executors import EndResponse
from rollout.store.base import STOPPED, UNFINISHED, StoredResponse

log = logging.getLogger("rollout.service.background")


def too_many_background(limit: int) -> errors.ProtocolError:
    message = f"The server runs its limit of {limit} background responses; retry shortly."
    return errors.overloaded(message, "too_many_background_responses")


@attrs.define(eq=False)
class Run:
    """A background response running in this process."""

    prepared: Prepared
    done: trio.Event = attrs.field(factory=trio.Event)

    @property
    def response(self) -> Response:
        return self.prepared.rollout.stream.response

    @property
    def owner(self) -> str | None:
        return self.prepared.owner

    def seen(self) -> Response:
        """Its response as a poll sees it now. An end is shown once it is stored (the engine
        stores it before it sends it): until then the response is `in_progress`, for a store
        that cannot take the end ends it `failed` instead (engine `finish`), and a response a
        client saw end never ends again."""
        response = self.response.snapshot()
        if response.status not in UNFINISHED and not self.prepared.rollout.mailbox.closed:
            reopen(response)
        return response


@attrs.define(eq=False)
class BackgroundRuns:
    """The background responses running in this process, by id."""

    engine: Engine
    limit: int
    runs: dict[str, Run] = attrs.field(factory=dict)
    ended: list[Callable[[Run], None]] = attrs.field(factory=list)  # called at each end
    # Ended runs whose end the store could not take (their record still says `in_progress`):
    # the next read of the record settles it with their end (rollout.service.retrieval).
    unsettled: dict[str, Run] = attrs.field(factory=dict)

    def check_room(self) -> None:
        if len(self.runs) >= self.limit:
            raise too_many_background(self.limit)

    def record(self, prepared: Prepared) -> StoredResponse:
        """The record a background response is stored as while it runs."""
        return StoredResponse(
            response=prepared.rollout.stream.response.snapshot(),
            input_items=prepared.input_items,
            previous_response_id=prepared.request.previous_response_id,
            owner=prepared.owner,
        )

    def start(self, prepared: Prepared, nursery: trio.Nursery) -> Run:
        """Run the prepared (and queued) response to its end in `nursery`."""
        run = self.runs[prepared.rollout.stream.response.id] = Run(prepared)
        nursery.start_soon(self._drive, run)
        return run

    async def _drive(self, run: Run) -> None:
        r = run.prepared.rollout
        try:
            await self.engine.run(run.prepared, EndResponse(), cancel=r.cancel)
        finally:
            self.runs.pop(r.stream.response.id, None)
            try:
                if r.stream.response.status in UNFINISHED:  # stopped from outside (shutdown)
                    with trio.CancelScope(shield=True), trio.move_on_after(5):
                        await self._stopped(run)
                elif run.prepared.unstored is not None:  # its end could not be stored
                    await self._settle(run)
            finally:
                run.done.set()
                for hook in self.ended:
                    hook(run)

    async def _stopped(self, run: Run) -> None:
        response = run.response.snapshot()
        response.status = "failed"
        response.error = ResponseError(code="server_error", message=STOPPED)
        record = self.record(run.prepared)
        record.response = response
        await self.engine.store.put(record)

    async def _settle(self, run: Run) -> None:
        """Its stored record (`in_progress`, from its start) says `failed` with the store's
        error, if the store takes it now; else it is `unsettled` until a read of the record
        settles it (rollout.service.retrieval `record_of`; or the file's next opening)."""
        record = self.record(run.prepared)
        try:
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await self.engine.store.put(record)
        except errors.ProtocolError:  # (its store logged why)
            self.unsettled[run.response.id] = run

    def find(self, response_id: str, owner: str | None) -> Run | None:
        run = self.runs.get(response_id)
        return run if run is not None and run.owner == owner else None

    async def cancel(self, run: Run) -> Response:
        """Stop the run; its response as it ended (`cancelled`, unless it ended first)."""
        run.prepared.rollout.cancel.cancel("cancelled")
        await run.done.wait()
        return run.response


__all__ = ["BackgroundRuns", "Run", "too_many_background"]
