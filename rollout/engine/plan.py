# A prepared create (its pre-inference work done, nothing emitted yet) and its plan: the
# decisions made once before it runs and handed down to every part that acts on them (the
# service, the engine, the live rollouts): its injected faults, whether it samples at all
# (`generate: false` only warms the cache), and whether it runs as a live rollout that pauses
# for the client (the append shape; multi-agent over WebSocket) and announces its pauses.
from __future__ import annotations

import attrs

from protocol.errors import ProtocolError
from protocol.items import Item
from protocol.request import CreateRequest
from rollout.engine.faults import NO_FAULTS, FaultPlan
from rollout.engine.loop import Rollout


@attrs.frozen
class CreatePlan:
    faults: FaultPlan = NO_FAULTS
    samples: bool = True  # False: `generate: false`, state prepared and cached, nothing sampled
    live: bool = False  # a live rollout (rollout.service.live), not one response run to its end
    announces: bool = True  # a live rollout's pauses end with `response.done` (append)

    @classmethod
    def of(
        cls, req: CreateRequest, faults: FaultPlan = NO_FAULTS, *, held: bool = False
    ) -> CreatePlan:
        """The plan of `req`. `held`: its client holds it until it ends (a WebSocket lane), so
        a multi-agent response waits for `response.inject` there as a live rollout that does
        not announce its waits (over HTTP it completes when it waits for client calls)."""
        multi_agent = bool(req.waits_for_inject) and held
        return cls(
            faults=faults,
            samples=req.generate is not False,
            live=req.shape == "append" or multi_agent,
            announces=not multi_agent,
        )

    def refusal(self) -> Exception | None:
        """The injected refusal of a create that samples, raised before any event."""
        return self.faults.refusal() if self.samples else None


@attrs.define
class Prepared:
    """A request that passed pre-inference work: ready to run, nothing emitted yet."""

    request: CreateRequest
    rollout: Rollout
    input_items: list[Item]
    owner: str | None = None  # the API key of the request, when keys are configured
    plan: CreatePlan | None = None  # its decisions, once made (Engine.plan_of)
    # Why storing its end failed (a StoreError, or Redis's 503): it ended `failed` with this,
    # and a JSON create answers with it (Engine.finish).
    unstored: ProtocolError | None = None
