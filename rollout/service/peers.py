# What the Service asks of the other workers (many workers, a shared store): the cluster layer
# (rollout.service.cluster.Cluster), which sits above the Service and runs what reaches it
# through it. The Service and its sessions consult it only through this protocol.
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import trio

from protocol.errors import ProtocolError
from protocol.items import Item
from rollout.engine.engine import Prepared
from rollout.engine.loop import Sink
from rollout.service.live import Hold


class Peers(Protocol):
    """The other workers, as the service and its sessions consult them: the cluster layer
    (rollout.service.cluster.Cluster), which runs what reaches it through this Service."""

    async def run(self, task_status: trio.TaskStatus[None] = ...) -> None: ...

    async def barrier(self) -> None:
        """Wait until what is queued for the store has been written."""
        ...

    async def claim(self, prepared: Prepared, lane: str | None) -> None: ...

    def forget(self, response_id: str) -> None:
        """Drop the record of a live rollout that never started."""
        ...

    def paused(self, prepared: Prepared) -> None: ...

    def detach(self, holder: object) -> None: ...

    async def deliver(
        self,
        kind: str,
        response_id: str,
        items: Sequence[Item],
        sink_for: Callable[[str | None], Sink],
        *,
        owner: str | None,
        holder: object,
        hold: Hold,
        local: ProtocolError,
        raw: Sequence[Any] = (),
    ) -> dict[str, Any] | None: ...


__all__ = ["Peers"]
